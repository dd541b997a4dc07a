//! planner::decimal never panics, and reads what `str::parse::<f64>` reads, to the bit.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let ours = planner::decimal::parse_f64(text);
    let std = text.parse::<f64>().ok();
    match (ours, std) {
        (Some(a), Some(b)) if a.is_nan() && b.is_nan() => {}
        (Some(a), Some(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{text:?}"),
        (a, b) => assert_eq!(a, b, "{text:?}"),
    }
});
