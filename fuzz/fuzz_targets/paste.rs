//! Pasted text (a config.json, a measured line) is read or refused, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = planner::architecture::from_hf_config(text);
    let _ = planner::measured::parse(text);
});
