//! `wasm-bindgen-test-runner`: the test runner of wasm-bindgen-cli's library, unchanged.
fn main() -> anyhow::Result<()> {
    env_logger::init();
    wasm_bindgen_cli::wasm_bindgen_test_runner::run_cli_with_args(std::env::args_os())
}
