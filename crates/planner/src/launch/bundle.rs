//! The launch bundle of a plan: `launch.py`, the training script it names,
//! the script's pinned requirements and a README with the prediction.
//!
//! The training script itself (`bundle/train.py` and the modules it imports)
//! is the same for every plan: the launcher's hyperparameters carry the plan
//! into it. The CLI embeds it; the page fetches it on demand, so it never
//! weighs on the page's wasm.

use crate::estimate::evaluate::evaluate;
use crate::estimate::report::{Report, Verdict};
pub use crate::launch::export::entry_path;
use crate::launch::export::{export_of, hyperparameter_items, sdk_packages, Format, TRIAL_STEPS};
use crate::model::plan::{Optimizer, Plan, Precision, Training};
use std::fmt::Write;

/// Versions the bundle's script is tested with in CI (tests/bundle), the
/// ones of the SDK's newest Hugging Face image (data/sdk.json).
pub const TRANSFORMERS: &str = "transformers==4.56.2";
pub const PEFT: &str = "peft==0.17.1";
pub const BITSANDBYTES: &str = "bitsandbytes==0.50.2";
/// torchao's release built against PyTorch 2.8 (its FP8 and MXFP8 training).
pub const TORCHAO: &str = "torchao==0.13.0";
/// GRPO plans' grpo.py: TRL's GRPOTrainer (tests/trl), and the vLLM its
/// `vllm` extra pins (0.10.2, built against PyTorch 2.8).
pub const TRL: &str = "trl==0.24.0";
pub const VLLM: &str = "vllm==0.10.2";

/// The line a finished run prints, which `measured::parse` reads back.
pub const MEASURED_TAG: &str = "TRAIN_PLANNER_MEASURED";

/// One file of the bundle: its path inside the bundle and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub text: String,
}

/// The launcher formats a bundle can carry (TrainingArguments is not a launcher).
pub fn launchers() -> [Format; 3] {
    [Format::Pytorch, Format::Huggingface, Format::ModelTrainer]
}

/// train.py and the modules it imports, shipped beside it (one idea each:
/// the plan's arguments and setup, the model, the data and loss, the
/// checkpoints; #59).
pub const TRAIN_PY_FILES: [&str; 5] = [
    "train.py",
    "train_plan.py",
    "train_model.py",
    "train_data.py",
    "train_checkpoints.py",
];

/// Joins the scripts' texts where they travel as one (the page to its
/// worker): the ASCII file separator, never in a script.
pub const SCRIPT_SEPARATOR: char = '\u{1c}';

/// The static script a plan's bundle carries, by its name under
/// `crates/planner/bundle/` (and the site's `bundle/`): the Hugging Face
/// stack's `train.py`, or a Megatron plan's Megatron-Bridge launcher.
pub fn script_name(plan: &Plan) -> &'static str {
    script_names(plan)[0]
}

/// Every static script the bundle carries: `script_name` first, then the
/// modules it imports.
pub fn script_names(plan: &Plan) -> &'static [&'static str] {
    if megatron_bundle(plan) {
        &[crate::launch::megatron_bridge::SCRIPT]
    } else if plan.engine() == crate::model::plan::Engine::Grpo {
        &[crate::model::plan::GRPO_SCRIPT]
    } else {
        &TRAIN_PY_FILES
    }
}

/// A Megatron plan launched by the bundle's own launcher (not the user's).
fn megatron_bundle(plan: &Plan) -> bool {
    plan.engine() == crate::model::plan::Engine::MegatronBridge
}

/// The bundle's files, in a fixed order. `scripts` are the texts of the
/// static scripts `script_names(plan)` names, in its order.
pub fn files(plan: &Plan, launcher: Format, scripts: &[&str]) -> Vec<File> {
    files_of(plan, &evaluate(plan), launcher, scripts)
}

/// As `files`, from the plan's report (the page's: its download evaluates
/// nothing again, #34).
pub fn files_of(plan: &Plan, report: &Report, launcher: Format, scripts: &[&str]) -> Vec<File> {
    let entry = entry_path(plan);
    let mut files = vec![
        File {
            path: "README.md".into(),
            text: readme(plan, report, launcher, &entry),
        },
        File {
            path: "launch.py".into(),
            text: export_of(plan, report, launcher).code,
        },
    ];
    // The entry under the plan's name for it, the modules beside it.
    let dir = entry
        .rsplit_once('/')
        .map_or(String::new(), |(d, _)| format!("{d}/"));
    for (i, (name, text)) in script_names(plan).iter().zip(scripts).enumerate() {
        files.push(File {
            path: match i {
                0 => format!("scripts/{entry}"),
                _ => format!("scripts/{dir}{name}"),
            },
            text: text.to_string(),
        });
    }
    if megatron_bundle(plan) {
        files.push(File {
            path: format!("scripts/{}", crate::launch::megatron_bridge::SETTINGS_FILE),
            text: crate::launch::megatron_bridge::settings_text(plan, report),
        });
    } else {
        files.push(File {
            path: "scripts/requirements.txt".into(),
            text: requirements(plan, launcher),
        });
    }
    files
}

/// The bundle as one ZIP archive (what the page downloads and `--out x.zip` writes).
pub fn zip(files: &[File]) -> Vec<u8> {
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|f| (f.path.as_str(), f.text.as_bytes()))
        .collect();
    crate::formats::zip::archive(&entries)
}

/// What the image lacks, pinned: transformers on the PyTorch images, PEFT for
/// adapters, bitsandbytes for 4-bit bases and 8-bit AdamW, torchao for FP8.
pub fn requirements(plan: &Plan, launcher: Format) -> String {
    let mut lines =
        vec!["# Installed by SageMaker before the script starts; the versions CI trains with."];
    if launcher != Format::Huggingface {
        lines.push(TRANSFORMERS);
    }
    if plan.training.train != Training::Full {
        lines.push(PEFT);
    }
    if plan.training.train == Training::Qlora || plan.training.optimizer == Optimizer::Adamw8bit {
        lines.push(BITSANDBYTES);
    }
    if matches!(plan.numerics.precision, Precision::Fp8 | Precision::Mxfp8) {
        lines.push(TORCHAO);
    }
    if plan.training.stage.generates() {
        lines.extend([TRL, VLLM]);
    }
    lines.join("\n") + "\n"
}

fn readme(plan: &Plan, r: &Report, launcher: Format, entry: &str) -> String {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mut s = String::new();
    let name = r.model_name.english();
    let _ = writeln!(s, "# {name} on {} x {}\n", plan.hardware.nodes, r.instance);
    let _ = writeln!(
        s,
        "Generated by Train Planner for the plan `?{}`.\n",
        plan.to_query()
    );
    s.push_str("## What the planner predicted\n\n");
    let _ = writeln!(s, "| | predicted |\n|---|---|");
    let _ = writeln!(
        s,
        "| memory per GPU | {:.1} GiB of a {:.1} GiB budget ({}) |",
        gib(r.memory.peak_bytes_per_gpu),
        gib(r.memory.budget_bytes),
        r.verdict.key().replace('_', " ")
    );
    let _ = writeln!(
        s,
        "| speed | {:.0} tokens/s per GPU, MFU {:.0}% |",
        r.throughput.tokens_per_second_per_gpu,
        r.throughput.mfu * 100.0
    );
    let _ = writeln!(s, "| step time | {:.2} s |", r.throughput.step_seconds);
    let _ = writeln!(
        s,
        "| time | {:.1} h for {} steps |",
        r.time.total_hours, r.time.steps
    );
    let _ = writeln!(s, "| cost | {} |\n", crate::launch::export::cost_words(r));
    if r.verdict == Verdict::Tight {
        s.push_str(&part("tight", &[]));
    } else if !r.fits {
        s.push_str(&part("does-not-fit", &[]));
    }
    if megatron_bundle(plan) {
        s.push_str(&megatron_readme(launcher, entry));
        return s;
    }
    let _ = writeln!(s, "{}", run_steps(launcher, entry, plan.training.stage));
    s.push_str(&part(
        if plan.engine() == crate::model::plan::Engine::Grpo {
            "grpo-support"
        } else {
            "support"
        },
        &[],
    ));
    s.push_str("\n## Hyperparameters\n\nEach one carries a planner setting into the script:\n\n");
    for (k, v) in hyperparameter_items(plan, r) {
        if k != "plan" {
            let _ = writeln!(s, "- `{k}` = `{}`", v.trim_matches('"'));
        }
    }
    s
}

/// The SageMaker SDK package a launcher format needs (v3 for ModelTrainer).
fn sdk_package(launcher: Format) -> &'static str {
    let (sdk_v2, sdk_v3) = sdk_packages();
    if launcher == Format::ModelTrainer {
        sdk_v3
    } else {
        sdk_v2
    }
}

fn run_steps(launcher: Format, entry: &str, stage: crate::model::plan::TrainingStage) -> String {
    let data = part(
        match stage {
            crate::model::plan::TrainingStage::Sft => "data-sft",
            crate::model::plan::TrainingStage::Dpo => "data-dpo",
            crate::model::plan::TrainingStage::Grpo => "data-grpo",
        },
        &[],
    );
    let trial = TRIAL_STEPS.to_string();
    part(
        "run",
        &[
            ("sdk", sdk_package(launcher)),
            ("data", &data),
            ("TRIAL_STEPS", &trial),
            ("MEASURED_TAG", MEASURED_TAG),
            ("entry", entry),
        ],
    )
}

/// How a Megatron plan's bundle runs, and what was proven where.
fn megatron_readme(launcher: Format, entry: &str) -> String {
    let trial = TRIAL_STEPS.to_string();
    part(
        "megatron",
        &[
            ("entry", entry),
            ("settings", crate::launch::megatron_bridge::SETTINGS_FILE),
            ("sdk", sdk_package(launcher)),
            ("TRIAL_STEPS", &trial),
        ],
    )
}

/// The README's static sections (`bundle/README.parts.md`), as the CLI and
/// the tests compile them in (feature `bundled-readme`). The page leaves
/// them out and fetches them with the script when it builds a bundle
/// (`load_readme_parts`): only a download reads them.
#[cfg(feature = "bundled-readme")]
pub const README_PARTS: &str = include_str!("../../bundle/README.parts.md");

/// Where the page finds the README's sections.
pub const README_PARTS_URL: &str = "bundle/README.parts.md";

static PARTS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Keep the README's sections as the page fetched them.
pub fn load_readme_parts(file: String) {
    let _ = PARTS.set(file);
}

/// Whether the README's sections are at hand (always where compiled in).
pub fn readme_parts_loaded() -> bool {
    cfg!(feature = "bundled-readme") || PARTS.get().is_some()
}

fn parts() -> &'static str {
    #[cfg(feature = "bundled-readme")]
    return README_PARTS;
    #[allow(unreachable_code)]
    PARTS.get().map_or("", String::as_str)
}

/// The section `name` of the README's parts, each `{key}` in it replaced
/// by its value (values are the planner's own: no braces in them).
fn part(name: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(section(parts(), name).to_string(), |text, (key, value)| {
            text.replace(&format!("{{{key}}}"), value)
        })
}

/// A section of the parts file: from its `@@ name` line to the next such
/// line, less the one line break before it.
fn section<'a>(file: &'a str, name: &str) -> &'a str {
    let head = format!("\n@@ {name}\n");
    let Some(start) = file.find(&head) else {
        return "";
    };
    let body = &file[start + head.len()..];
    let end = body.find("\n@@ ").map_or(body.len(), |e| e + 1);
    body[..end].strip_suffix('\n').unwrap_or(&body[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every section the README reads is in the parts file, whole, and
    /// every placeholder it carries is filled.
    #[test]
    fn readme_parts_are_all_there_and_filled() {
        let names = [
            "tight",
            "does-not-fit",
            "run",
            "data-sft",
            "data-dpo",
            "data-grpo",
            "support",
            "grpo-support",
            "megatron",
        ];
        for name in names {
            let text = section(README_PARTS, name);
            assert!(text.len() > 40 && !text.contains("@@ "), "{name}");
        }
        assert_eq!(section(README_PARTS, "nonexistent"), "");
        // The data part of a DPO plan's run steps ends where it did inline.
        assert!(section(README_PARTS, "data-dpo").ends_with("are scored."));
        for q in [
            "model=llama-3.1-8b&stage=dpo",
            "model=llama-3.1-8b&stack=megatron",
            "model=llama-3.1-70b&instance=ml.g5.2xlarge",
        ] {
            let plan = Plan::from_query(q).plan;
            let readme = &files(&plan, Format::Pytorch, &[])[0].text;
            for key in [
                "{sdk}",
                "{data}",
                "{entry}",
                "{TRIAL_STEPS}",
                "{MEASURED_TAG}",
                "{settings}",
            ] {
                assert!(!readme.contains(key), "{q}: {key} left in the README");
            }
        }
    }
}
