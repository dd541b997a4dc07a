//! The page's panels: the inputs, the results and their charts, the
//! auto-plan, the comparison, the export and the measured run. Each reads
//! and writes the shared state in `ctx`.

pub mod autoplan;
pub mod charts;
pub mod compare;
pub mod export;
pub mod inputs;
pub mod live;
pub mod measured;
pub mod results;
pub mod summary;
