//! #59: the README's accuracy section is generated (`plan calibrate
//! --readme`), never typed: this test fails when a figure in it falls out of
//! date, and `UPDATE_DOCS=1 cargo test -p planner --test readme` rewrites it.

use planner::accuracy::readme::{BEGIN, END};
use planner::runs::readme::accuracy_section;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");

#[test]
fn the_readme_accuracy_section_is_the_generated_one() {
    let readme = std::fs::read_to_string(README).expect("README.md");
    let (Some(start), Some(end)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md has no generated accuracy section between its marks");
    };
    let current = &readme[start..end + END.len()];
    let generated = accuracy_section();
    if current != generated && std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!(
            "{}{generated}{}",
            &readme[..start],
            &readme[end + END.len()..]
        );
        std::fs::write(README, updated).expect("README.md written");
        return;
    }
    assert_eq!(
        current, generated,
        "README.md's accuracy section is stale: UPDATE_DOCS=1 cargo test -p planner --test readme"
    );
}

/// The section carries the figures the page's labels quote, from the same
/// computation: the cross-validated throughput median of data/coverage.json.
#[test]
fn the_section_quotes_the_shipped_coverage() {
    let shipped: serde_json::Value =
        serde_json::from_str(planner::accuracy::coverage::COVERAGE_JSON).expect("coverage.json");
    let cv = shipped["throughput"]["cv_median"]
        .as_f64()
        .expect("cv_median");
    let rows = shipped["throughput"]["rows"].as_u64().expect("rows");
    let section = accuracy_section();
    assert!(section.contains(&format!("checked against {rows} published runs")));
    assert!(section.contains(&format!("cross-validated median error {cv:.1}%")));
}
