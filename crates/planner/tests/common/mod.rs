//! Helpers the post-training tests share (dpo.rs, grpo.rs); each test
//! binary uses some of them.
#![allow(dead_code)]

use planner::estimate::report::Report;
use planner::model::memory::Term;
use planner::model::plan::Plan;

/// The report of a link that must read without a notice.
pub fn report(q: &str) -> Report {
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
    planner::estimate::evaluate::evaluate(&d.plan)
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

/// The report's export note `code` (what the launch bundle does not run),
/// if it has one; such a plan keeps its figures and has no error of it.
pub fn note<'a>(r: &'a Report, code: &str) -> Option<&'a planner::text::Message> {
    assert!(
        r.errors.iter().all(|e| e.code() != code),
        "{code} is a note on the export, not an error"
    );
    r.export_notes.iter().find(|e| e.code() == code)
}
