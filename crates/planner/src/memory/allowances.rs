//! What a GPU needs beyond the tensors a step allocates (SPEC §3.4): the
//! CUDA context, library workspaces, and the caching allocator's reserve
//! over what is allocated, measured by stack (#55: the flat 10% headroom,
//! 1.25 GiB of workspaces and 5% fragmentation stacked on top of each other
//! called runs that ran "tight" or "does not fit").
//!
//! PyTorch's caching allocator keeps freed blocks for reuse, so a run's
//! reserved memory exceeds its allocated peak by what it caches: by the
//! median of the measured runs in data/allocator_caching.csv (`reserved /
//! allocated - 1`), 4.73% on Megatron-Core (15 distinct real 8 x B200 runs)
//! and 11.33% on the Hugging Face stack (Answer.AI's FSDP+QLoRA runs and
//! fms-acceleration's one-GPU runs), whose allocator cuts fixed-size
//! segments; torchtitan's launcher asks for expandable segments
//! (`run_train.sh`: `PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"`),
//! which map memory as it grows, and is taken at Megatron's figure. Where memory runs
//! short the allocator releases its cached blocks and retries before it
//! fails (`CUDACachingAllocator::malloc`: `release_cached_blocks`), so a run
//! needs only the least measured reserve, 2.78%: such a run is "tight".

use crate::plan::{Plan, Stack};

/// The caching allocator's typical reserve over the allocated peak on
/// Megatron-Core: the median of data/allocator_caching.csv's Megatron rows.
pub const MEGATRON_CACHING: f64 = 0.0473;

/// The same on the Hugging Face stack: the median of the file's rows of it.
pub const PYTORCH_CACHING: f64 = 0.1133;

/// The least reserve the file measures (a Megatron run at 2.78%): what a
/// run needs once the allocator has released what it cached.
pub const LEAST_CACHING: f64 = 0.0278;

/// The runs the caching figures are the medians and the least of.
pub const ALLOCATOR_CACHING_CSV: &str = include_str!("../../data/allocator_caching.csv");

/// Library workspaces outside the tensors a step allocates, GiB per GPU:
/// cuBLAS's and cuDNN's (PyTorch's default `CUBLAS_WORKSPACE_CONFIG`
/// `:4096:8`, 32 MiB per handle and stream, and the fused attention's
/// scratch), and on more than one GPU NCCL's buffers (`NCCL_BUFFSIZE`, 4 MiB
/// per channel and peer, for each protocol, of each communicator the job
/// opens). Not measured apart from fragmentation by any run here.
pub fn workspace_gib(gpus: u64) -> f64 {
    if gpus > 1 {
        1.25
    } else {
        0.25
    }
}

/// The caching allocator's typical reserve for a plan's stack, or the
/// user's figure (`frag`, percent).
pub fn caching_share(plan: &Plan) -> f64 {
    match plan.allowances.fragmentation {
        Some(percent) => percent / 100.0,
        None if plan.implementation.stack == Stack::Hf => PYTORCH_CACHING,
        None => MEGATRON_CACHING,
    }
}

/// The least reserve a run needs: the measured least, or the user's
/// figure where it is smaller.
pub fn least_caching_share(plan: &Plan) -> f64 {
    caching_share(plan).min(LEAST_CACHING)
}

/// Workspaces for a plan on `gpus` GPUs, bytes: the user's figure (`ws_gib`)
/// or `workspace_gib`.
pub fn workspaces(plan: &Plan, gpus: u64) -> f64 {
    plan.allowances
        .workspace_gib
        .unwrap_or_else(|| workspace_gib(gpus))
        * crate::hardware::GIB as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        (v[(n - 1) / 2] + v[n / 2]) / 2.0
    }

    /// The constants are the file's medians and least, per stack.
    #[test]
    fn caching_shares_are_the_measured_ones() {
        let rows = crate::table::read_csv(ALLOCATOR_CACHING_CSV);
        let share = |r: &crate::table::Row| {
            r.num("reserved_gib").unwrap() / r.num("allocated_gib").unwrap() - 1.0
        };
        let of = |stack: &str| -> Vec<f64> {
            rows.iter()
                .filter(|r| r.get("stack") == stack)
                .map(share)
                .collect()
        };
        let (megatron, pytorch) = (of("megatron"), of("hf"));
        assert_eq!((megatron.len(), pytorch.len()), (15, 4));
        assert!((median(megatron.clone()) - MEGATRON_CACHING).abs() < 5e-5);
        assert!((median(pytorch.clone()) - PYTORCH_CACHING).abs() < 5e-5);
        let least = megatron
            .iter()
            .chain(&pytorch)
            .copied()
            .fold(f64::MAX, f64::min);
        assert!((least - LEAST_CACHING).abs() < 5e-5, "{least}");
    }
}
