//! Reading and writing the formats the planner meets: decimal numbers as
//! people type them, JSON (config.json, shared data), CSV tables, and the
//! zip archive of the launch bundle. Nothing here knows about training.

pub mod decimal;
pub mod json;
pub mod json_writer;
pub mod table;
pub mod zip;
