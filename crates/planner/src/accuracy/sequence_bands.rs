//! The cross-validated throughput error per stack and per sequence band
//! (#35): a model right on average can still be biased at long sequences,
//! where attention is most of the step, so each band's *signed* median is
//! reported beside the absolute one, and docs/accuracy.md prints both.

use crate::model::plan::Stack;

/// One published run's cross-validated error: its stack, sequence and
/// signed error, percent.
#[derive(Clone, Copy, Debug)]
pub struct RowError {
    pub stack: Stack,
    pub seq: u64,
    pub percent: f64,
}

/// Sequence lengths the bands split at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Band {
    /// Up to 2,048 tokens.
    Short,
    /// 4,096 to 8,192.
    Medium,
    /// 16,384 to 32,768.
    Long,
    /// 65,536 and more.
    VeryLong,
}

impl Band {
    pub const ALL: [Band; 4] = [Band::Short, Band::Medium, Band::Long, Band::VeryLong];

    pub fn of(seq: u64) -> Band {
        match seq {
            0..=2048 => Band::Short,
            2049..=8192 => Band::Medium,
            8193..=32768 => Band::Long,
            _ => Band::VeryLong,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Band::Short => "≤ 2K",
            Band::Medium => "4–8K",
            Band::Long => "16–32K",
            Band::VeryLong => "64K+",
        }
    }
}

/// Errors of a set of rows: how many, the median absolute and signed
/// cross-validated error, percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Errors {
    pub rows: usize,
    pub median_abs: f64,
    pub median_signed: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The cross-validated errors of the rows `keep` selects.
pub fn errors(rows: &[RowError], keep: impl Fn(&RowError) -> bool) -> Errors {
    let e: Vec<f64> = rows.iter().filter(|r| keep(r)).map(|r| r.percent).collect();
    Errors {
        rows: e.len(),
        median_abs: median(e.iter().map(|x| x.abs()).collect()),
        median_signed: median(e),
    }
}

fn line(label: &str, band: &str, e: &Errors) -> String {
    format!(
        "| {label} | {band} | {} | {:.1}% | {:+.1}% |\n",
        e.rows, e.median_abs, e.median_signed
    )
}

/// The stack's short name (the README's sentence).
pub fn stack_short_name(s: Stack) -> &'static str {
    match s {
        Stack::Megatron => "Megatron",
        Stack::Torchtitan => "PyTorch FSDP2",
        Stack::Hf => "Hugging Face",
    }
}

/// The stack name docs use.
pub fn stack_name(s: Stack) -> &'static str {
    match s {
        Stack::Megatron => "Megatron",
        Stack::Torchtitan => "PyTorch FSDP2 (torchtitan, OLMo-core, NeMo AutoModel)",
        Stack::Hf => "Hugging Face Trainer",
    }
}

/// docs/accuracy.md's per-stack and per-band tables.
pub fn markdown(rows: &[RowError]) -> String {
    let mut s = String::from(
        "\n#### By stack and sequence band\n\n\
         Cross-validated (leave-one-model-out), as every figure here: the median of the \
         absolute error, and the signed median (positive: the planner is too fast).\n\n\
         | stack | sequence | rows | median | signed median |\n|---|---|---:|---:|---:|\n",
    );
    for stack in [Stack::Megatron, Stack::Torchtitan, Stack::Hf] {
        let of_stack = |r: &RowError| r.stack == stack;
        s += &line(stack_name(stack), "all", &errors(rows, of_stack));
        for band in Band::ALL {
            let e = errors(rows, |r| of_stack(r) && Band::of(r.seq) == band);
            if e.rows > 0 {
                s += &line("", band.name(), &e);
            }
        }
    }
    for band in Band::ALL {
        s += &line(
            "every stack",
            band.name(),
            &errors(rows, |r| Band::of(r.seq) == band),
        );
    }
    s
}
