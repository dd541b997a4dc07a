//! Helpers the post-training tests share (dpo.rs, grpo.rs).

use planner::memory::Term;
use planner::plan::Plan;
use planner::report::Report;

/// The report of a link that must read without a notice.
pub fn report(q: &str) -> Report {
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    planner::evaluate::evaluate(&d.plan)
}

/// One term of the peak's breakdown, bytes (0 when absent).
pub fn term(r: &Report, t: Term) -> u64 {
    r.figures
        .memory
        .terms
        .iter()
        .filter(|(x, _)| *x == t)
        .map(|(_, b)| *b)
        .sum()
}

/// The report's error `code`, if it has one.
pub fn error<'a>(r: &'a Report, code: &str) -> Option<&'a planner::text::Message> {
    r.errors.iter().find(|e| e.code() == code)
}
