//! What the forward pass keeps per layer, by stack and precision: the
//! activation profiles of HF Transformers (fp32, bf16, autocast) and
//! Megatron-Core with TransformerEngine, with MLA, MoE and LoRA's extras.

use crate::model::architecture::Architecture;
use crate::model::plan::{Attention, Checkpointing, Precision, Stack, Training};
use crate::model::recipe::Recipe;

/// Which tensors the forward pass keeps, by implementation and precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Profile {
    /// HF, fp32 params under bf16 autocast (DDP): fp32 residual stream, a
    /// bf16 cast of each norm output per consuming Linear, cast weight copies.
    HfAutocast,
    /// HF with bf16 compute weights: pure bf16, or FSDP/ZeRO whose
    /// mixed-precision policy gathers bf16 parameters (accelerate's default).
    HfBf16,
    /// HF in fp32.
    HfFp32,
    /// Megatron-Core / TransformerEngine fused kernels, bf16 activations.
    Megatron,
}

pub(super) fn profile(recipe: &Recipe) -> Profile {
    match (recipe.implementation.stack, recipe.numerics.precision) {
        (Stack::Megatron, _) => Profile::Megatron,
        (Stack::Hf | Stack::Torchtitan, Precision::Fp32) => Profile::HfFp32,
        // QLoRA through PEFT and bitsandbytes: the residual stream is FP32
        // (`qlora_fp32_residual`), each 4-bit Linear casts its input to BF16.
        (Stack::Hf, _) if qlora_fp32_residual(recipe) => Profile::HfAutocast,
        (Stack::Hf | Stack::Torchtitan, Precision::Bf16Pure) => Profile::HfBf16,
        // FSDP (ZeRO-2/3) gathers BF16 copies of its fp32 shards; DDP and
        // ZeRO-1 (DDP + a sharded optimizer) keep fp32 weights under autocast:
        // what the bundle's train.py does (`compute_path` there).
        (Stack::Hf | Stack::Torchtitan, _)
            if recipe.parallelism.zero >= 2 && recipe.training.train == Training::Full =>
        {
            Profile::HfBf16
        }
        // LoRA/QLoRA: the frozen base computes in BF16, so the residual stream
        // and the activations are BF16 though autocast is on (for the fp32
        // adapters): oracle rows `*/lora/*`.
        (Stack::Hf | Stack::Torchtitan, _) if recipe.training.train != Training::Full => {
            Profile::HfBf16
        }
        (Stack::Hf | Stack::Torchtitan, _) => Profile::HfAutocast,
    }
}

/// How the plan's GEMMs get their weights, in the words train.py reports
/// (`compute_path`), so a test can hold the script to the model.
pub fn compute_path(recipe: &Recipe) -> ComputePath {
    match (profile(recipe), recipe.numerics.precision) {
        (Profile::Megatron, _) => ComputePath::Megatron,
        (Profile::HfFp32, _) => ComputePath::Fp32,
        (_, Precision::Bf16Pure) => ComputePath::Bf16Weights,
        _ if recipe.training.train != Training::Full => ComputePath::AutocastBf16,
        (Profile::HfBf16, _) => ComputePath::FsdpBf16Gather,
        (Profile::HfAutocast, _) => ComputePath::AutocastBf16,
    }
}

/// How the GEMMs get their weights: the paths train.py reports (its
/// `compute_path`), written as it writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputePath {
    /// Megatron-Core with TransformerEngine.
    Megatron,
    /// FP32 weights and GEMMs.
    Fp32,
    /// The weights are BF16 (pure BF16).
    Bf16Weights,
    /// FP32 weights cast to BF16 under autocast (and every adapter plan).
    AutocastBf16,
    /// FSDP's mixed precision: BF16 gathered, FP32 reduced.
    FsdpBf16Gather,
}

impl ComputePath {
    /// The name train.py reports.
    pub fn key(self) -> &'static str {
        match self {
            ComputePath::Megatron => "megatron",
            ComputePath::Fp32 => "fp32",
            ComputePath::Bf16Weights => "bf16 weights",
            ComputePath::AutocastBf16 => "autocast bf16",
            ComputePath::FsdpBf16Gather => "fsdp bf16 gather, fp32 reduce",
        }
    }
}

impl serde::Serialize for ComputePath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

/// QLoRA as the bundle's train.py and TRL's SFTTrainer load it unsharded
/// under autocast: PEFT's `prepare_model_for_kbit_training` turns every
/// parameter bitsandbytes left unquantized (the embedding, the norms, the LM
/// head) to FP32. A sharded QLoRA (FSDP over several GPUs, the weights
/// stored as BF16 with `bnb_4bit_quant_storage`) skips it (TRL:
/// `is_sharded_qlora`), and so does a pure-BF16 plan (train.py: BF16
/// throughout); their embedding and head stay BF16.
pub(super) fn qlora_prepared(recipe: &Recipe, gpus: u64) -> bool {
    qlora_fp32_residual(recipe) && !(recipe.parallelism.zero >= 2 && gpus > 1)
}

/// Whether a Hugging Face QLoRA plan's residual stream is FP32: under
/// autocast, prepared (`qlora_prepared`) or sharded, where TRL's
/// `peft_module_casting_to_bf16` keeps the norms in FP32, and the 4-bit
/// Linears cast their outputs back to their FP32 inputs (fms-acceleration's
/// plain PEFT + bitsandbytes FSDP runs, HF005/7/8, hold 2 B more per element
/// of every checkpointed layer input than a BF16 stream). In pure BF16
/// (Answer.AI's FSDP+QLoRA, Hugging Face's FSDP-QLoRA guide, train.py
/// without PEFT's preparation) it is BF16 (HF064, HF065, HF068, HF069).
pub fn qlora_fp32_residual(recipe: &Recipe) -> bool {
    recipe.training.train == Training::Qlora
        && recipe.implementation.stack == Stack::Hf
        && recipe.numerics.precision != Precision::Bf16Pure
}

/// Bytes per element HF's matmul outputs and activation gradients take: fp32
/// in the fp32 profile, BF16 otherwise.
pub(super) fn compute_bytes(profile: Profile) -> f64 {
    if profile == Profile::HfFp32 {
        4.0
    } else {
        2.0
    }
}

/// Bytes per element of the residual stream (what a checkpointed layer keeps).
pub(super) fn residual_bytes(profile: Profile) -> f64 {
    match profile {
        Profile::HfAutocast | Profile::HfFp32 => 4.0,
        Profile::HfBf16 | Profile::Megatron => 2.0,
    }
}

/// Bytes saved per token by one decoder layer, split into the part that
/// tensor parallelism divides and the part that only sequence parallelism
/// divides (norms, residual).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LayerActivations {
    pub(super) tp_split: f64,
    pub(super) replicated: f64,
    /// Neither TP nor SP splits it: MLA's latents, which every TP rank
    /// computes whole (Megatron duplicates the down projections).
    pub(super) unsplit: f64,
    /// Eager attention's `s^2` part (per token, already multiplied by `s`).
    pub(super) scores: f64,
    /// The MLP's part of `tp_split` (back-propagated, and freed, before attention's).
    pub(super) mlp: f64,
}

/// The widths one decoder layer's saved tensors are made of.
pub(super) struct Widths {
    pub(super) h: f64,
    pub(super) q: f64,
    pub(super) kv: f64,
    pub(super) a: f64,
    /// FFN width of one expert (or of the dense MLP).
    pub(super) f: f64,
    /// Experts a token passes through (1 for a dense MLP).
    pub(super) routed: f64,
    /// Of those, the routed ones the dispatcher permutes tokens to (0 for a
    /// dense MLP).
    pub(super) permuted: f64,
    /// The router's saved logits and probabilities per token.
    pub(super) router: f64,
    pub(super) gated: bool,
    /// Norms beyond the two of a Llama layer (Gemma's four).
    pub(super) extra_norms: f64,
    /// q/k norms' saved width (Qwen3, OLMo 2, Gemma 3).
    pub(super) qk_norm: f64,
    /// Gemma's RMSNorm scales by `1 + weight` in fp32 and keeps that fp32
    /// normalised value too (GeGLU marks the Gemma family).
    pub(super) gemma_norm: bool,
    pub(super) eager: bool,
    /// Bytes per element of a Linear input kept for the weight gradient
    /// (FP8 recipes keep it in 8 bits).
    pub(super) lin: f64,
    pub(super) seq: f64,
    /// The MLP matrices' output widths, summed.
    pub(super) mlp_outputs: f64,
    /// Which tensors the stack keeps (`profile`).
    pub(super) profile: Profile,
}

impl Widths {
    /// The same widths for a dense layer of an MoE model (its MLP of width
    /// `ffn`, no router).
    pub(super) fn dense(&self, arch: &Architecture) -> Widths {
        let f = arch.ffn as f64;
        let m = arch.mlp.matrices() as f64;
        Widths {
            f,
            routed: 1.0,
            permuted: 0.0,
            router: 0.0,
            mlp_outputs: (m - 1.0) * f + self.h,
            ..*self
        }
    }

    pub(super) fn of(arch: &Architecture, recipe: &Recipe, seq_per_gpu: f64) -> Widths {
        let (f, routed) = match &arch.moe {
            // Each token passes through `active` experts (+ shared ones).
            Some(m) => (m.expert_ffn as f64, (m.active + m.shared) as f64),
            None => (arch.ffn as f64, 1.0),
        };
        let (q, kv) = (arch.q_width() as f64, arch.kv_width() as f64);
        Widths {
            h: arch.hidden as f64,
            q,
            kv,
            a: arch.heads as f64,
            f,
            routed,
            permuted: arch.moe.as_ref().map_or(0.0, |m| m.active as f64),
            router: arch
                .moe
                .as_ref()
                .map_or(0.0, |m| 4.0 * m.experts as f64 * 2.0),
            gated: arch.mlp.is_gated(),
            extra_norms: arch.norms_per_layer.saturating_sub(2) as f64,
            qk_norm: match arch.qk_norm {
                crate::model::architecture::QkNorm::None => 0.0,
                _ => q + kv,
            },
            eager: recipe.implementation.attention == Attention::Eager,
            gemma_norm: arch.mlp == crate::model::architecture::Mlp::Geglu,
            lin: linear_input_bytes(recipe),
            seq: seq_per_gpu,
            mlp_outputs: (arch.mlp.matrices() as f64 - 1.0) * f + arch.hidden as f64,
            profile: profile(recipe),
        }
    }
}

/// Bytes per element of a Linear input kept for its weight gradient, per
/// stack: TransformerEngine's FP8 and FP4 recipes keep it quantized (1 B);
/// torchao's float8 and MXFP8 Linear layers (torchtitan) keep the BF16
/// input and quantize it again in the backward (torchtitan's runs: 76.8 vs
/// 77.0 GiB with float8 against BF16 on 8 H100s; 179.9 vs 174.5 GiB with
/// MXFP8 on 4 GB200s), and its NVFP4 one keeps the 4-bit input and one
/// 8-bit scale per 16 elements (110.9 GiB), in all but the recipe's BF16
/// layers (`plan::NVFP4_BF16_LAYER_SHARE`).
fn linear_input_bytes(recipe: &Recipe) -> f64 {
    let share = crate::model::plan::NVFP4_BF16_LAYER_SHARE;
    match (recipe.implementation.stack, recipe.numerics.precision) {
        (_, p) if !p.is_low_precision() => 2.0,
        (Stack::Torchtitan, Precision::Nvfp4) => share * 2.0 + (1.0 - share) * (0.5 + 1.0 / 16.0),
        (Stack::Torchtitan, _) => 2.0,
        _ => 1.0,
    }
}

pub(super) fn layer_activations(
    arch: &Architecture,
    recipe: &Recipe,
    w: &Widths,
) -> LayerActivations {
    let mut layer = profile_layer(recipe, w);
    // Dense layers among MoE ones (DeepSeek-V3's first 3, Llama 4
    // Maverick's every other): the mean layer over the stage.
    let dense = 1.0 - arch.moe_layer_share();
    if arch.moe.is_some() && dense > 0.0 {
        layer = layer.blend(&profile_layer(recipe, &w.dense(arch)), dense);
    }
    layer.unsplit += mla_latents(arch, recipe, w);
    recompute_modules(&mut layer, arch, recipe, w);
    layer.replicated += sliding_window_float_mask(arch, recipe);
    layer.tp_split += lora_fp32_inputs(arch, recipe, w);
    layer.tp_split -= lora_frozen_inputs(arch, recipe, w);
    megatron_lora_inputs(&mut layer, arch, recipe, w);
    layer
}

/// Megatron-Bridge's LoRA: TransformerEngine keeps a Linear's input for its
/// weight gradient only where the weight trains, so the frozen base keeps
/// none of the `lin`-byte inputs `megatron_layer` counts (qkv's and fc1's,
/// the norms' outputs; proj's and fc2's); each adapter keeps its own input
/// in BF16 for its `linear_in`: qkv's and fc1's gathered from the
/// sequence-parallel region first (`ParallelLinearAdapter.forward`, whole on
/// every TP rank), proj's and fc2's split as their base's. An MoE layer's
/// experts keep the permuted tokens only where their adapters train.
fn megatron_lora_inputs(
    layer: &mut LayerActivations,
    arch: &Architecture,
    recipe: &Recipe,
    w: &Widths,
) {
    if recipe.implementation.stack != Stack::Megatron || recipe.training.train == Training::Full {
        return;
    }
    let a = recipe.adapted(arch);
    let e = if recipe.numerics.precision == Precision::Fp32 {
        2.0
    } else {
        1.0
    };
    let (h, q, f, lin) = (w.h, w.q, w.f, w.lin);
    let [gate, up, down] = a.mlp_matrices(w.gated);
    let qkv = a.query() || a.key() || a.value();
    let fc1 = gate || up;
    let mlp = w.routed;
    // What the frozen base no longer keeps.
    layer.replicated -= e * lin * h * 2.0;
    layer.tp_split -= e * lin * (q + mlp * f) + w.permuted * lin * e * h;
    layer.mlp -= e * lin * mlp * f + w.permuted * lin * e * h;
    // What the adapters keep, in BF16.
    let on = |adapted: bool, width: f64| if adapted { 2.0 * e * width } else { 0.0 };
    layer.unsplit += on(qkv, h) + on(fc1, h);
    layer.tp_split += on(a.o, q) + mlp * on(down, f) + w.permuted * on(fc1, h);
    layer.mlp += mlp * on(down, f) + w.permuted * on(fc1, h);
}

/// LoRA on fewer than every Linear (`lora_targets`): a frozen Linear with
/// no adapter keeps no input for backward (its weight takes no gradient),
/// while PEFT casts each adapted one's input to the adapter's FP32 and keeps
/// a copy: under autocast the BF16 one autocast makes again, in pure BF16
/// the FP32 one itself. The layer profiles count every Linear's input as
/// all-linear LoRA keeps it; this is the part frozen Linears drop: q's, k's,
/// v's, gate's and up's input (h each), o's (q) and down's (f), at `lin`
/// bytes under autocast; in pure BF16 4 B for the attention's, the MLP's
/// being `lora_fp32_inputs`, which frozen MLPs do not add. Saved tensors of
/// a Llama of 2048 x 4 layers summed by PyTorch's `saved_tensors_hooks`, per
/// token and layer: autocast all-linear 169.4 KB, attention 140.9 KB
/// (-28.5 KB; here -24.6 KB), q,v 129.9 KB (-11.1 KB; here -8.2 KB); pure
/// BF16 all-linear 205.3 KB, attention 156.0 KB (-49.3 KB; here -49.2 KB),
/// q,v 137.4 KB (-18.6 KB; here -16.4 KB). The oracle's `lora_targets` rows.
pub(super) fn lora_frozen_inputs(arch: &Architecture, recipe: &Recipe, w: &Widths) -> f64 {
    if recipe.training.train == Training::Full || recipe.implementation.stack == Stack::Megatron {
        return 0.0;
    }
    let (attention, mlp) = lora_linear_inputs(w, recipe.adapted(arch), false);
    if recipe.numerics.precision == Precision::Bf16Pure && recipe.adapter_bytes() == 4.0 {
        4.0 * attention
    } else {
        w.lin * (attention + mlp)
    }
}

pub(super) fn profile_layer(recipe: &Recipe, w: &Widths) -> LayerActivations {
    match w.profile {
        Profile::HfFp32 => hf_fp32_layer(w),
        Profile::HfBf16 => hf_bf16_layer(w),
        Profile::HfAutocast => hf_autocast_layer(w),
        Profile::Megatron => megatron_layer(w, recipe.numerics.precision == Precision::Fp32),
    }
}

impl LayerActivations {
    /// `(1 - share) x self + share x other`, term by term.
    pub(super) fn blend(&self, other: &LayerActivations, share: f64) -> LayerActivations {
        let mix = |a: f64, b: f64| a + (b - a) * share;
        LayerActivations {
            tp_split: mix(self.tp_split, other.tp_split),
            replicated: mix(self.replicated, other.replicated),
            unsplit: mix(self.unsplit, other.unsplit),
            scores: mix(self.scores, other.scores),
            mlp: mix(self.mlp, other.mlp),
        }
    }
}

/// Megatron's selective recomputation of `--recompute-modules` beyond the
/// attention core: what each module then stops keeping, per token, in the
/// Megatron profile's terms (`megatron_layer`): MLA's q, k and v
/// (`mla_up_proj`); the routed experts' activation output, the second GEMM's
/// input (`moe_act`); the two norms' outputs the Linear layers read
/// (`layernorm`); a dense MLP's inner tensors on its dense layers (`mlp`).
pub(super) fn recompute_modules(
    layer: &mut LayerActivations,
    arch: &Architecture,
    recipe: &Recipe,
    w: &Widths,
) {
    let megatron = recipe.implementation.stack == Stack::Megatron;
    if !megatron || recipe.activations.checkpointing != Checkpointing::Selective {
        return;
    }
    let m = recipe.activations.recompute_modules;
    let e = if recipe.numerics.precision == Precision::Fp32 {
        2.0
    } else {
        1.0
    };
    let mut split = 0.0;
    let mut mlp = 0.0;
    if m.mla_up_proj && arch.mla.is_some() {
        split += e * (2.0 * w.q + 4.0 * w.kv);
    }
    if m.moe_act {
        mlp += e * w.lin * w.f * w.permuted * arch.moe_layer_share();
    }
    if m.mlp {
        let dense = if arch.moe.is_some() {
            1.0 - arch.moe_layer_share()
        } else {
            1.0
        };
        let inner = if w.gated { 4.0 } else { 2.0 } * arch.ffn as f64 + w.lin * arch.ffn as f64;
        mlp += e * dense * inner;
    }
    layer.tp_split = (layer.tp_split - split - mlp).max(0.0);
    layer.mlp = (layer.mlp - mlp).max(0.0);
    if m.layernorm {
        layer.replicated = (layer.replicated - e * w.lin * w.h * 2.0).max(0.0);
    }
}

/// MLA's saved tensors beyond q, k and v (which `q_width` / `kv_width`
/// carry): the down projections' outputs kept by their RMSNorms and the
/// decoupled RoPE key (compute dtype), and the normalised latents kept by
/// the up projections for their weight gradients (the Linear input dtype):
/// `e (r_q + r_kv + rope) + lin (r_q + r_kv)` per token (HF
/// `DeepseekV3Attention`, Megatron `MLASelfAttention`).
pub(super) fn mla_latents(arch: &Architecture, recipe: &Recipe, w: &Widths) -> f64 {
    let Some(m) = &arch.mla else {
        return 0.0;
    };
    let e = if recipe.numerics.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let (rq, rkv, rope) = (
        m.q_lora_rank as f64,
        m.kv_lora_rank as f64,
        m.qk_rope_dim as f64,
    );
    e * (rq + rkv + rope) + w.lin.max(e / 2.0) * (rq + rkv)
}

/// LoRA in pure BF16 (no autocast): PEFT casts an adapted Linear's input to
/// its fp32 adapters and the adapter's first matmul keeps that copy; the
/// oracle finds the MLP adapters' copies kept (4 B per element of every MLP
/// matrix's input) and attention's not (oracle rows
/// `*/lora/*precision=bf16-pure`). Under autocast the GEMM runs on the BF16
/// input the base layer keeps already.
pub(super) fn lora_fp32_inputs(arch: &Architecture, recipe: &Recipe, w: &Widths) -> f64 {
    // BF16 adapters take the BF16 input as it is.
    let pure = recipe.numerics.precision == Precision::Bf16Pure && recipe.adapter_bytes() == 4.0;
    let mlp_adapted = recipe.adapted(arch).any_mlp();
    if recipe.training.train == Training::Full
        || !pure
        || recipe.implementation.stack == Stack::Megatron
        || !mlp_adapted
    {
        return 0.0;
    }
    4.0 * w.routed * mlp_widths(w, recipe.adapted(arch), true).0
}

/// The input widths per token of the Linears LoRA adapts (`adapted`) or
/// leaves frozen (`!adapted`): attention's (q, k and v read the normed
/// hidden state, o attention's output) and the MLP's.
pub(super) fn lora_linear_inputs(
    w: &Widths,
    a: crate::model::architecture::Adapted,
    adapted: bool,
) -> (f64, f64) {
    let pick = |on: bool, width: f64| if on == adapted { width } else { 0.0 };
    (
        pick(a.query(), w.h) + pick(a.key(), w.h) + pick(a.value(), w.h) + pick(a.o, w.q),
        w.routed * mlp_widths(w, a, adapted).0,
    )
}

/// The input and output widths per token, summed, of the MLP matrices
/// that are adapted (`adapted`) or left frozen (`!adapted`): gate and up
/// read `h` and write `f`, down reads `f` and writes `h`.
pub(super) fn mlp_widths(
    w: &Widths,
    a: crate::model::architecture::Adapted,
    adapted: bool,
) -> (f64, f64) {
    let [gate, up, down] = a.mlp_matrices(w.gated);
    let mut widths = (0.0, 0.0);
    for (present, on, read, write) in [
        (w.gated, gate, w.h, w.f),
        (true, up, w.h, w.f),
        (true, down, w.f, w.h),
    ] {
        if present && on == adapted {
            widths.0 += read;
            widths.1 += write;
        }
    }
    widths
}

/// HF in fp32: RMSNorm saves its input (pow), the normalised value (weight
/// mul), and its output is saved by the next Linear: 3 x 4h
/// (memory_examples.csv, `precision=fp32` rows).
pub(super) fn hf_fp32_layer(w: &Widths) -> LayerActivations {
    let Widths { h, q, kv, a, f, .. } = *w;
    let norm = 12.0 * h;
    let attn = 4.0 * q + 8.0 * kv + 4.0 * q + 4.0 * a; // q, k, v, output, logsumexp
    let mlp = if w.gated { 16.0 * f } else { 8.0 * f };
    // Eager attention repeats the KV heads (and keeps no log-sum-exp); so does
    // FP32 SDPA: no fused kernel takes grouped heads in FP32 (train.py's
    // `attention_as_planned`), and the efficient kernel keeps the repeated k, v.
    let kv_rep = if w.eager {
        8.0 * (q - kv) - 4.0 * a
    } else {
        8.0 * (q - kv)
    };
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + w.routed * mlp + w.router + 8.0 * w.qk_norm,
        mlp: w.routed * mlp + w.router,
        replicated: 2.0 * norm + w.extra_norms * 8.0 * h,
        scores: if w.eager { 4.0 * a * w.seq } else { 0.0 },
    }
}

/// HF with bf16 compute weights (pure bf16, or FSDP's bf16 policy): RMSNorm
/// upcasts to fp32 (saved by pow: 4h), saves the bf16 normalised value (2h),
/// and its bf16 output is saved by the Linears (2h) (memory_examples.csv,
/// `precision=bf16` rows).
pub(super) fn hf_bf16_layer(w: &Widths) -> LayerActivations {
    let Widths {
        h,
        q,
        kv,
        a,
        f,
        lin,
        ..
    } = *w;
    // Gemma: 4h of fp32 input and 4h of fp32 normalised value (oracle rows `gemma-2-2b/*`)
    let norm = if w.gemma_norm { 8.0 * h } else { 6.0 * h } + lin * h;
    let attn = 2.0 * q + 4.0 * kv + lin * q + 4.0 * a;
    let mlp = if w.gated {
        6.0 * f + lin * f
    } else {
        2.0 * f + lin * f
    };
    let kv_rep = if w.eager {
        4.0 * (q - kv) - 4.0 * a
    } else {
        0.0
    };
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + w.routed * mlp + w.router + 6.0 * w.qk_norm,
        mlp: w.routed * mlp + w.router,
        replicated: 2.0 * norm + w.extra_norms * 8.0 * h,
        // fp32 softmax output + its bf16 cast used by the matmul with v
        scores: if w.eager { 6.0 * a * w.seq } else { 0.0 },
    }
}

/// HF fp32 params under bf16 autocast: fp32 residual; each norm saves its
/// fp32 input and normalised value (8h); autocast casts the norm output to
/// bf16 once per consuming Linear (q, k, v: 3 casts; gate, up: 2), each
/// saved (memory_examples.csv, `precision=mixed` rows).
pub(super) fn hf_autocast_layer(w: &Widths) -> LayerActivations {
    let Widths {
        h,
        q,
        kv,
        a,
        f,
        lin,
        ..
    } = *w;
    let cast = lin;
    let attn_norm = 8.0 * h + 3.0 * cast * h;
    let mlp_norm = 8.0 * h + if w.gated { 2.0 } else { 1.0 } * cast * h;
    let attn = 2.0 * q + 4.0 * kv + cast * q + 4.0 * a;
    let mlp = if w.gated {
        6.0 * f + cast * f
    } else {
        2.0 * f + cast * f
    };
    let kv_rep = if w.eager {
        4.0 * (q - kv) - 4.0 * a
    } else {
        0.0
    };
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + w.routed * mlp + w.router + 8.0 * w.qk_norm,
        mlp: w.routed * mlp + w.router,
        replicated: attn_norm + mlp_norm + w.extra_norms * 10.0 * h,
        scores: if w.eager { 6.0 * a * w.seq } else { 0.0 },
    }
}

/// Megatron-Core / TransformerEngine (Korthikanti et al. 2022 without
/// dropout): LayerNormLinear saves the norm input (2h) and its output for
/// the weight gradient (2h, FP8: 1h); flash attention saves q, k, v, output
/// and logsumexp; SwiGLU saves fc1's output (2 x 2f) and fc2 saves the
/// activation (2f, FP8: 1f).
pub(super) fn megatron_layer(w: &Widths, fp32: bool) -> LayerActivations {
    let Widths {
        h,
        q,
        kv,
        a,
        f,
        lin,
        ..
    } = *w;
    let e = if fp32 { 2.0 } else { 1.0 };
    let norms = e * (2.0 * h + lin * h) * 2.0;
    let attn = e * (2.0 * q + 4.0 * kv + lin * q) + 4.0 * a;
    let mlp = e * if w.gated {
        4.0 * f + lin * f
    } else {
        2.0 * f + lin * f
    };
    let kv_rep = if w.eager { 4.0 * (q - kv) } else { 0.0 };
    // The permuted tokens the experts' first grouped GEMM keeps for its
    // weight gradient, one copy per routed expert, in the Linear input
    // dtype. Megatron applies the router's probabilities inside the
    // activation (`TEGroupedMLP`), so the combine keeps nothing more.
    let permuted = w.permuted * lin * e * h;
    let mlp_total = w.routed * mlp + w.router + permuted;
    LayerActivations {
        unsplit: 0.0,
        tp_split: attn + kv_rep + mlp_total + 4.0 * w.qk_norm,
        mlp: mlp_total,
        replicated: norms + w.extra_norms * 4.0 * h,
        // Unfused attention (`--attention-backend unfused`), no dropout: the
        // fused scale-mask-softmax keeps its output (compute dtype), which
        // the product with v saves too (one copy); the raw scores are freed
        // after it (megatron/core/transformer/dot_product_attention.py,
        // fusions/fused_softmax.py). Korthikanti et al.'s 5as adds dropout's.
        scores: if w.eager { 2.0 * e * a * w.seq } else { 0.0 },
    }
}

/// SDPA turns a boolean mask into an additive one in the compute dtype and
/// keeps it for backward: `2 x s` bytes per token on each sliding-window
/// layer, averaged over the layers (oracle rows `gemma-2-2b/*` at 8K tokens).
pub(super) fn sliding_window_float_mask(arch: &Architecture, recipe: &Recipe) -> f64 {
    if !sliding_window_masked(arch, recipe) {
        return 0.0;
    }
    let share = arch.local_layers.min(arch.layers) as f64 / arch.layers.max(1) as f64;
    2.0 * recipe.data.seq as f64 * share
}

/// Transformers builds masks for SDPA only when some layer's sliding window
/// is shorter than the sequence (otherwise SDPA runs causal, mask-free).
pub(super) fn sliding_window_masked(arch: &Architecture, recipe: &Recipe) -> bool {
    let w = arch.sliding_window;
    recipe.implementation.stack != Stack::Megatron
        && recipe.implementation.attention != Attention::Eager
        && w > 0
        && w < recipe.data.seq
        && arch.local_layers > 0
}
