//! The `plan` CLI: `plan report '<URL or query>'` prints the JSON report of SPEC §8.

use std::process::Command;

fn plan(args: &[&str]) -> (String, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_plan"))
        .args(args)
        .output()
        .expect("runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn report_has_the_spec_fields() {
    let (out, _, ok) = plan(&[
        "report",
        "https://example.test/?model=llama-3.1-8b&seq=8192&mb=1",
    ]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    // Llama-3.1-8B = 8,030,261,248 parameters (SPEC §3.1).
    assert_eq!(v["parameters"], 8_030_261_248u64);
    assert_eq!(v["parameters_active"], 8_030_261_248u64);
    let m = &v["memory"];
    let peak = m["peak_bytes_per_gpu"].as_u64().unwrap();
    let alloc = m["allocated_peak_bytes"].as_u64().unwrap();
    assert!(alloc < peak);
    let terms = m["terms"].as_object().unwrap();
    let sum: u64 = terms.values().map(|b| b.as_u64().unwrap()).sum();
    assert_eq!(sum, peak, "terms add up to the peak");
    for key in [
        "weights",
        "optimizer_states",
        "activations",
        "logits_and_loss",
        "cuda_context",
        "workspaces",
        "fragmentation",
    ] {
        assert!(terms.contains_key(key), "term {key}");
    }
    assert!(v["fits"].is_boolean());
    assert!(v["warnings"].is_array() && v["errors"].is_array());
}

#[test]
fn bad_values_are_named_and_nothing_panics() {
    let (out, err, ok) = plan(&["report", "seq=abc&model=gpt-9&zzz=1&mb=2"]);
    assert!(ok, "a bad link still gives a report");
    assert!(
        err.contains("`seq`") && err.contains("`model`") && err.contains("`zzz`"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["notices"].as_array().unwrap().len(), 3);
    assert!(
        v["query"].as_str().unwrap().contains("mb=2"),
        "good keys kept"
    );
}

#[test]
fn usage_errors_exit_nonzero() {
    let (_, err, ok) = plan(&["frobnicate", "x"]);
    assert!(!ok && err.contains("usage"));
}

/// A reader that goes away (`plan search ... | head -1`) ends the CLI quietly:
/// exit 0, no panic, no backtrace. The pipe is closed before the program
/// writes, so every write meets a broken pipe.
#[test]
fn closed_pipe_exits_quietly() {
    for args in [
        &["report", ""][..],
        &["search", ""],
        &["calibrate"],
        &["export", "", "--format", "pytorch"],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_plan"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("waits");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
