//! A recipe: what one training step of a plan runs, owned by the job that
//! resolved it (stage, batch and sequence, precision, checkpointing, stack,
//! sharding, adapters, MoE dispatch, allowances). The memory and throughput
//! models read it, never the plan: the model, hardware, saving, launch and
//! auto-plan sections stay in the plan, where resolve turns them into the
//! job's architecture, instance, layout and fabric.

use crate::model::architecture::{Adapted, Architecture};
use crate::model::plan::*;

/// What one training step runs: the plan's sections the models read.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Recipe {
    pub training: TrainingSetup,
    pub lora: Lora,
    pub data: Data,
    pub numerics: Numerics,
    pub activations: Activations,
    pub implementation: Implementation,
    pub parallelism: Parallelism,
    pub moe: MoeDispatch,
    pub allowances: Allowances,
}

impl Plan {
    /// The plan's recipe: its step's sections, copied.
    // Not inlined: each inlined copy of the nine sections cost the page ~0.3 KB.
    #[inline(never)]
    pub fn recipe(&self) -> Recipe {
        Recipe {
            training: self.training,
            lora: self.lora,
            data: self.data,
            numerics: self.numerics,
            activations: self.activations,
            implementation: self.implementation,
            parallelism: self.parallelism,
            moe: self.moe,
            allowances: self.allowances,
        }
    }
}

impl Recipe {
    /// Sequences per GPU per micro-batch: `mb` samples, two rows each for a
    /// DPO pair (the memory and the step run both at once); GRPO's `mb`
    /// counts rows (TRL's `per_device_train_batch_size` counts completions).
    pub fn rows_per_micro_batch(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Dpo => self.data.micro_batch.saturating_mul(2),
            TrainingStage::Sft | TrainingStage::Grpo => self.data.micro_batch,
        }
    }

    /// Bytes of one adapter parameter: FP32 unless the plan keeps the
    /// adapters in a BF16 base's dtype.
    pub fn adapter_bytes(&self) -> f64 {
        let bf16 =
            self.lora.lora_dtype == LoraDtype::Bf16 && self.numerics.precision != Precision::Fp32;
        if bf16 {
            2.0
        } else {
            4.0
        }
    }

    /// Tokens one sample puts through the model: a sequence, both rows of
    /// a DPO pair, or a GRPO prompt's `generations` rows.
    pub fn tokens_per_sample(&self) -> u64 {
        let rows = match self.training.stage {
            TrainingStage::Sft => 1,
            TrainingStage::Dpo => 2,
            TrainingStage::Grpo => self.training.rollout.generations,
        };
        self.data.seq.saturating_mul(rows)
    }

    /// Whether a frozen reference model runs beside the policy: DPO's, and
    /// GRPO's when its KL penalty is on (TRL loads none at `beta = 0`).
    pub fn has_reference(&self) -> bool {
        match self.training.stage {
            TrainingStage::Sft => false,
            TrainingStage::Dpo => true,
            TrainingStage::Grpo => self.training.rollout.beta > 0.0,
        }
    }

    /// Forwards without gradients per micro-batch before the update:
    /// DPO's reference; GRPO's old policy (TRL computes it whenever vLLM
    /// generates, for `vllm_importance_sampling_correction`, on by default)
    /// and its reference when `beta > 0`.
    pub fn scoring_forwards(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Sft => 0,
            TrainingStage::Dpo => 1,
            TrainingStage::Grpo => 1 + u64::from(self.has_reference()),
        }
    }

    /// Of the `scoring_forwards`, those of the policy itself (its adapters
    /// on): GRPO's old policy; a reference runs the frozen base.
    pub fn policy_scoring_forwards(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Grpo => 1,
            TrainingStage::Sft | TrainingStage::Dpo => 0,
        }
    }

    /// Tokens per micro-batch whose logits the loss takes: every row's, or
    /// GRPO's completions only (TRL's `logits_to_keep = C + 1`).
    pub fn logit_tokens(&self) -> u64 {
        match self.training.stage {
            TrainingStage::Grpo => self
                .data
                .micro_batch
                .saturating_mul(self.training.rollout.completion.min(self.data.seq) + 1),
            _ => self.rows_per_micro_batch().saturating_mul(self.data.seq),
        }
    }

    /// The adapters' `lora_alpha`: the plan's, or twice the rank.
    pub fn lora_alpha_or_default(&self) -> u64 {
        self.lora
            .lora_alpha
            .unwrap_or_else(|| self.lora.lora_rank.saturating_mul(2))
    }

    /// The LoRA adapters' parameters on this model (`lora_rank` on the
    /// `lora_targets` Linears of every layer).
    pub fn lora_params(&self, arch: &Architecture) -> f64 {
        arch.lora_params(self.lora.lora_rank, self.adapted(arch))
    }

    /// The modules of `arch` the adapters wrap (`lora_targets`).
    ///
    /// On Megatron the adapters sit on Megatron-Core's modules: where the
    /// targets take whole fused modules (q, k and v all or none; gate and
    /// up both or neither) Megatron-Bridge's `LoRA` puts one adapter on
    /// each fused one (`fused`), else its `CanonicalLoRA` one on each
    /// Linear as PEFT does. An MLA model's gate and up are always one
    /// module there (CanonicalLoRA splits Llama-style layers only):
    /// adapting one adapts both.
    pub fn adapted(&self, arch: &Architecture) -> Adapted {
        let mut adapted = self.lora.lora_targets.adapted().on(arch);
        if self.implementation.stack != Stack::Megatron {
            return adapted;
        }
        let gated = arch.mlp.is_gated();
        if arch.mla.is_some() {
            let fc1 = adapted.gate || adapted.up;
            (adapted.gate, adapted.up) = (fc1, fc1);
            adapted.fused = true;
        } else {
            let a = adapted;
            adapted.fused = a.q == a.k && a.k == a.v && (a.gate == a.up || !gated);
        }
        adapted
    }

    /// The share of a layer's GEMMs whose outputs op-level selective
    /// checkpointing drops and the backward recomputes (forward again):
    /// - the bundle's train.py keeps every `aten.mm` output (`op_level_policy`): none;
    /// - torchtitan's policy keeps every other `mm`/`linear`
    ///   (torchtitan/distributed/activation_checkpoint.py at b5bcd76,
    ///   "Save all compute/comm ops, except every second mm/linear"): half;
    /// - under NVFP4 its quantized layers' GEMM is torchao's Triton
    ///   `nvfp4_mm_triton`, an op outside that save list, so those layers
    ///   recompute all of theirs (the published runs: Qwen3 8B on 4 GB200s
    ///   took 78.6 GiB in NVFP4 against 112.9 in BF16 and 112.6 in MXFP8,
    ///   whose `_scaled_mm` the list keeps); the recipe's BF16 layers
    ///   (`NVFP4_BF16_LAYER_SHARE`) still recompute half;
    /// - Megatron (no op-level policy of its own): half, as torchtitan.
    pub fn op_level_recomputed_gemm_share(&self) -> f64 {
        match (self.implementation.stack, self.numerics.precision) {
            (Stack::Hf, _) => 0.0,
            (Stack::Torchtitan, Precision::Nvfp4) => 1.0 - 0.5 * NVFP4_BF16_LAYER_SHARE,
            _ => 0.5,
        }
    }

    /// The recipe whose rows are the completions' mean length: GRPO with a
    /// `completion_mean` below `completion`; itself otherwise.
    #[inline(never)]
    pub fn at_mean_length(&self) -> Recipe {
        let mut r = *self;
        let rollout = &mut r.training.rollout;
        let (c, m) = (rollout.completion, rollout.mean_completion());
        if r.training.stage.generates() && m < c {
            r.data.seq -= c - m;
            rollout.completion = m;
            rollout.completion_mean = 0;
        }
        r
    }
}
