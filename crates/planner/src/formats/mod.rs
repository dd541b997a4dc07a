//! Reading and writing the formats the planner meets: decimal numbers as
//! people type them, JSON (config.json, shared data), tab-separated fields (between the page
//! and its worker), CSV tables, and the
//! zip archive of the launch bundle. Nothing here knows about training.

pub mod decimal;
pub mod fields;
pub mod json;
pub mod json_writer;
pub mod table;
pub mod zip;
