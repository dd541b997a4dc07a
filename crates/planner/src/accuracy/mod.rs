//! How far the model is from real runs: the published and measured rows,
//! the calibration fitted on them, the coverage and envelope a label may
//! promise, and the generated accuracy docs.

pub mod b200_runs;
pub mod calibration;
pub mod case;
pub mod coverage;
pub mod docs;
pub mod envelope;
pub mod memory_checks;
pub mod model_tables;
pub mod published;
pub mod readme;
pub mod sequence_bands;
pub mod summary;
