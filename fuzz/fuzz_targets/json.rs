//! planner::json never panics, and reads what serde_json reads.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let ours = planner::json::parse(text);
    let theirs = serde_json::from_str::<serde_json::Value>(text);
    assert_eq!(ours.is_ok(), theirs.is_ok(), "{text:?}: {ours:?} vs {theirs:?}");
    if let Ok(v) = ours {
        // What Display writes reads back as the same value.
        assert_eq!(planner::json::parse(&v.to_string()), Ok(v));
    }
});
