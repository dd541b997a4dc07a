//! Formatting at the edge: bytes, counts, percentages.

pub const GIB: f64 = (1u64 << 30) as f64;

pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / GIB)
}

/// 8,030,261,248 → "8.03 B"
pub fn params(n: u64) -> String {
    let x = n as f64;
    if x >= 1e9 {
        format!("{:.2} B", x / 1e9)
    } else {
        format!("{:.0} M", x / 1e6)
    }
}

/// Human label of a memory term key.
pub fn term_label(key: &str) -> &'static str {
    match key {
        "weights" => "Weights",
        "gradients" => "Gradients",
        "master_weights" => "Master weights",
        "optimizer_states" => "Optimizer states",
        "weight_copies" => "Weight copies",
        "adapters" => "LoRA adapters",
        "unsharded_unit" => "FSDP unsharded unit",
        "activations" => "Activations",
        "attention_scores" => "Attention scores",
        "logits_and_loss" => "Logits and loss",
        "transient" => "Transient buffers",
        "cuda_context" => "CUDA context",
        "workspaces" => "Workspaces",
        "fragmentation" => "Fragmentation",
        _ => "Other",
    }
}
