//! What a GPU needs beyond the tensors a step allocates (SPEC §3.4): the
//! CUDA context, library workspaces, and the caching allocator's reserve
//! over what is allocated, measured by stack (#55: the flat 10% headroom,
//! 1.25 GiB of workspaces and 5% fragmentation stacked on top of each other
//! called runs that ran "tight" or "does not fit").
//!
//! PyTorch's caching allocator keeps freed blocks for reuse, so a run's
//! reserved memory exceeds its allocated peak by what it caches: by the
//! median of the measured runs in data/allocator_caching.csv (`reserved /
//! allocated - 1`), per group. Megatron-Core: 4.73% (15 distinct real
//! 8 x B200 runs). The Hugging Face stack on one GPU: 10.91% (two of
//! fms-acceleration's runs). The Hugging Face stack sharded over several
//! GPUs: 22.53% (seven of fms-acceleration's and two of Answer.AI's FSDP
//! runs, up to 49%): FSDP1 all-gathers on a stream of its own, and blocks
//! freed across streams are cached apart. The exported train.py runs FSDP2,
//! which no run here measured and which avoids those cross-stream frees; it
//! is planned at FSDP1's figure, the safer side. torchtitan's launcher asks
//! for expandable segments (`run_train.sh`:
//! `PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"`), which map memory
//! as it grows, and is taken at Megatron's figure. Where memory runs short
//! the allocator releases its cached blocks and retries before it fails
//! (`CUDACachingAllocator::malloc`: `release_cached_blocks`), so a run needs
//! at least the least reserve its family measured (2.78% on Megatron-Core,
//! 10.73% on the Hugging Face stack): a plan between the two is "tight".
//! The verdict against these is checked on fms-acceleration's Llama-2-70B
//! QLoRA at four sequences a GPU, which ran out of memory
//! (`tests/fine_tuning.rs`).

use crate::model::plan::Stack;
use crate::model::recipe::Recipe;

/// The caching allocator's typical reserve over the allocated peak on
/// Megatron-Core (and torchtitan): the median of data/allocator_caching.csv's
/// Megatron rows.
pub const MEGATRON_CACHING: f64 = 0.0473;

/// The least of those rows: what such a run needs once the allocator has
/// released what it cached.
pub const MEGATRON_LEAST_CACHING: f64 = 0.0278;

/// The typical reserve on the Hugging Face stack on one GPU: the median of
/// the file's one-GPU Hugging Face rows.
pub const PYTORCH_CACHING: f64 = 0.1091;

/// The same sharded over several GPUs (FSDP): the median of the file's
/// Hugging Face rows on more than one GPU.
pub const PYTORCH_FSDP_CACHING: f64 = 0.2253;

/// The least of the file's Hugging Face rows.
pub const PYTORCH_LEAST_CACHING: f64 = 0.1073;

/// The runs the caching figures are the medians and the least of.
pub const ALLOCATOR_CACHING_CSV: &str = include_str!("../../../data/allocator_caching.csv");

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

/// The caching allocator's typical reserve for a plan's stack on `gpus`
/// GPUs, or the user's figure (`frag`, percent).
pub fn caching_share(recipe: &Recipe, gpus: u64) -> f64 {
    match recipe.allowances.fragmentation {
        Some(percent) => percent / 100.0,
        None if recipe.implementation.stack != Stack::Hf => MEGATRON_CACHING,
        None if gpus > 1 => PYTORCH_FSDP_CACHING,
        None => PYTORCH_CACHING,
    }
}

/// The least reserve a run needs: its family's measured least, or the
/// user's figure where it is smaller.
pub fn least_caching_share(recipe: &Recipe, gpus: u64) -> f64 {
    let least = if recipe.implementation.stack == Stack::Hf {
        PYTORCH_LEAST_CACHING
    } else {
        MEGATRON_LEAST_CACHING
    };
    caching_share(recipe, gpus).min(least)
}

/// Workspaces for a plan on `gpus` GPUs, bytes: the user's figure (`ws_gib`)
/// or `workspace_gib`.
pub fn workspaces(recipe: &Recipe, gpus: u64) -> f64 {
    recipe
        .allowances
        .workspace_gib
        .unwrap_or_else(|| workspace_gib(gpus))
        * crate::model::hardware::GIB as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        (v[(n - 1) / 2] + v[n / 2]) / 2.0
    }

    /// The constants are the file's medians and least, per group.
    #[test]
    fn caching_shares_are_the_measured_ones() {
        let rows = crate::formats::table::read_csv(ALLOCATOR_CACHING_CSV);
        let share = |r: &crate::formats::table::Row| {
            r.num("reserved_gib").unwrap() / r.num("allocated_gib").unwrap() - 1.0
        };
        let of = |stack: &str, several: bool| -> Vec<f64> {
            rows.iter()
                .filter(|r| r.get("stack") == stack)
                .filter(|r| (r.num("gpus").unwrap() > 1.0) == several || stack == "megatron")
                .map(share)
                .collect()
        };
        let megatron = of("megatron", true);
        let (one, fsdp) = (of("hf", false), of("hf", true));
        assert_eq!((megatron.len(), one.len(), fsdp.len()), (15, 2, 9));
        assert!((median(megatron.clone()) - MEGATRON_CACHING).abs() < 5e-5);
        assert!((median(one.clone()) - PYTORCH_CACHING).abs() < 5e-5);
        assert!((median(fsdp.clone()) - PYTORCH_FSDP_CACHING).abs() < 5e-5);
        let least = |v: Vec<f64>| v.into_iter().fold(f64::MAX, f64::min);
        assert!((least(megatron) - MEGATRON_LEAST_CACHING).abs() < 5e-5);
        let hf_least = least(one.into_iter().chain(fsdp).collect());
        assert!(
            (hf_least - PYTORCH_LEAST_CACHING).abs() < 5e-5,
            "{hf_least}"
        );
    }
}
