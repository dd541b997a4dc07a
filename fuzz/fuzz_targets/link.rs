//! Any shared link (a hand-edited or truncated query string) decodes, is
//! evaluated and re-encoded without a panic, as the page and the CLI do.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|query: &str| {
    let decoded = planner::Plan::from_query(query);
    let report = planner::evaluate(&decoded.plan);
    let again = planner::Plan::from_query(&decoded.plan.to_query());
    assert_eq!(again.plan, decoded.plan, "{query:?}");
    let _ = report.fits;
});
