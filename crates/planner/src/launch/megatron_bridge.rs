//! A Megatron plan's launcher settings for Megatron-Bridge (#37): every
//! setting the planner assumed, grouped by the configuration class that
//! takes it, written to `megatron_bridge_plan.json` beside the bundle's
//! static `pretrain_megatron_bridge.py` (crates/planner/bundle/).
//!
//! The names are the pinned packages' own: Megatron-Core 0.16.1's
//! `TransformerConfig` / `MLATransformerConfig`, `OptimizerConfig` and
//! `DistributedDataParallelConfig`, and Megatron-Bridge 0.3.1's
//! `GPTModelProvider`, `MixedPrecisionConfig`, `TrainingConfig`,
//! `GPTDatasetConfig` and `CommOverlapConfig`. tests/megatron/check.py
//! builds the Megatron-Core ones from every exported file on a CPU and reads
//! the Megatron-Bridge ones' fields from the pinned wheel's source.

use crate::estimate::report::Report;
use crate::formats::json_writer::Value;
use crate::model::architecture::rope::{Rope, RopeKind};
use crate::model::architecture::{Adapted, Architecture, Mlp, QkNorm};
use crate::model::plan::{Attention, Checkpointing, Loss, Optimizer, Plan, Precision};

/// An object's members, in the order they are built (written sorted).
type Members = Vec<(&'static str, Value)>;

/// The launcher's file name under the bundle's `scripts/`.
pub const SCRIPT: &str = crate::model::plan::MEGATRON_BRIDGE_SCRIPT;
/// The settings file the launcher reads, beside it.
pub const SETTINGS_FILE: &str = "megatron_bridge_plan.json";
/// The learning rate the launcher trains with (constant; the planner does
/// not model schedules), as the bundle's train.py.
const LEARNING_RATE: f64 = 3e-4;

/// Every group of the settings file, as JSON.
pub fn settings(plan: &Plan, r: &Report) -> Value {
    let arch = &r.architecture;
    let errors: Vec<String> = r.errors.iter().map(|e| e.code().to_string()).collect();
    // Megatron-Bridge's CommOverlapConfig sets the data- and expert-parallel
    // overlap flags itself when it is present: it is given the plan's.
    let comm_overlap = if plan.parallelism.tp_overlap {
        Value::Obj(vec![
            ("tp_comm_overlap", true.into()),
            ("overlap_grad_reduce", plan.parallelism.overlap.into()),
            (
                "overlap_param_gather",
                (plan.parallelism.overlap && plan.parallelism.zero >= 1).into(),
            ),
            (
                "overlap_moe_expert_parallel_comm",
                plan.parallelism.ep_overlap.into(),
            ),
        ])
    } else {
        Value::Null
    };
    let train = vec![
        ("micro_batch_size", plan.data.micro_batch.into()),
        (
            "global_batch_size",
            (plan.data.micro_batch * plan.data.grad_accum * r.layout.dp).into(),
        ),
        ("train_iters", r.time.steps.into()),
    ];
    Value::Obj(vec![
        ("plan", plan.to_query().into()),
        ("unsupported", unsupported(plan, &r.architecture).into()),
        // A plan with errors was resolved to something else (pp=1 where
        // PP did not divide the layers): the launcher refuses it.
        ("errors", errors.into()),
        ("mla", arch.mla.is_some().into()),
        ("model", Value::Obj(model(plan, r))),
        ("model_precision", Value::Obj(model_precision(plan, arch))),
        ("provider", Value::Obj(provider(plan, arch))),
        ("yarn", yarn(arch)),
        ("mixed_precision", Value::Obj(mixed_precision(plan, arch))),
        ("optimizer", Value::Obj(optimizer(plan))),
        ("ddp", Value::Obj(ddp(plan, r))),
        ("train", Value::Obj(train)),
        (
            "dataset",
            Value::Obj(vec![("sequence_length", plan.data.seq.into())]),
        ),
        ("comm_overlap", comm_overlap),
        ("peft", peft(plan, arch)),
        // The Hugging Face weights a PEFT plan starts from (converted to
        // Megatron's format by the launcher unless one is given).
        (
            "hf_model",
            crate::launch::export::model_id(plan, r)
                .map(str::to_string)
                .into(),
        ),
        // None: no checkpoints, as the planner's save_every=0 models.
        (
            "save_interval",
            (plan.saving.save_every > 0)
                .then_some(plan.saving.save_every)
                .into(),
        ),
    ])
}

/// Megatron-Bridge's PEFT for a LoRA plan (None for full training): its
/// `LoRA` on Megatron-Core's fused modules (`linear_qkv` adapts q, k and v
/// as one, `linear_fc1` gate and up) where the plan's targets take whole
/// fused modules, else its `CanonicalLoRA`, which adapts q, k, v, gate and
/// up one by one, as PEFT does; MLA's projections by Megatron-Core's names
/// (`Recipe::adapted` fuses gate and up there). Rank, alpha and no dropout,
/// as the planner models them.
fn peft(plan: &Plan, a: &Architecture) -> Value {
    if plan.training.train == crate::model::plan::Training::Full {
        return Value::Null;
    }
    let (class, modules) = lora_modules(plan.recipe().adapted(a), a);
    Value::Obj(vec![
        ("class", class.into()),
        (
            "target_modules",
            Value::List(modules.into_iter().map(Value::from).collect()),
        ),
        ("dim", plan.lora.lora_rank.into()),
        ("alpha", plan.recipe().lora_alpha_or_default().into()),
        ("dropout", Value::Num(0.0)),
    ])
}

/// Megatron-Bridge's PEFT class and Megatron-Core's module names for the
/// adapted Linears (`peft`).
fn lora_modules(ad: Adapted, a: &Architecture) -> (&'static str, Vec<&'static str>) {
    let pick = |list: &[(bool, &'static str)]| -> Vec<&'static str> {
        list.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect()
    };
    let fc1 = ad.gate || ad.up;
    if a.mla.is_some() {
        let names = pick(&[
            (ad.q, "linear_q_proj"),
            (ad.q_a, "linear_q_down_proj"),
            (ad.q_b, "linear_q_up_proj"),
            (ad.kv_a, "linear_kv_down_proj"),
            (ad.kv_b, "linear_kv_up_proj"),
            (ad.o, "linear_proj"),
            (fc1, "linear_fc1"),
            (ad.down, "linear_fc2"),
        ]);
        return ("LoRA", names);
    }
    if ad.fused {
        let names = pick(&[
            (ad.q, "linear_qkv"),
            (ad.o, "linear_proj"),
            (fc1, "linear_fc1"),
            (ad.down, "linear_fc2"),
        ]);
        return ("LoRA", names);
    }
    let names = pick(&[
        (ad.q, "linear_q"),
        (ad.k, "linear_k"),
        (ad.v, "linear_v"),
        (ad.o, "linear_proj"),
        (ad.up, "linear_fc1_up"),
        (ad.gate && a.mlp.is_gated(), "linear_fc1_gate"),
        (ad.down, "linear_fc2"),
    ]);
    ("CanonicalLoRA", names)
}

/// What a Megatron plan asks for that the launcher does not run, in the
/// plan's own words, or `None` when it runs all of it (the launcher starts
/// only from the bundle's default entry). The planner's error
/// `megatron_launcher_refuses` holds the same rule (`launchers`).
pub fn unsupported(plan: &Plan, a: &Architecture) -> Option<&'static str> {
    use crate::estimate::launchers::{megatron_refusal, Choice};
    megatron_refusal(plan, a, Choice::of(plan)).map(|r| r.what.english())
}

/// Sliding-window attention and attention sinks as Megatron-Core takes
/// them (gpt_oss_bridge.py in Megatron-Bridge: `window_size = (W, 0)`,
/// `window_attn_skip_freq = N` for one full-attention layer after N - 1
/// windowed ones, `softmax_type = "learnable"` for a learned sink per head).
fn attention_window(a: &Architecture) -> Members {
    let mut m = Vec::new();
    if a.sliding_window > 0 && a.local_layers > 0 {
        let window = vec![Value::Int(a.sliding_window), Value::Int(0)];
        m.push(("window_size", Value::List(window)));
        let global = a.layers.saturating_sub(a.local_layers);
        if let Some(every) = a.layers.checked_div(global) {
            m.push(("window_attn_skip_freq", Value::Int(every)));
        }
    }
    if a.attn_sinks {
        m.push(("softmax_type", Value::from("learnable")));
    }
    m
}

/// The settings file's text.
pub fn settings_text(plan: &Plan, r: &Report) -> String {
    settings(plan, r).pretty() + "\n"
}

/// `TransformerConfig`: shape, parallel layout, recomputation, MoE, MLA,
/// offloading and the fused loss.
fn model(plan: &Plan, r: &Report) -> Members {
    let mut m = shape(&r.architecture);
    m.extend(layout(plan, r));
    m.extend(recompute(plan, r));
    m.extend(offload(plan, r));
    m.extend(moe(plan, &r.architecture));
    if plan.training.mtp > 0 {
        m.push(("mtp_num_layers", Value::from(plan.training.mtp)));
    }
    // The planner models no dropout (Megatron's default is 0.1 for both).
    m.push(("hidden_dropout", Value::Num(0.0)));
    m.push(("attention_dropout", Value::Num(0.0)));
    m.push(("tp_comm_overlap", Value::from(plan.parallelism.tp_overlap)));
    m.push((
        "cross_entropy_loss_fusion",
        Value::from(plan.implementation.loss == Loss::Fused),
    ));
    if plan.implementation.attention == Attention::Eager {
        m.push(("attention_backend", Value::from("unfused")));
    }
    m
}

fn shape(a: &Architecture) -> Members {
    let sizes = [
        ("num_layers", a.layers),
        ("hidden_size", a.hidden),
        ("num_attention_heads", a.heads),
        ("num_query_groups", a.kv_heads),
        ("kv_channels", a.head_dim),
        ("ffn_hidden_size", a.ffn),
    ];
    let mut m: Members = sizes.map(|(k, v)| (k, Value::Int(v))).into();
    let activation = if a.mlp == Mlp::Swiglu { "silu" } else { "gelu" };
    m.push(("activation_func", activation.into()));
    m.push(("normalization", "RMSNorm".into()));
    let flags = [
        ("gated_linear_unit", a.mlp.is_gated()),
        ("add_bias_linear", a.mlp_bias || a.o_bias),
        ("add_qkv_bias", a.qkv_bias),
        ("qk_layernorm", a.qk_norm != QkNorm::None),
    ];
    m.extend(flags.map(|(k, v)| (k, Value::Bool(v))));
    m.extend(attention_window(a));
    if let Some(mla) = &a.mla {
        m.push(("multi_latent_attention", true.into()));
        let ranks = [
            ("q_lora_rank", mla.q_lora_rank),
            ("kv_lora_rank", mla.kv_lora_rank),
            ("qk_head_dim", mla.qk_nope_dim),
            ("qk_pos_emb_head_dim", mla.qk_rope_dim),
            ("v_head_dim", mla.v_head_dim),
        ];
        m.extend(ranks.map(|(k, v)| (k, Value::Int(v))));
        m.extend(mla_rope(&a.rope));
    }
    m
}

/// MLA's rotary embeddings in `MLATransformerConfig` (whose defaults are
/// DeepSeek-V3's but for `mscale_all_dim`, 0.0 there and 1.0 in its
/// config.json): the base, and YaRN's factor, original context, betas and
/// mscales where the config scales.
fn mla_rope(rope: &Rope) -> Members {
    let mut m = vec![("rotary_base", Value::Num(rope.theta))];
    let Some(s) = rope.scaling.filter(|s| s.kind == RopeKind::Yarn) else {
        m.push(("rope_type", "rope".into()));
        return m;
    };
    m.push(("rope_type", "yarn".into()));
    m.push(("rotary_scaling_factor", Value::Num(s.factor)));
    if let Some(n) = s.original_context {
        m.push(("original_max_position_embeddings", Value::Int(n)));
    }
    let floats = [
        ("beta_fast", s.beta_fast),
        ("beta_slow", s.beta_slow),
        ("mscale", s.mscale),
        ("mscale_all_dim", s.mscale_all_dim),
    ];
    m.extend(
        floats
            .into_iter()
            .filter_map(|(k, v)| Some((k, Value::Num(v?)))),
    );
    m
}

/// The GPT model's rotary embeddings in `GPTModelProvider`: the base (an
/// integer there), Llama 3.1's scaling (`rope_scaling`, its factor), or
/// YaRN's position embedding, whose settings `yarn` gives.
fn gpt_rope(rope: &Rope) -> Members {
    let base = if rope.theta.fract() == 0.0 {
        Value::Int(rope.theta as u64)
    } else {
        Value::Num(rope.theta)
    };
    let kind = rope.scaling.map(|s| s.kind);
    let position = if kind == Some(RopeKind::Yarn) {
        "yarn"
    } else {
        "rope"
    };
    let mut m = vec![
        ("position_embedding_type", position.into()),
        ("rotary_base", base),
    ];
    if let Some(s) = rope.scaling.filter(|s| s.kind == RopeKind::Llama3) {
        m.push(("rope_scaling", true.into()));
        m.push(("rope_scaling_factor", Value::Num(s.factor)));
    }
    m
}

/// YaRN's settings on a GPT model, which Megatron-Core's `GPTModel` reads
/// from its config by name (`getattr(self.config, "yarn_...")`) and
/// Megatron-Bridge's generic provider does not declare: the launcher sets
/// them on it, as gpt_oss_bridge.py does.
fn yarn(a: &Architecture) -> Value {
    let Some(s) = a
        .rope
        .scaling
        .filter(|s| s.kind == RopeKind::Yarn && a.mla.is_none())
    else {
        return Value::Null;
    };
    // Transformers' defaults where the config leaves them out: betas 32 and
    // 1, the original context the model's own (`_compute_yarn_parameters`).
    Value::Obj(vec![
        ("yarn_rotary_scaling_factor", Value::Num(s.factor)),
        (
            "yarn_original_max_position_embeddings",
            Value::Int(s.original_context.unwrap_or(a.max_context)),
        ),
        ("yarn_beta_fast", Value::Num(s.beta_fast.unwrap_or(32.0))),
        ("yarn_beta_slow", Value::Num(s.beta_slow.unwrap_or(1.0))),
        ("yarn_mscale", s.mscale.into()),
        ("yarn_mscale_all_dim", s.mscale_all_dim.into()),
        (
            "yarn_correction_range_round_to_int",
            s.truncate.unwrap_or(true).into(),
        ),
    ])
}

/// The parallel degrees and the pipeline's first and last stages.
fn layout(plan: &Plan, r: &Report) -> Members {
    let l = &r.layout;
    let mut m = Vec::new();
    m.push(("tensor_model_parallel_size", Value::from(l.tp)));
    m.push(("pipeline_model_parallel_size", Value::from(l.pp)));
    let vp = (plan.parallelism.vp > 1 && l.pp > 1).then_some(plan.parallelism.vp);
    m.push(("virtual_pipeline_model_parallel_size", Value::from(vp)));
    m.push(("context_parallel_size", Value::from(l.cp)));
    m.push(("expert_model_parallel_size", Value::from(l.ep)));
    if l.expert_tensor_parallel() == Some(1) && l.tp > 1 {
        // EP takes the TP ranks too: the experts unsplit (Megatron-Core's default is ETP = TP).
        m.push(("expert_tensor_parallel_size", Value::from(1u64)));
    }
    m.push((
        "sequence_parallel",
        Value::from(plan.parallelism.sp && l.tp > 1),
    ));
    if l.pp > 1 {
        m.extend(stage_ends(l, vp.unwrap_or(1), plan.training.mtp));
    }
    m
}

/// The pipeline's first and last stages as the planner laid them out:
/// with the embedding and the loss each counted as a layer's slot
/// (Megatron's `account_for_*_in_pipeline_split`), or with their own layer
/// counts where they differ from the middle stages'.
fn stage_ends(l: &crate::model::layout::Layout, vp: u64, mtp: u64) -> Members {
    let s = &l.stages;
    let mut m = Vec::new();
    let per_rank = s.per_rank(l.pp);
    let uneven_chunks = vp > 1 && per_rank.iter().any(|n| !n.is_multiple_of(vp));
    if uneven_chunks && !s.embedding_and_loss_slots {
        // Megatron-Core wants every rank's count a multiple of VP with the
        // first/last counts: a layout string places any (as the DeepSeek-V3
        // recipes do).
        let layout = pipeline_layout(s, l.pp, vp, mtp);
        m.push(("pipeline_model_parallel_layout", Value::from(layout)));
    } else if s.embedding_and_loss_slots {
        m.push(("account_for_embedding_in_pipeline_split", Value::from(true)));
        m.push(("account_for_loss_in_pipeline_split", Value::from(true)));
    } else if s.first != s.middle || s.last != s.middle {
        m.push(("num_layers_in_first_pipeline_stage", Value::from(s.first)));
        m.push(("num_layers_in_last_pipeline_stage", Value::from(s.last)));
    }
    m
}

/// Megatron-Core's `pipeline_model_parallel_layout` for the planner's
/// stages: virtual stage `i` runs on rank `i mod pp` (chunk `i / pp`), the
/// embedding (`E`) opens the first, the MTP layers (`m`) and the loss (`L`)
/// close the last; each rank's layers (`t`) split over its chunks as evenly
/// as they go, the odd ones away from the embedding and the loss. E.g.
/// DeepSeek-V3's 61 layers on PP 8 x VP 4 with 7 and 6 at the ends:
/// `Et|tt|...|tt|tt|tt|t|tmL` (rank 0's chunks 1, 2, 2, 2 layers, rank 7's
/// 2, 2, 1, 1); NVIDIA's recipe writes `Et|(tt|)*30mL`, the same counts
/// per rank.
pub fn pipeline_layout(s: &crate::model::layout::Stages, pp: u64, vp: u64, mtp: u64) -> String {
    let layers = s.per_rank(pp);
    let chunks = |rank: u64| {
        let n = layers[rank as usize];
        let (base, extra) = (n / vp, n % vp);
        // The first rank's odd layers go to its later chunks, the others' to their earlier ones.
        let gets_extra = move |c: u64| {
            if rank == 0 {
                c >= vp - extra
            } else {
                c < extra
            }
        };
        (0..vp).map(move |c| base + gets_extra(c) as u64)
    };
    let per_rank: Vec<Vec<u64>> = (0..pp).map(|r| chunks(r).collect()).collect();
    let stages = pp * vp;
    (0..stages)
        .map(|i| {
            let layers = per_rank[(i % pp) as usize][(i / pp) as usize];
            let mut stage = if i == 0 {
                "E".to_string()
            } else {
                String::new()
            };
            stage.push_str(&"t".repeat(layers as usize));
            if i + 1 == stages {
                stage.push_str(&"m".repeat(mtp as usize));
                stage.push('L');
            }
            stage
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// Megatron-Core's activation offloading (`--cpu-offloading-num-layers`):
/// the layers the memory model offloads, activations only.
fn offload(plan: &Plan, r: &Report) -> Members {
    if !plan.activations.offload {
        return Vec::new();
    }
    let layers =
        crate::model::memory::offloaded_layer_count(&plan.recipe(), r.architecture.layers as f64);
    vec![
        ("cpu_offloading", true.into()),
        ("cpu_offloading_num_layers", (layers as u64).into()),
        ("cpu_offloading_activations", true.into()),
        ("cpu_offloading_weights", false.into()),
    ]
}

/// `--recompute-granularity`, its method and layers, and the modules.
fn recompute(plan: &Plan, r: &Report) -> Members {
    // Megatron's block recomputation counts layers per model chunk: a
    // stage's layers over its virtual stages.
    let vp = if r.layout.pp > 1 {
        plan.parallelism.vp.max(1)
    } else {
        1
    };
    let per_chunk = r.architecture.layers.div_ceil(r.layout.pp.max(1) * vp);
    let mut m = Vec::new();
    let (granularity, method, layers): (Option<&str>, Option<&str>, Option<u64>) =
        match plan.activations.checkpointing {
            Checkpointing::Full => (Some("full"), Some("uniform"), Some(1)),
            Checkpointing::Fraction(f) => {
                let n = ((f * per_chunk as f64).round() as u64).clamp(1, per_chunk);
                (Some("full"), Some("block"), Some(n))
            }
            Checkpointing::Selective => (Some("selective"), None, None),
            Checkpointing::None | Checkpointing::Op => (None, None, None),
        };
    m.push(("recompute_granularity", Value::from(granularity)));
    m.push(("recompute_method", Value::from(method)));
    m.push(("recompute_num_layers", Value::from(layers)));
    if plan.activations.checkpointing == Checkpointing::Selective {
        let key = plan.activations.recompute_modules.key();
        let modules: Vec<&str> = if key == "none" {
            Vec::new()
        } else {
            key.split(',').collect()
        };
        m.push(("recompute_modules", Value::from(modules)));
    }
    m
}

/// Experts, routing, the dispatcher and its CUDA graphs.
fn moe(plan: &Plan, a: &Architecture) -> Members {
    let mut m = Vec::new();
    let Some(moe) = &a.moe else {
        return m;
    };
    m.push(("num_moe_experts", Value::from(moe.experts)));
    m.push(("moe_router_topk", Value::from(moe.active)));
    m.push(("moe_ffn_hidden_size", Value::from(moe.expert_ffn)));
    if moe.shared > 0 {
        let shared = moe.shared as u64 * moe.expert_ffn;
        m.push(("moe_shared_expert_intermediate_size", Value::from(shared)));
    }
    if moe.dense_layers > 0 {
        // The first `dense_layers` layers dense (DeepSeek's first_k_dense_replace).
        let freq: Vec<u64> = (0..a.layers)
            .map(|i| u64::from(i >= moe.dense_layers))
            .collect();
        m.push(("moe_layer_freq", Value::from(freq)));
    }
    m.push(("moe_grouped_gemm", Value::from(true)));
    let dispatcher = if plan.moe.moe_flex {
        "flex"
    } else {
        "alltoall"
    };
    m.push(("moe_token_dispatcher_type", Value::from(dispatcher)));
    if plan.moe.moe_flex {
        m.push(("moe_flex_dispatcher_backend", Value::from("deepep")));
    }
    m.push((
        "overlap_moe_expert_parallel_comm",
        Value::from(plan.parallelism.ep_overlap),
    ));
    if plan.moe.moe_graphs {
        m.push(("cuda_graph_impl", Value::from("transformer_engine")));
        m.push((
            "cuda_graph_scope",
            Value::from(vec!["moe_router", "moe_preprocess"]),
        ));
    }
    m
}

/// BF16 layers an NVFP4 plan keeps at the end (`plan::NVFP4_BF16_LAYER_SHARE`).
fn nvfp4_bf16_layers(a: &Architecture) -> u64 {
    (crate::model::plan::NVFP4_BF16_LAYER_SHARE * a.layers as f64).round() as u64
}

/// FP8 parameter gathers, which Megatron runs only under an FP8 recipe.
fn fp8_params(plan: &Plan) -> bool {
    plan.numerics.fp8_params && matches!(plan.numerics.precision, Precision::Fp8 | Precision::Mxfp8)
}

fn dtype(plan: &Plan) -> &'static str {
    if plan.numerics.precision == Precision::Fp32 {
        "torch.float32"
    } else {
        "torch.bfloat16"
    }
}

/// `(fp8, fp8_recipe, fp4)`: TransformerEngine's FP8 with current
/// (tensorwise) scaling, MXFP8 block scaling, or NVFP4.
fn low_precision(
    p: Precision,
) -> (
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
) {
    match p {
        Precision::Fp8 => (Some("hybrid"), Some("tensorwise"), None),
        Precision::Mxfp8 => (Some("hybrid"), Some("mxfp8"), None),
        Precision::Nvfp4 => (None, None, Some("e2m1")),
        _ => (None, None, None),
    }
}

/// Megatron-Bridge's `MixedPrecisionConfig`, which it applies to the model,
/// the optimizer and the DDP config.
fn mixed_precision(plan: &Plan, a: &Architecture) -> Members {
    let mut m = precision(plan, a);
    m.push(("autocast_enabled", false.into()));
    m.push(("grad_reduce_in_fp32", (!plan.numerics.grad_bf16).into()));
    m.push(("fp8_param_gather", fp8_params(plan).into()));
    if fp8_params(plan) && plan.numerics.precision == Precision::Mxfp8 {
        // MXFP8 gathers reuse the gradient buffer (Megatron-Bridge asserts it).
        m.push(("reuse_grad_buf_for_mxfp8_param_ag", true.into()));
    }
    m
}

/// The same precision in `TransformerConfig`'s names, for `--check`.
fn model_precision(plan: &Plan, a: &Architecture) -> Members {
    let mut m = precision(plan, a);
    m.push(("fp8_param", fp8_params(plan).into()));
    m
}

/// What both precision groups name alike: the dtypes, the FP8 or FP4
/// format and its recipe.
fn precision(plan: &Plan, a: &Architecture) -> Members {
    let (fp8, _, fp4) = low_precision(plan.numerics.precision);
    let mut m = vec![
        ("bf16", (plan.numerics.precision != Precision::Fp32).into()),
        ("params_dtype", dtype(plan).into()),
        ("pipeline_dtype", dtype(plan).into()),
        ("fp8", fp8.into()),
        ("fp4", fp4.into()),
    ];
    m.extend(recipes(plan, a));
    m
}

/// The FP8 recipe, or NVFP4's with its BF16 layers at the end.
fn recipes(plan: &Plan, a: &Architecture) -> Members {
    let (_, recipe, fp4) = low_precision(plan.numerics.precision);
    let mut m = Vec::new();
    if let Some(recipe) = recipe {
        m.push(("fp8_recipe", recipe.into()));
    }
    if fp4.is_some() {
        m.push(("fp4_recipe", "nvfp4".into()));
        m.push(("first_last_layers_bf16", true.into()));
        m.push(("num_layers_at_start_in_bf16", 0u64.into()));
        m.push(("num_layers_at_end_in_bf16", nvfp4_bf16_layers(a).into()));
    }
    m
}

/// `GPTModelProvider` beyond `TransformerConfig`.
fn provider(plan: &Plan, a: &Architecture) -> Members {
    let mut m = vec![
        ("seq_length", plan.data.seq.into()),
        ("vocab_size", a.vocab.into()),
        ("share_embeddings_and_output_weights", a.tied.into()),
    ];
    if a.mla.is_none() {
        m.extend(gpt_rope(&a.rope));
    } else {
        m.push(("position_embedding_type", "rope".into()));
    }
    m
}

/// `OptimizerConfig`: Adam with decoupled weight decay (Megatron's "adam"
/// is AdamW), the distributed optimizer, bf16 moments.
fn optimizer(plan: &Plan) -> Members {
    let name = if plan.training.optimizer == Optimizer::Sgd {
        "sgd"
    } else {
        "adam"
    };
    let mut m = vec![
        ("optimizer", name.into()),
        ("lr", LEARNING_RATE.into()),
        ("min_lr", LEARNING_RATE.into()),
        ("weight_decay", 0.1.into()),
        ("clip_grad", 1.0.into()),
        ("bf16", (plan.numerics.precision != Precision::Fp32).into()),
        (
            "use_distributed_optimizer",
            (plan.parallelism.zero >= 1).into(),
        ),
    ];
    if plan.numerics.bf16_moments {
        m.push(("use_precision_aware_optimizer", true.into()));
        m.push(("exp_avg_dtype", "torch.bfloat16".into()));
        m.push(("exp_avg_sq_dtype", "torch.bfloat16".into()));
    }
    m
}

/// `DistributedDataParallelConfig`: the distributed optimizer (ZeRO 1),
/// Megatron-FSDP (ZeRO 2 and 3), overlap, gradient dtype, FP8 gathers.
fn ddp(plan: &Plan, r: &Report) -> Members {
    let strategy = match plan.parallelism.zero {
        2 => "optim_grads",
        3 => "optim_grads_params",
        _ => "no_shard",
    };
    let mut m = vec![
        (
            "use_distributed_optimizer",
            (plan.parallelism.zero >= 1).into(),
        ),
        ("use_megatron_fsdp", (plan.parallelism.zero >= 2).into()),
        ("data_parallel_sharding_strategy", strategy.into()),
        ("overlap_grad_reduce", plan.parallelism.overlap.into()),
        (
            "overlap_param_gather",
            (plan.parallelism.overlap && plan.parallelism.zero >= 1).into(),
        ),
        ("grad_reduce_in_fp32", (!plan.numerics.grad_bf16).into()),
        ("fp8_param_gather", fp8_params(plan).into()),
        ("average_in_collective", true.into()),
    ];
    // Hybrid sharding: the distributed optimizer in dp / shard instances.
    let (dp, shard) = (r.layout.dp, r.layout.shard.max(1));
    if shard < dp && dp.is_multiple_of(shard) {
        m.push(("num_distributed_optimizer_instances", (dp / shard).into()));
    }
    m
}
