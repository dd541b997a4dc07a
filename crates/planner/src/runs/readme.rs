//! The README's accuracy section as a whole: the model's checks
//! (`accuracy::readme`) and the published post-training runs
//! (`post_training::readme_line`), between the marks tests/readme.rs finds.

use crate::accuracy::readme::{readme_accuracy, BEGIN, END};
use crate::accuracy::summary::{compute, throughput_rows};
use crate::runs::post_training::{readme_line, rows};

/// The section, marks included (`plan calibrate --readme`).
pub fn accuracy_section() -> String {
    format!(
        "{BEGIN}\n{}\n{}\n{END}",
        readme_accuracy(&compute(), &throughput_rows()),
        readme_line(&rows())
    )
}
