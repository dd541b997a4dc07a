//! docs/accuracy.md's generated part and the README's sentence of errors
//! (`plan calibrate --markdown`): the tables of every throughput row, group,
//! stack and sequence band, the labels' groups, the rows left out, and the
//! memory checks.

use crate::accuracy::b200_runs::{b200_memory_rows, b200_step_rows, step_stats};
use crate::accuracy::coverage::{median, Coverage, GroupStats, MemoryStats};
use crate::accuracy::memory_checks::{
    gpu_memory_rows, is_whole_model, megatron_memory_rows, memory_stats, off_path_gpu_memory_rows,
    oracle_heldout_rows, oracle_real_size_rows, out_of_sample_gpu_memory, torchtitan_memory_rows,
    MemoryRow, IN_SAMPLE_GPU_MEMORY_ROWS,
};
use crate::accuracy::summary::{stats_by, ThroughputRow};

/// The Megatron-LM CI rows for docs/accuracy.md: the summary, then row by row.
fn megatron_markdown(st: &MemoryStats) -> String {
    let s = format!(
        "\n#### Memory against Megatron-LM's own CI runs\n\nThe Megatron stack's plans against the `mem-max-allocated-bytes` that Megatron-LM's functional tests log on their last rank (data/megatron_ci_memory.csv, from the golden values at NVIDIA/Megatron-LM@d98e8a6), compared with the planner's last pipeline stage; no memory parameter is fitted on them. {} rows: median {:.1}%, from {} to {}.\n\n| run | measured GiB | predicted GiB | error |\n|---|---:|---:|---:|\n",
        st.rows,
        st.median,
        pct(st.under),
        pct(st.over)
    );
    s + &rows_table(&megatron_memory_rows(), 1.0, pct)
}

/// The real 8 x B200 Megatron-LM runs for docs/accuracy.md: memory and step
/// time, row by row, with SimuMax's prediction of the same step beside ours.
fn b200_markdown() -> String {
    let mem = b200_memory_rows();
    let st = memory_stats(&mem);
    let steps = b200_step_rows();
    let ours = step_stats(&steps).median;
    let simumax = median(
        steps
            .iter()
            .map(|r| (100.0 * (r.simumax_ms - r.measured_ms) / r.measured_ms).abs())
            .collect(),
    );
    let mut s = format!(
        "\n#### Real Megatron-LM runs on 8 x B200\n\n{} BF16 runs of Llama 3 70B (12 layers) and 405B (4 layers) on one 8 x B200 node (data/b200_megatron_real.csv, from SimuMax's B200 release: Megatron-LM 23e00ed0, TE 2.11), planned as their launcher ran them; no parameter is fitted on them (Blackwell's exposed tensor-parallel backward, `tp_hidden` 0, set from SimuMax's finding, is the one setting they are in-sample for). Their context-parallel runs used all-to-all attention (`--cp-comm-type a2a`), planned as the ring. Memory (`max_memory_allocated` against the fullest stage): median {:.1}%, from {} to {}. Step time: median {:.1}% (SimuMax on the same runs: {:.1}%).\n\n| run | measured GiB | predicted GiB | error | measured ms | predicted ms | error | SimuMax ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
        mem.len(),
        st.median,
        pct(st.under),
        pct(st.over),
        ours,
        simumax
    );
    for (m, t) in mem.iter().zip(&steps) {
        s += &format!(
            "| {} | {:.2} | {:.2} | {} | {:.0} | {:.0} | {} | {:.0} |\n",
            m.label,
            m.measured,
            m.predicted,
            pct(m.error_percent),
            t.measured_ms,
            t.predicted_ms,
            pct(t.error_percent),
            t.simumax_ms
        );
    }
    s
}

/// Measured and predicted, one row per line (`| label | measured |
/// predicted | error |`), figures divided by `per_gib` to GiB.
fn rows_table(rows: &[MemoryRow], per_gib: f64, error: fn(f64) -> String) -> String {
    rows.iter()
        .map(|r| {
            format!(
                "| {} | {:.2} | {:.2} | {} |\n",
                r.label,
                r.measured / per_gib,
                r.predicted / per_gib,
                error(r.error_percent)
            )
        })
        .collect()
}

// ---- the docs' tables --------------------------------------------------------------

/// The README's sentence of cross-validated medians per GPU generation and per stack.
pub fn readme_groups(rows: &[ThroughputRow]) -> String {
    let part =
        |name: String, g: &GroupStats| format!("{name} {:.1}% (n = {})", g.cv_median, g.rows);
    let gens: Vec<String> = stats_by(rows, |g| g.generation)
        .iter()
        .map(|(k, g)| part(format!("{k:?}"), g))
        .collect();
    let stacks: Vec<String> = stats_by(rows, |g| g.stack)
        .iter()
        .map(|(k, g)| {
            part(
                crate::accuracy::sequence_bands::stack_short_name(*k).into(),
                g,
            )
        })
        .collect();
    let kinds: Vec<String> = stats_by(rows, |g| g.moe)
        .iter()
        .map(|(moe, g)| part(if *moe { "MoE" } else { "dense" }.into(), g))
        .collect();
    format!(
        "Cross-validated median error by GPU generation: {}; by stack: {}; by model: {}.",
        gens.join(", "),
        stacks.join(", "),
        kinds.join(", ")
    )
}

/// A signed percentage to a tenth (`+4.2%`).
pub(crate) fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

fn summary_table<K>(
    title: &str,
    head: &str,
    rows: &[(K, GroupStats)],
    name: impl Fn(&K) -> String,
) -> String {
    let mut s = format!("\n#### {title}\n\n| {head} | rows | cross-validated median | worst | in-sample median |\n|---|---:|---:|---:|---:|\n");
    for (k, g) in rows {
        s += &format!(
            "| {} | {} | {:.1}% | {} | {:.1}% |\n",
            name(k),
            g.rows,
            g.cv_median,
            pct(g.cv_worst),
            g.in_sample_median
        );
    }
    s
}

/// Cross-validation by held-out group: each generation, stack and scale
/// band predicted by what the others fit (calibration/held_out.rs).
fn held_out_markdown() -> String {
    use crate::accuracy::calibration::{held_out, HeldOut};
    let mut s = String::from("\n#### Held out by group\n\nEvery row of one group left out of the fit at once and predicted by what the other groups' rows fit: of its own generation where the other groups have some, else (a generation held out) on all of them, each efficiency a share of its own GPU's peak. Leaving out one model at a time, above, still lets a row's generation, stack and scale vouch for it; these say how far the fit carries to a kind of run it has not seen. A generation held out is predicted from the others' efficiencies, which do not carry (each generation's GEMM efficiency is its own), except where a GPU's BF16 GEMM efficiency is measured on the GPU (A100, B200: `Gpu::bf16_gemm_measured`), which no fold moves: Ampere's rows are predicted by no fitted GEMM constant at all. No published row ran on more than 1,024 GPUs, and the 9 Hugging Face-stack rows, fitted apart (`hf_cases`), are not in these folds.\n\n| held out | group | rows | median | worst under | worst over |\n|---|---|---:|---:|---:|---:|\n");
    for (by, what) in [
        (HeldOut::Generation, "generation"),
        (HeldOut::Stack, "stack"),
        (HeldOut::Scale, "scale"),
    ] {
        for g in held_out(by) {
            let (under, over) = g.under_over();
            s += &format!(
                "| {what} | {} | {} | {:.1}% | {} | {} |\n",
                g.name,
                g.predictions.len(),
                g.median(),
                pct(under),
                pct(over)
            );
        }
    }
    s
}

/// Each row's stack, sequence and cross-validated error (sequence_bands.rs).
pub fn row_errors(rows: &[ThroughputRow]) -> Vec<crate::accuracy::sequence_bands::RowError> {
    rows.iter()
        .map(|r| crate::accuracy::sequence_bands::RowError {
            stack: r.group.stack,
            seq: r.point.seq.0,
            percent: r.cross_validated_percent,
        })
        .collect()
}

/// docs/accuracy.md's generated part (`plan calibrate --markdown`).
pub fn markdown(c: &Coverage, rows: &[ThroughputRow]) -> String {
    let mut s = String::from("| row | group | measured tok/s/GPU | in-sample | cross-validated |\n|---|---|---:|---:|---:|\n");
    for r in rows {
        s += &format!(
            "| {} | {} | {:.0} | {} | {} |\n",
            r.id,
            r.group.name(),
            r.measured,
            pct(r.in_sample_percent),
            pct(r.cross_validated_percent)
        );
    }
    let t = &c.throughput;
    s += &format!(
        "\nrows: {}  cross-validated median |error|: {:.1}%  worst: {}  (in-sample median {:.1}%)\n",
        t.rows,
        t.cv_median,
        pct(t.cv_worst),
        t.in_sample_median
    );
    s += &summary_table(
        "By GPU generation",
        "generation",
        &stats_by(rows, |g| g.generation),
        |g| format!("{g:?}"),
    );
    s += &summary_table(
        "By parallel layout",
        "layout",
        &stats_by(rows, |g| g.layout),
        |l| format!("{l:?}"),
    );
    s += &summary_table("By stack", "stack", &stats_by(rows, |g| g.stack), |k| {
        crate::accuracy::sequence_bands::stack_name(*k).to_string()
    });
    s += &held_out_markdown();
    s += &crate::accuracy::sequence_bands::markdown(&row_errors(rows));
    s += &crate::accuracy::model_tables::parameters_markdown();
    s += &crate::accuracy::model_tables::network_markdown();
    s += &crate::accuracy::model_tables::kernels_markdown();
    s += &label_groups(c);
    s += &rows_left_out();
    s += &memory_markdown(c);
    s
}

/// The groups the page's labels use, each with its envelope and errors.
fn label_groups(c: &Coverage) -> String {
    let mut s = String::new();
    s += "\n#### Groups the page's labels use\n\nA plan of a group on one of its GPUs is \"calibrated\" inside the group's envelope (the sequences, micro-batches, GPU counts, model sizes (±10%) and precisions its rows ran, and every other setting a URL key sets: model shape and family, training kind, optimizer, checkpointing, offload, each parallel degree, overlap and MoE flags, attention kernel, loss, compile) and \"extrapolated\", with the axes named, outside it. A setting its rows never ran is named only when it moves the figure: if switching it to a value the rows did run leaves the figure within the group's worst cross-validated error (at least 5%), the label stays. The ± the page quotes is the larger of the worst under- and over-prediction (at least 5%), and only for groups of five rows or more of two models or more; a smaller group is \"calibrated\" without a ±, and a kind of plan no group ran names its own stack's error for scale.\n\n| group | rows (models) | envelope | cross-validated median | worst under | worst over | ± quoted |\n|---|---:|---|---:|---:|---:|---:|\n";
    for g in &c.groups {
        let e = &g.envelope;
        let quoted = if g.quotes_an_error() {
            format!("±{:.0}%", g.quoted_error() * 100.0)
        } else {
            "none".to_string()
        };
        s += &format!(
            "| {} | {} ({}) | seq {}–{}, mb {}–{}, {}–{} GPUs, {:.1}–{:.1} B, {} | {:.1}% | {} | {} | {} |\n",
            g.group.name(),
            g.rows,
            g.models,
            e.seq.0,
            e.seq.1,
            e.micro_batch.0,
            e.micro_batch.1,
            e.gpus.0,
            e.gpus.1,
            e.params.0 as f64 / 1e9,
            e.params.1 as f64 / 1e9,
            e.precisions.join("/"),
            g.cv_median,
            pct(g.cv_under),
            pct(g.cv_over),
            quoted
        );
    }
    s
}

/// Rows of the data the harness does not compare with, and why.
fn rows_left_out() -> String {
    let mut s = String::new();
    s += "\n#### Rows left out\n\n| row | why |\n|---|---|\n";
    for (id, why) in crate::accuracy::calibration::excluded() {
        s += &format!("| {id} | {why} |\n");
    }
    for (id, why) in crate::accuracy::calibration::hf_excluded() {
        s += &format!("| {id} (HF stack) | {why} |\n");
    }
    for (id, why) in crate::accuracy::published::excluded() {
        s += &format!("| {id} (published_runs.csv) | {why} |\n");
    }
    s
}

/// The memory checks: the summary, the real-GPU rows one by one, the
/// oracle's groups and its held-out plans.
fn memory_markdown(c: &Coverage) -> String {
    let mut s = String::new();
    let (m, g) = (&c.memory_single_rank, &c.memory_gpu);
    let o = out_of_sample_gpu_memory();
    s += &format!(
        "\n#### Memory\n\n| check | rows | median | worst |\n|---|---:|---:|---:|\n| HF Transformers, one GPU, FakeTensor-counted steps (in-sample) | {} | {:.2}% | {} |\n| real fine-tuning runs: HF Trainer + accelerate FSDP and torchtune on A100 80GB (peak allocated), Answer.AI's FSDP+QLoRA on 2 x RTX 3090 (peak reserved); {} of them in-sample ({}) | {} | {:.1}% | {} to {} |\n| the same, out of sample only | {} | {:.1}% | {} to {} |\n",
        m.rows, m.median, pct(m.worst), IN_SAMPLE_GPU_MEMORY_ROWS.len(), IN_SAMPLE_GPU_MEMORY_ROWS.join(", "), g.rows, g.median, pct(g.under), pct(g.over), o.rows, o.median, pct(o.under), pct(o.over)
    );
    s += "\n#### Memory against torchtitan's published runs\n\nThe torchtitan stack's plans against the peaks (`max_reserved`) of torchtitan's published runs (data/published_runs.csv: H100 at 500 W, H200, B200, GB200), per layout; no memory parameter is fitted on them.\n\n| layout | rows | median | worst under | worst over |\n|---|---:|---:|---:|---:|\n";
    for (layout, st) in &c.memory_torchtitan {
        s += &format!(
            "| {layout} | {} | {:.1}% | {:+.1}% | {:+.1}% |\n",
            st.rows, st.median, st.under, st.over
        );
    }
    s += "\n| run | layout | measured GiB | predicted GiB | error |\n|---|---|---:|---:|---:|\n";
    for (layout, r) in torchtitan_memory_rows() {
        s += &format!(
            "| {} | {layout} | {:.1} | {:.1} | {} |\n",
            r.label,
            r.measured,
            r.predicted,
            pct(r.error_percent)
        );
    }
    s += &megatron_markdown(&c.memory_megatron);
    s += &b200_markdown();
    s += "\nThe real-GPU rows, one by one (predicted vs measured, GiB; HF001-HF021 peak allocated, HF064-HF073 peak reserved):\n\n| row | measured | predicted | error |\n|---|---:|---:|---:|\n";
    s += &rows_table(&gpu_memory_rows(), 1.0, pct);
    s += &off_path_markdown();
    s += "\n#### Memory against the oracle (tools/oracle)\n\nIn-sample: the memory model was changed on these rows (the real-size rows below among them).\n\n| group | rows | median | worst under | worst over |\n|---|---:|---:|---:|---:|\n";
    for (group, st) in &c.memory_oracle {
        s += &format!(
            "| {group} | {} | {:.2}% | {:+.2}% | {:+.2}% |\n",
            st.rows, st.median, st.under, st.over
        );
    }
    let h = &c.memory_oracle_heldout;
    s += &format!(
        "\n#### Memory against the oracle's held-out plans\n\nOut of sample: plans the memory model was never changed on (OLMo 2, Qwen2.5-0.5B and Llama-3.2-3B widths, sequences of 1536-6144, micro-batches up to 3, up to 128 ranks; and five whole models at the presets' real shapes, below), measured after it was.\n\n| rows | median | worst under | worst over |\n|---:|---:|---:|---:|\n| {} | {:.2}% | {:+.2}% | {:+.2}% |\n",
        h.rows, h.median, h.under, h.over
    );
    s + &real_size_markdown()
}

/// The real runs on a path the planner does not plan, with their error and
/// why they are left out of the statistics.
fn off_path_markdown() -> String {
    let mut s = String::from("\nLeft out of the statistics and the labels: runs on a code path the planner does not plan.\n\n| row | measured | predicted | error | why |\n|---|---:|---:|---:|---|\n");
    for (r, why) in off_path_gpu_memory_rows() {
        s += &format!(
            "| {} | {:.2} | {:.2} | {} | {why} |\n",
            r.label,
            r.measured,
            r.predicted,
            pct(r.error_percent)
        );
    }
    s
}

/// The oracle's whole models at the presets' real shapes, row by row.
fn real_size_markdown() -> String {
    let rows: Vec<MemoryRow> = oracle_real_size_rows().into_iter().map(|r| r.row).collect();
    let held: Vec<MemoryRow> = oracle_heldout_rows()
        .into_iter()
        .filter(is_whole_model)
        .map(|r| r.row)
        .collect();
    let st = memory_stats(&rows);
    let h = memory_stats(&held);
    let s = format!(
        "\n#### Memory against the oracle at the presets' real sizes\n\nWhole models at the presets' real shapes (tools/oracle/rows.py's `real_sizes`), in the table, so the groups above and the labels' envelopes include them. In-sample: Llama-3.1-70B on 16 ranks changed the model (FSDP2's reduce-scatter at the end of backward, when every other layer's sharded gradient is kept, is a moment of its own); the rest were predicted before and after alike. {} rows: median {:.2}%, from {:+.2}% to {:+.2}%. Held out (`real_size_heldout`, never changed on): {} rows, median {:.2}%, from {:+.2}% to {:+.2}%.\n\n| row | measured GiB | predicted GiB | error |\n|---|---:|---:|---:|\n",
        st.rows, st.median, st.under, st.over, h.rows, h.median, h.under, h.over
    );
    let all: Vec<MemoryRow> = rows.into_iter().chain(held).collect();
    s + &rows_table(&all, (1u64 << 30) as f64, |e| format!("{e:+.2}%"))
}
