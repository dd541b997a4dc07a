//! The answer for one plan (the report: memory, speed, cost, labels,
//! warnings, what the bundle does not cover) and the auto-plan search over
//! many.

pub mod compare;
pub mod evaluate;
pub mod labels;
pub mod launchers;
pub mod report;
pub mod search;
pub mod warnings;
