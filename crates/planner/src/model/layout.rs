//! The parallel layout one GPU sees: the degrees of tensor, pipeline,
//! context, expert and data parallelism a plan resolves to, and how the
//! decoder layers split over the pipeline ranks. Memory, throughput and the
//! search read it; it reads nothing of theirs.

use serde::Serialize;

/// Degrees of parallelism resolved for one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Layout {
    pub gpus: u64,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    /// Data-parallel degree `gpus / (tp*pp*cp)`.
    pub dp: u64,
    /// ZeRO/FSDP shard group size.
    pub shard: u64,
    /// Decoder layers per pipeline rank.
    pub stages: Stages,
    /// The GPU keeps FP8 weights twice, row-wise and transposed
    /// (`Gpu::fp8_tn_only`): Hopper, Ada and sm_120 yes, B200/B300 no.
    #[serde(skip)]
    pub fp8_tn_only: bool,
}

impl Layout {
    /// `gpus` tiled by `[tp, pp, cp, ep]`: the data-parallel degree is what
    /// TP x PP x CP leave (`rules::degrees_tile` holds that they divide),
    /// and the shard group all of it until a hybrid group is set.
    pub fn tiled(
        gpus: u64,
        [tp, pp, cp, ep]: [u64; 4],
        stages: Stages,
        fp8_tn_only: bool,
    ) -> Layout {
        let dp = gpus / (tp * pp * cp).max(1);
        Layout {
            gpus,
            tp,
            pp,
            cp,
            ep,
            dp,
            shard: dp,
            stages,
            fp8_tn_only,
        }
    }

    /// The experts' tensor-parallel degree. Megatron-Core lays a stage's
    /// ranks out twice, `TP x CP x DP` for the dense layers and
    /// `ETP x EP x EDP` for the experts (megatron/core/parallel_state.py);
    /// ETP is the dense TP by default, so EP divides DP x CP. Where it does
    /// not, EP takes TP's ranks too with ETP = 1 (Megatron-Bridge's
    /// Qwen3-235B recipe: TP 2 and EP 32 over 16 DP ranks). `None` where
    /// neither fits. torchtitan's EP borrows the same ranks.
    pub fn expert_tensor_parallel(&self) -> Option<u64> {
        let (ep, dense) = (self.ep.max(1), self.dp * self.cp);
        if dense.is_multiple_of(ep) {
            Some(self.tp)
        } else if (dense * self.tp).is_multiple_of(ep) {
            Some(1)
        } else {
            None
        }
    }

    /// The ranks one expert's weights are split over: EP x ETP.
    pub fn expert_split(&self) -> f64 {
        (self.ep * self.expert_tensor_parallel().unwrap_or(self.tp)) as f64
    }
}

/// Decoder layers per pipeline rank, as Megatron-LM builds them
/// (`transformer_block.py::get_num_layers_to_build`; shared/data/
/// gb200_nvl72_and_uneven_pp.md §3): the first and last rank may hold fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Stages {
    pub first: u64,
    /// Every rank between the first and the last.
    pub middle: u64,
    pub last: u64,
    /// The embedding and the loss count as one layer slot each
    /// (`account_for_embedding_in_pipeline_split`, `..._loss_...`).
    pub embedding_and_loss_slots: bool,
}

impl Stages {
    /// `layers / pp` on every rank (rounded up where it does not divide).
    pub fn even(layers: u64, pp: u64) -> Stages {
        let n = layers.div_ceil(pp.max(1));
        Stages {
            first: n,
            middle: n,
            last: n,
            embedding_and_loss_slots: false,
        }
    }

    /// The split Megatron runs for `pp` ranks of `vp` virtual stages with no
    /// explicit layout: even when `pp*vp` divides the layers, else with the
    /// embedding and the loss counted as slots when `pp*vp` divides `layers + 2`.
    pub fn megatron(layers: u64, pp: u64, vp: u64) -> Option<Stages> {
        let chunks = pp.max(1) * vp.max(1);
        if layers.is_multiple_of(chunks) {
            return Some(Stages::even(layers, pp));
        }
        if pp > 1 && (layers + 2).is_multiple_of(chunks) {
            let slots = (layers + 2) / pp;
            return Some(Stages {
                first: slots - 1,
                middle: slots,
                last: slots - 1,
                embedding_and_loss_slots: true,
            });
        }
        None
    }

    /// Explicit first/last-rank layer counts (`--decoder-first/last-pipeline-num-layers`,
    /// or a `--pipeline-model-parallel-layout` that places them): the rest
    /// splits evenly over the middle ranks. Megatron's two flags want every
    /// count a multiple of `vp`; a layout string places any count (DeepSeek-V3's
    /// recipes put 4 layers and the embedding on the first of 16 virtual
    /// stages, 1 layer, the MTP layer and the loss on the last), so any is
    /// accepted.
    pub fn explicit(layers: u64, pp: u64, first: Option<u64>, last: Option<u64>) -> Option<Stages> {
        let ends = first.is_some() as u64 + last.is_some() as u64;
        let set = first.unwrap_or(0) + last.unwrap_or(0);
        if pp < 2 || ends > pp || set > layers {
            return None;
        }
        let rest = layers - set;
        let others = pp - ends;
        let middle = match others {
            0 if rest == 0 => 0,
            0 => return None,
            n if rest.is_multiple_of(n) => rest / n,
            _ => return None,
        };
        Some(Stages {
            first: first.unwrap_or(middle),
            middle,
            last: last.unwrap_or(middle),
            embedding_and_loss_slots: false,
        })
    }

    /// Layers on each of the `pp` ranks.
    pub fn per_rank(&self, pp: u64) -> Vec<u64> {
        (0..pp.max(1))
            .map(|i| match i {
                0 => self.first,
                i if i + 1 == pp => self.last,
                _ => self.middle,
            })
            .collect()
    }
}
