// The launch-code worker's loader (src/code_worker.rs starts it): its
// wasm-bindgen glue, then its wasm, whose main() starts listening.
importScripts("./export_worker.js");
wasm_bindgen("./export_worker_bg.wasm");
