//! What a node's host holds: activation offloading against the node's RAM
//! (#36: offloading all 80 layers of a 70B plan sent 1.1 TiB to a node with
//! 960 GiB and was said to fit).

use crate::model::hardware::{Instance, OFFLOADABLE_HOST_SHARE};
use crate::model::memory::Offload;
use crate::model::plan::Stack;
use crate::model::recipe::Recipe;
use crate::text::{Arg, Message, Text};

/// The error when the node's GPUs offload more activations than its RAM
/// can pin, with the largest offload that fits as the fix (Megatron's
/// `--cpu-offloading-num-layers`; the other stacks offload all but a
/// horizon, so the fix turns it off). An instance whose RAM the data does
/// not give (a custom GPU) is not checked.
pub fn offload_overflow(
    plan: &Recipe,
    offload: &Offload,
    instance: &Instance,
    gpus: u64,
) -> Option<Message> {
    let available = instance.offloadable_host_bytes()?;
    let per_node = instance.gpu_count.min(gpus).max(1);
    let needed = offload.host_bytes_per_gpu() * per_node as f64;
    if offload.layers <= 0.0 || needed <= available {
        return None;
    }
    let most = offload.layers_within(available, per_node);
    let args: [(&'static str, Arg); 6] = [
        ("layers", Arg::Count(offload.layers as u64)),
        ("needed", Arg::Bytes(needed as u64)),
        ("available", Arg::Bytes(available as u64)),
        ("share", Arg::Number(OFFLOADABLE_HOST_SHARE * 100.0, 0)),
        (
            "ram",
            Arg::Bytes(
                instance
                    .host_ram_gib
                    .map_or(0, |g| (g * (1u64 << 30) as f64) as u64),
            ),
        ),
        ("most", Arg::Count(most)),
    ];
    let m = Message::new("offload", Text::OffloadExceedsHost, args);
    Some(match (plan.implementation.stack, most) {
        (Stack::Megatron, n) if n > 0 => m.fix("offload_layers", n.to_string()),
        _ => m.fix("offload", "0"),
    })
}

/// The error when vLLM's sleep mode (`rollout::engine_sleeps`:
/// `LLM.sleep(level=1)` backs the engine's weights up in pinned host memory)
/// keeps more in the node's host memory than it can pin, with the
/// activations the plan offloads (`offloaded`, bytes per GPU) beside each
/// colocated GPU's `backup`: the engine's weights, with the policy's states
/// under NeMo RL (`Job::host_backup_bytes`). The fix keeps vLLM awake where the
/// plan chose sleep mode (TRL's); NeMo RL always sleeps.
pub fn sleep_overflow(
    recipe: &Recipe,
    (backup, offloaded): (f64, f64),
    instance: &Instance,
    gpus: u64,
) -> Option<Message> {
    if !crate::model::rollout::engine_sleeps(recipe) {
        return None;
    }
    let available = instance.offloadable_host_bytes()?;
    let per_node = instance.gpu_count.min(gpus).max(1) as f64;
    let needed = (backup + offloaded) * per_node;
    if needed <= available {
        return None;
    }
    let args: [(&'static str, Arg); 3] = [
        ("needed", Arg::Bytes(needed as u64)),
        ("available", Arg::Bytes(available as u64)),
        ("share", Arg::Number(OFFLOADABLE_HOST_SHARE * 100.0, 0)),
    ];
    // NeMo RL always sleeps vLLM: no setting of the plan's frees the host.
    Some(match crate::model::rollout::states_offloaded(recipe) {
        true => Message::new("nodes", Text::PhasesExceedHost, args),
        false => Message::new("sleep", Text::SleepExceedsHost, args).fix("sleep", "0"),
    })
}

/// Whether a node's pinned host memory overflows: the activations the plan
/// offloads (`offload_overflow`) or, with them, what a sleeping engine's
/// plan backs up between phases (`sleep_overflow`, `backup` per GPU:
/// `Job::host_backup_bytes`).
pub fn overflows(
    recipe: &Recipe,
    offload: &Offload,
    backup: f64,
    instance: &Instance,
    gpus: u64,
) -> bool {
    let pinned = (backup, offload.host_bytes_per_gpu());
    offload_overflow(recipe, offload, instance, gpus).is_some()
        || sleep_overflow(recipe, pinned, instance, gpus).is_some()
}
