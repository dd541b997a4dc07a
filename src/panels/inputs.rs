//! Every input of the plan, grouped as a user thinks about a job.
//! Each field writes through `Ctx::set`, i.e. through the URL parser.

use crate::ctx::Ctx;
use crate::format::{num, tr};
use crate::worker::{failure, Read};
use leptos::prelude::*;
use planner::model::architecture::{presets, ConfigError, Mlp};
use planner::model::hardware::{gpu, instances, PriceBasis};
use planner::model::plan::{read_config_reply, Checkpointing, Plan, Stack};
use planner::text::{render, Lang, Text};

type Label = Text;
/// A custom-architecture field: URL key, label, and the resolved value shown.
type ArchField = (
    &'static str,
    Label,
    fn(&planner::model::architecture::Architecture) -> u64,
);

#[component]
pub fn Inputs(ctx: Ctx) -> impl IntoView {
    view! {
        <form class="inputs" aria-label=move || tr(ctx.lang.get(), Text::PlanForm) on:submit=|ev| ev.prevent_default()>
            <fieldset>{model_inputs(ctx)}</fieldset>
            <fieldset>{batch_inputs(ctx)}</fieldset>
            <fieldset>{precision_inputs(ctx)}</fieldset>
            <fieldset>{parallel_inputs(ctx)}</fieldset>
            <fieldset>{hardware_inputs(ctx)}</fieldset>
            <fieldset>{saving_inputs(ctx)}</fieldset>
        </form>
    }
}

/// The model: a preset, a size, a custom shape or a pasted config.json.
fn model_inputs(ctx: Ctx) -> impl IntoView {
    view! {
        <legend>{ctx.t(Text::Model)}</legend>
        <ModelPicker ctx=ctx />
        <NumberField ctx=ctx key="params_b" label=Text::OrAboutNBillionParameters
            step="any" get=|p| p.model.params_b.map(|b| b.to_string()).unwrap_or_default() />
        <details class="custom-arch">
            <summary>{ctx.t(Text::CustomArchitecture)}</summary>
            <ArchFields ctx=ctx />
        </details>
        <ConfigPaste ctx=ctx />
    }
}

/// Sequence length, batch, tokens and the kind of training.
fn batch_inputs(ctx: Ctx) -> impl IntoView {
    view! {
        <legend>{ctx.t(Text::DataAndBatch)}</legend>
        <SeqField ctx=ctx />
        <div class="row2">
            <NumberField ctx=ctx key="mb" label=Text::MicroBatchPerGPU get=|p| p.data.micro_batch.to_string() />
            <NumberField ctx=ctx key="ga" label=Text::GradientAccumulation get=|p| p.data.grad_accum.to_string() />
        </div>
        <p class="derived" id="global-batch">{move || {
            let lang = ctx.lang.get();
            let (seq, stage, g) = ctx.plan.with(|p| (p.data.seq, p.training.stage, p.training.rollout.generations));
            let rows = match stage {
                planner::model::plan::TrainingStage::Sft => String::new(),
                planner::model::plan::TrainingStage::Dpo => format!(" {} × 2", tr(lang, Text::WordPairs)),
                planner::model::plan::TrainingStage::Grpo => format!(" {} × {g}", tr(lang, Text::WordPrompts)),
            };
            // GRPO counts prompts (the report's), each of `generations` rows.
            ctx.report.with(|r| format!("{}: {}{} × {} = {} {}",
                tr(lang, Text::GlobalBatch),
                num(r.rollout.as_ref().map_or(r.global_batch_sequences, |g| g.prompts_per_step) as f64, 0, lang),
                rows,
                num(seq as f64, 0, lang),
                num(r.global_batch_tokens as f64, 0, lang),
                tr(lang, Text::WordTokens)))
        }}</p>
        <NumberField ctx=ctx key="tokens" label=Text::TrainingTokens step="any"
            get=|p| planner::model::plan::fmt_num(p.data.tokens) />
        <SelectField ctx=ctx key="train" label=Text::Training
            options=vec![("full", Text::FullFineTuningPreTraining), ("lora", Text::LoRA), ("qlora", Text::QLoRA4BitBase)]
            get=|p| p.training.train.key().to_string() />
        <SelectField ctx=ctx key="stage" label=Text::TrainingStage
            options=vec![("sft", Text::StageSft), ("dpo", Text::StageDpo), ("grpo", Text::StageGrpo)]
            get=|p| p.training.stage.key().to_string() />
        <Show when=move || plan_is(ctx, |p| p.training.stage.generates())>
            <div class="row2">
                <NumberField ctx=ctx key="generations" label=Text::GrpoGenerations get=|p| p.training.rollout.generations.to_string() />
                <NumberField ctx=ctx key="completion" label=Text::GrpoCompletion get=|p| p.training.rollout.completion.to_string() />
            </div>
            // The longest completion bounds generation; the mean, where known, the tokens (#56).
            <NumberField ctx=ctx key="completion_mean" label=Text::GrpoCompletionMean get=|p| match p.training.rollout.completion_mean { 0 => String::new(), m => m.to_string() } />
            <div class="row2">
                <NumberField ctx=ctx key="beta" label=Text::GrpoBeta step="any" get=|p| planner::model::plan::fmt_num(p.training.rollout.beta) />
                <NumberField ctx=ctx key="gen_gpus" label=Text::GrpoGenGpusField get=|p| p.training.rollout.gen_gpus.to_string() />
            </div>
            // A server holds its own 90%: the share is the colocated engine's.
            <Show when=move || plan_is(ctx, |p| p.training.rollout.gen_gpus == 0)>
                <NumberField ctx=ctx key="gen_share" label=Text::GrpoGenShare step="any" get=|p| planner::model::plan::fmt_num(p.training.rollout.gen_share) />
                <CheckField ctx=ctx key="sleep" label=Text::GrpoSleep get=|p| p.training.rollout.sleep />
            </Show>
            // The engine's size as the user runs it, or the planner's pick (#56).
            <div class="row2">
                <NumberField ctx=ctx key="gen_tp" label=Text::GrpoGenTpField get=|p| p.training.rollout.gen_tp.to_string() />
                <NumberField ctx=ctx key="gen_pp" label=Text::GrpoGenPpField get=|p| p.training.rollout.gen_pp.to_string() />
            </div>
        </Show>
        <Show when=move || plan_is(ctx, |p| p.training.train != planner::model::plan::Training::Full)>
            <NumberField ctx=ctx key="lora_rank" label=Text::LoRARank get=|p| p.lora.lora_rank.to_string() />
            <NumberField ctx=ctx key="lora_alpha" label=Text::LoRAAlpha get=|p| p.lora.lora_alpha.map(|n| n.to_string()).unwrap_or_default() />
            <NumberField ctx=ctx key="lora_targets" label=Text::LoRATargets step="text"
                get=|p| p.lora.lora_targets.key().into_owned() />
            <SelectField ctx=ctx key="lora_dtype" label=Text::LoRADtype
                options=vec![("fp32", Text::LoRADtypeFp32), ("bf16", Text::LoRADtypeBf16)]
                get=|p| p.lora.lora_dtype.key().to_string() />
        </Show>
    }
}

/// Precision, optimizer, checkpointing and the kernels that save memory.
fn precision_inputs(ctx: Ctx) -> impl IntoView {
    view! {
        <legend>{ctx.t(Text::PrecisionAndMemorySavers)}</legend>
        <SelectField ctx=ctx key="precision" label=Text::Precision
            options=vec![
                ("bf16", Text::BF16MixedFp32Master),
                ("bf16-pure", Text::PureBF16),
                ("fp8", Text::FP8TransformerEngine),
                ("mxfp8", Text::MXFP8Blackwell),
                ("nvfp4", Text::NVFP4Blackwell),
                ("fp32", Text::FP32),
            ]
            get=|p| p.numerics.precision.key().to_string() />
        <SelectField ctx=ctx key="optimizer" label=Text::Optimizer
            options=vec![
                ("adamw", Text::AdamWFused),
                ("adamw-foreach", Text::AdamWForeach),
                ("adamw8bit", Text::N8BitAdamW),
                ("adafactor", Text::Adafactor),
                ("sgd", Text::SGDWithMomentum),
            ]
            get=|p| p.training.optimizer.key().to_string() />
        <SelectField ctx=ctx key="ckpt" label=Text::ActivationCheckpointing
            options=vec![
                ("none", Text::CheckpointingNone),
                ("selective", Text::SelectiveAttentionCore),
                ("op", Text::SelectiveOpLevelPyTorchSAC),
                ("0.5", Text::HalfOfTheLayers),
                ("full", Text::FullEveryLayer),
            ]
            get=|p| match p.activations.checkpointing { Checkpointing::Fraction(f) if (f - 0.5).abs() > 1e-9 => "0.5".to_string(), c => c.key().into_owned() } />
        <CheckField ctx=ctx key="offload" label=Text::OffloadActivationsToCPUSMP get=|p| p.activations.offload />
        <div class="row2">
            <SelectField ctx=ctx key="attn" label=Text::Attention
                options=vec![
                    ("flash", Text::FlashSDPA),
                    ("fa2", Text::Fa2Kernel),
                    ("cudnn", Text::CudnnKernel),
                    ("eager", Text::EagerSScores),
                ]
                get=|p| p.implementation.attention.key().to_string() />
            <SelectField ctx=ctx key="loss" label=Text::Loss
                options=vec![("plain", Text::PlainLogits), ("fused", Text::FusedChunked)]
                get=|p| p.implementation.loss.key().to_string() />
        </div>
        <SelectField ctx=ctx key="stack" label=Text::Stack
            options=vec![
                ("hf", Text::HuggingFaceTransformersTrainer),
                ("megatron", Text::MegatronTransformerEngine),
                ("torchtitan", Text::PyTorchFsdp2Torchtitan),
            ]
            get=|p| p.implementation.stack.key().to_string() />
        <Show when=move || plan_is(ctx, |p| p.implementation.stack == Stack::Torchtitan)>
            <CheckField ctx=ctx key="compile" label=Text::TorchCompile get=|p| p.implementation.compile />
        </Show>
        // What only Megatron runs (the exported Hugging Face script does not).
        <Show when=move || plan_is(ctx, |p| p.implementation.stack == Stack::Megatron)>
            <CheckField ctx=ctx key="grad_bf16" label=Text::GradReduceBf16 get=|p| p.numerics.grad_bf16 />
            <CheckField ctx=ctx key="fp8_params" label=Text::Fp8ParamGather get=|p| p.numerics.fp8_params />
            <CheckField ctx=ctx key="bf16_moments" label=Text::Bf16Moments get=|p| p.numerics.bf16_moments />
            <CheckField ctx=ctx key="ep_overlap" label=Text::OverlapExpertParallel get=|p| p.parallelism.ep_overlap />
            <CheckField ctx=ctx key="moe_flex" label=Text::MoeFlexDispatcher get=|p| p.moe.moe_flex />
            <CheckField ctx=ctx key="moe_graphs" label=Text::MoeRouterGraphs get=|p| p.moe.moe_graphs />
            <div class="row2">
                <NumberField ctx=ctx key="moe_imbalance" label=Text::MoeImbalance step="any" get=|p| p.moe.moe_imbalance.to_string() />
                <NumberField ctx=ctx key="offload_layers" label=Text::OffloadLayers get=|p| p.activations.offload_layers.map(|n| n.to_string()).unwrap_or_default() />
                <NumberField ctx=ctx key="mtp" label=Text::MtpLayers get=|p| p.training.mtp.to_string() />
            </div>
        </Show>
    }
}

/// Sharding and the parallel layout.
fn parallel_inputs(ctx: Ctx) -> impl IntoView {
    view! {
        <legend>{ctx.t(Text::Parallelism)}</legend>
        <SelectField ctx=ctx key="zero" label=Text::ShardingZeROFSDP
            options=vec![
                ("0", Text::DDPZeRO0),
                ("1", Text::ZeRO1OptimizerStates),
                ("2", Text::ZeRO2FSDPSHARDGRAD),
                ("3", Text::ZeRO3FSDPFULLSHARD),
            ]
            get=|p| p.parallelism.zero.to_string() />
        <NumberField ctx=ctx key="shard" label=Text::HybridShardGroupEmptyAll
            get=|p| p.parallelism.shard.map(|s| s.to_string()).unwrap_or_default() />
        <div class="row4">
            <NumberField ctx=ctx key="tp" label=Text::LabelTP get=|p| p.parallelism.tp.to_string() />
            <NumberField ctx=ctx key="pp" label=Text::LabelPP get=|p| p.parallelism.pp.to_string() />
            <NumberField ctx=ctx key="cp" label=Text::LabelCP get=|p| p.parallelism.cp.to_string() />
            <NumberField ctx=ctx key="ep" label=Text::LabelEP get=|p| p.parallelism.ep.to_string() />
        </div>
        <div class="row2">
            <CheckField ctx=ctx key="sp" label=Text::SequenceParallel get=|p| p.parallelism.sp />
            <CheckField ctx=ctx key="overlap" label=Text::OverlapCommunication get=|p| p.parallelism.overlap />
            <CheckField ctx=ctx key="tp_overlap" label=Text::OverlapTensorParallel get=|p| p.parallelism.tp_overlap />
            <NumberField ctx=ctx key="vp" label=Text::InterleaveVp get=|p| p.parallelism.vp.to_string() />
            <NumberField ctx=ctx key="pp_first" label=Text::PpFirstLayers get=|p| p.parallelism.pp_first.map(|n| n.to_string()).unwrap_or_default() />
            <NumberField ctx=ctx key="pp_last" label=Text::PpLastLayers get=|p| p.parallelism.pp_last.map(|n| n.to_string()).unwrap_or_default() />
        </div>
    }
}

/// The instance, its count and price, and the memory kept free.
fn hardware_inputs(ctx: Ctx) -> impl IntoView {
    view! {
        <legend>{ctx.t(Text::HardwareAndCost)}</legend>
        <InstancePicker ctx=ctx />
        <Show when=move || plan_is(ctx, |p| p.hardware.instance.is_custom())>
            <div class="row2">
                <NumberField ctx=ctx key="gpu_mem" label=Text::GPUMemoryGB step="any" get=|p| p.hardware.custom_gpu.memory_gb.to_string() />
                <NumberField ctx=ctx key="gpu_bf16" label=Text::Bf16DenseTflops step="any" get=|p| p.hardware.custom_gpu.bf16_tflops.to_string() />
                <NumberField ctx=ctx key="gpu_fp8" label=Text::Fp8DenseTflops step="any" get=|p| p.hardware.custom_gpu.fp8_tflops.to_string() />
                <NumberField ctx=ctx key="gpu_bw" label=Text::HBMBandwidthTBS step="any" get=|p| p.hardware.custom_gpu.bandwidth_tbs.to_string() />
                <NumberField ctx=ctx key="gpu_count" label=Text::GPUsPerNode get=|p| p.hardware.custom_gpu.per_node.to_string() />
                <NumberField ctx=ctx key="gpu_nvlink" label=Text::NVLinkGBS0PCIe step="any" get=|p| p.hardware.custom_gpu.nvlink_gbs.to_string() />
            </div>
        </Show>
        <div class="row2">
            <NumberField ctx=ctx key="nodes" label=Text::InstanceCount get=|p| p.hardware.nodes.to_string() />
            <NumberField ctx=ctx key="price" label=Text::PriceUSDPerInstanceHour step="any"
                get=|p| p.hardware.price.map(|x| x.to_string()).unwrap_or_default() />
        </div>
        <Show when=move || plan_is(ctx, |p| planner::model::hardware::is_ultraserver(p.hardware.instance.key()))>
            <SelectField ctx=ctx key="ultraserver" label=Text::UltraServerLabel
                options=vec![("72", Text::UltraServer72), ("36", Text::UltraServer36)]
                get=|p| p.hardware.ultraserver.to_string() />
        </Show>
        <CheckField ctx=ctx key="spot" label=Text::ManagedSpotTraining get=|p| p.hardware.spot />
        <div class="row3">
            <NumberField ctx=ctx key="headroom" label=Text::Headroom step="any" get=|p| p.allowances.headroom.to_string() />
            <NumberField ctx=ctx key="ws_gib" label=Text::WorkspacesGiB step="any" get=|p| p.allowances.workspace_gib.map(|x| x.to_string()).unwrap_or_default() />
            <NumberField ctx=ctx key="frag" label=Text::FragmentationPercent step="any" get=|p| p.allowances.fragmentation.map(|x| x.to_string()).unwrap_or_default() />
        </div>
    }
}

/// How often and how the checkpoints are saved.
fn saving_inputs(ctx: Ctx) -> impl IntoView {
    view! {
        <legend>{ctx.t(Text::CheckpointSaving)}</legend>
        <div class="row2">
            <NumberField ctx=ctx key="save_every" label=Text::SaveEveryNSteps get=|p| p.saving.save_every.to_string() />
            <NumberField ctx=ctx key="save_bw" label=Text::WriteBandwidthGBSPer step="any" get=|p| p.saving.save_bw.to_string() />
        </div>
        <div class="row2">
            <NumberField ctx=ctx key="fail_rate" label=Text::FailRatePerMillion step="any" get=|p| planner::model::plan::fmt_num((p.saving.fail_rate * 100.0).round() / 100.0) />
            <NumberField ctx=ctx key="restart_min" label=Text::RestartMinutes step="any" get=|p| planner::model::plan::fmt_num(p.saving.restart_minutes) />
        </div>
        <div class="row2">
            <NumberField ctx=ctx key="spot_rate" label=Text::SpotRatePercent step="any" get=|p| planner::model::plan::fmt_num(p.saving.spot_rate) />
            <SelectField ctx=ctx key="recovery" label=Text::RecoveryAfterInterruption
                options=vec![("save", Text::RecoverFromSave), ("memory", Text::RecoverFromMemory)]
                get=|p| p.saving.recovery.key().to_string() />
        </div>
        <SelectField ctx=ctx key="save" label=Text::WhatIsSaved
            options=vec![("full", Text::FullStateResumable), ("weights", Text::WeightsOnly), ("adapter", Text::LoRAAdapter)]
            get=|p| p.saving.save.key().to_string() />
        <CheckField ctx=ctx key="async_save" label=Text::AsynchronousSave get=|p| p.saving.async_save />
    }
}

fn plan_is(ctx: Ctx, f: impl Fn(&Plan) -> bool) -> bool {
    ctx.plan.with(f)
}

/// A number field bound to one URL key.
#[component]
pub fn NumberField(
    ctx: Ctx,
    key: &'static str,
    label: Label,
    get: fn(&Plan) -> String,
    #[prop(optional)] step: Option<&'static str>,
) -> impl IntoView {
    let err = ctx.error(key);
    let err_id = format!("{key}-error");
    let lang = ctx.lang;
    view! {
        <div class="field">
            <label for=key>{move || tr(lang.get(), label)}</label>
            <input id=key name=key type="text" inputmode=match step { Some("text") => "text", Some(_) => "decimal", None => "numeric" }
                autocomplete="off" spellcheck="false"
                aria-invalid=move || err().is_some().to_string()
                aria-describedby=err_id.clone()
                prop:value=move || ctx.plan.with(get)
                on:change=move |ev| ctx.set(key, &event_target_value(&ev))
                on:input=move |ev| {
                    // Numbers apply as they are typed; text applies when the field is left.
                    let v = event_target_value(&ev);
                    if step != Some("text") && !v.trim().is_empty() { ctx.set(key, &v) }
                } />
            <span class="field-error" id=err_id role="alert">{err}</span>
        </div>
    }
}

/// A select bound to one URL key.
#[component]
pub fn SelectField(
    ctx: Ctx,
    key: &'static str,
    label: Label,
    options: Vec<(&'static str, Label)>,
    get: fn(&Plan) -> String,
) -> impl IntoView {
    let err = ctx.error(key);
    let err_id = format!("{key}-error");
    let lang = ctx.lang;
    view! {
        <div class="field">
            <label for=key>{move || tr(lang.get(), label)}</label>
            <select id=key name=key aria-describedby=err_id.clone() aria-invalid=move || err().is_some().to_string()
                on:change=move |ev| ctx.set(key, &event_target_value(&ev))>
                {options.into_iter().map(|(value, text)| {
                    view! { <option value=value selected=move || ctx.plan.with(|p| get(p) == value)>{move || tr(lang.get(), text)}</option> }
                }).collect_view()}
            </select>
            <span class="field-error" id=err_id role="alert">{err}</span>
        </div>
    }
}

#[component]
pub fn CheckField(
    ctx: Ctx,
    key: &'static str,
    label: Label,
    get: fn(&Plan) -> bool,
) -> impl IntoView {
    // What the plan refuses for this setting (offloading or sleeping more
    // than the host can pin) shows beside it, as at the other fields.
    let err = ctx.error(key);
    let err_id = format!("{key}-error");
    let lang = ctx.lang;
    view! {
        <div class="field check">
            <input id=key name=key type="checkbox" prop:checked=move || ctx.plan.with(get)
                aria-invalid=move || err().is_some().to_string()
                aria-describedby=err_id.clone()
                on:change=move |ev| ctx.set(key, if event_target_checked(&ev) { "1" } else { "0" }) />
            <label for=key>{move || tr(lang.get(), label)}</label>
            <span class="field-error" id=err_id role="alert">{err}</span>
        </div>
    }
}

/// Preset picker with a search box that filters the list.
#[component]
fn ModelPicker(ctx: Ctx) -> impl IntoView {
    let query = RwSignal::new(String::new());
    let lang = ctx.lang;
    let err = ctx.error("model");
    // A memo, so that the list is redrawn only when the model changes.
    let model = Memo::new(move |_| ctx.plan.with(|p| p.model.preset.clone()));
    view! {
        <div class="field">
            <label for="model-search">{move || tr(lang.get(), Text::SearchModels)}</label>
            <input id="model-search" type="search" autocomplete="off" placeholder="llama, qwen, mixtral…"
                prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev)) />
            <label for="model">{move || tr(lang.get(), Text::ModelPreset)}</label>
            <select id="model" name="model" on:change=move |ev| {
                let v = event_target_value(&ev);
                // Picking a preset clears the quick size and custom fields.
                ctx.plan.update(|p| { p.model.params_b = None; p.model.arch = Default::default(); });
                ctx.set("model", &v);
            }>
                {move || {
                    let q = query.get().to_ascii_lowercase();
                    let current = model.get();
                    presets().iter()
                        .filter(|p| q.is_empty() || p.name.to_ascii_lowercase().contains(&q) || p.id.contains(&q) || p.id == current)
                        .map(|p| {
                            let c = p.arch.parameter_counts();
                            let size = if c.total == c.active { format!("{:.1}B", c.total as f64 / 1e9) } else { format!("{:.0}B, {:.1}B active", c.total as f64 / 1e9, c.active as f64 / 1e9) };
                            let selected = p.id == current;
                            view! { <option value=p.id selected=selected>{format!("{} ({size})", p.name)}</option> }
                        })
                        .collect_view()
                }}
                {move || model.with(|m| m == "custom").then(|| view! { <option value="custom" selected=true>{tr(lang.get(), Text::Custom)}</option> })}
            </select>
            <span class="field-error" role="alert">{err}</span>
        </div>
    }
}

#[component]
fn ArchFields(ctx: Ctx) -> impl IntoView {
    // Shows the resolved shape; typing a value overrides the preset's field.
    fn shown(
        ctx: Ctx,
        f: fn(&planner::model::architecture::Architecture) -> u64,
    ) -> impl Fn() -> String + Copy {
        move || ctx.report.with(|r| f(&r.architecture).to_string())
    }
    let fields: Vec<ArchField> = vec![
        ("layers", (Text::Layers), |a| a.layers),
        ("hidden", (Text::HiddenSize), |a| a.hidden),
        ("heads", (Text::AttentionHeads), |a| a.heads),
        ("kv_heads", (Text::KVHeads), |a| a.kv_heads),
        ("head_dim", (Text::HeadDim), |a| a.head_dim),
        ("ffn", (Text::FFNSize), |a| a.ffn),
        ("vocab", (Text::Vocabulary), |a| a.vocab),
        ("experts", (Text::ExpertsMoE), |a| {
            a.moe.map_or(1, |m| m.experts as u64)
        }),
        ("active_experts", (Text::ActiveExperts), |a| {
            a.moe.map_or(1, |m| m.active as u64)
        }),
        ("expert_ffn", (Text::ExpertFFNSize), |a| {
            a.moe.map_or(a.ffn, |m| m.expert_ffn)
        }),
    ];
    let lang = ctx.lang;
    view! {
        <div class="row2">
            {fields.into_iter().map(|(key, label, f)| {
                let err = ctx.error(key);
                let value = shown(ctx, f);
                view! {
                    <div class="field">
                        <label for=key>{move || tr(lang.get(), label)}</label>
                        <input id=key name=key type="text" inputmode="numeric" autocomplete="off"
                            aria-invalid=move || err().is_some().to_string()
                            prop:value=value on:change=move |ev| ctx.set(key, &event_target_value(&ev)) />
                        <span class="field-error" role="alert">{err}</span>
                    </div>
                }
            }).collect_view()}
        </div>
        <div class="row2">
            <SelectField ctx=ctx key="mlp" label=Text::LabelMLP
                options=vec![("swiglu", Text::SwiGLUGated), ("geglu", Text::GeGLUGated), ("gelu", Text::PlainGELU)]
                get=|p| p.model.arch.mlp.unwrap_or(Mlp::Swiglu).key().to_string() />
            <CheckField ctx=ctx key="tied" label=Text::TiedEmbeddings get=|p| p.model.arch.tied.unwrap_or(false) />
        </div>
    }
}

/// Why a pasted config.json was not read, in `lang`, with the key at fault.
fn config_error(e: &ConfigError, lang: Lang) -> String {
    let field = e
        .field
        .as_ref()
        .map(|f| format!(" [{f}]"))
        .unwrap_or_default();
    let prefix = tr(lang, Text::ConfigNotRead);
    format!("{prefix}{field}: {}", render(lang, &e.phrase))
}

/// Paste a Hugging Face config.json: fills the custom architecture.
#[component]
fn ConfigPaste(ctx: Ctx) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(None::<ConfigError>);
    let lang = ctx.lang;
    // The worker reads it (the page's wasm holds no JSON reader, #59).
    let apply = move |_| ctx.worker.ask_read(Read::Config, &text.get_untracked());
    let reply = ctx.worker.read[Read::Config as usize];
    Effect::new(move || {
        let Some(reply) = reply.get() else { return };
        let read = match failure(&reply) {
            Some(phrase) => Err(ConfigError {
                field: None,
                phrase,
            }),
            None => read_config_reply(&reply),
        };
        match read {
            Ok(model) => {
                error.set(None);
                ctx.plan.update(|p| p.model = model);
            }
            Err(e) => error.set(Some(e)),
        }
    });
    view! {
        <details class="config-paste">
            <summary>{move || tr(lang.get(), Text::PasteAHuggingFaceConfig)}</summary>
            <label for="config-json" class="sr-only">"config.json"</label>
            <textarea id="config-json" rows="6" spellcheck="false" placeholder="{\"model_type\": \"llama\", \"hidden_size\": 4096, …}"
                aria-describedby="config-json-error"
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <button type="button" id="config-apply" on:click=apply>{move || tr(lang.get(), Text::UseThisArchitecture)}</button>
            <span class="field-error" id="config-json-error" role="alert">{move || error.with(|e| e.as_ref().map(|e| config_error(e, lang.get())))}</span>
        </details>
    }
}

/// Sequence length: a log-scale slider from 128 to 131072 and a typed field.
#[component]
fn SeqField(ctx: Ctx) -> impl IntoView {
    let err = ctx.error("seq");
    let lang = ctx.lang;
    let log = move || ctx.plan.with(|p| (p.data.seq as f64).log2());
    view! {
        <div class="field">
            <label for="seq">{move || tr(lang.get(), Text::SequenceLengthTokens)}</label>
            <div class="seq">
                <input id="seq-slider" type="range" min="7" max="17" step="0.25"
                    aria-label=move || tr(lang.get(), Text::SequenceLengthLogScale)
                    aria-valuetext=move || ctx.plan.with(|p| p.data.seq.to_string())
                    prop:value=move || log().to_string()
                    on:input=move |ev| {
                        let x = planner::formats::decimal::parse_f64(&event_target_value(&ev)).unwrap_or(13.0);
                        // Snap to multiples of 128 so the GEMM shapes stay aligned
                        // (JavaScript's pow: Rust's would link libm's 4 KB exp table).
                        let seq = ((js_sys::Math::pow(2.0, x) / 128.0).round() * 128.0).clamp(128.0, 131072.0) as u64;
                        ctx.set("seq", &seq.to_string());
                    } />
                <input id="seq" name="seq" type="text" inputmode="numeric" autocomplete="off"
                    aria-invalid=move || err().is_some().to_string() aria-describedby="seq-error"
                    prop:value=move || ctx.plan.with(|p| p.data.seq.to_string())
                    on:change=move |ev| ctx.set("seq", &event_target_value(&ev))
                    on:input=move |ev| { let v = event_target_value(&ev); if !v.trim().is_empty() { ctx.set("seq", &v) } } />
            </div>
            <span class="field-error" id="seq-error" role="alert">{err}</span>
        </div>
    }
}

/// Instance type with its GPU, count, memory and price.
#[component]
fn InstancePicker(ctx: Ctx) -> impl IntoView {
    let lang = ctx.lang;
    let err = ctx.error("instance");
    view! {
        <div class="field">
            <label for="instance">{move || tr(lang.get(), Text::SageMakerInstance)}</label>
            <select id="instance" name="instance" on:change=move |ev| ctx.set("instance", &event_target_value(&ev))>
                {move || {
                    let l = lang.get();
                    instances().iter().map(|i| {
                        let mem = gpu(i.gpu).map(|g| g.memory_gb).unwrap_or(0.0);
                        let approx = if i.price_basis == PriceBasis::Derived { "≈" } else { "" };
                        let price = i.price_usd_hr.map(|p| format!("{approx}${}/h", num(p, 2, l))).unwrap_or_else(|| tr(l, Text::PriceUnknownShort).to_string());
                        let label = format!("{} — {} × {} {} GB — {}", i.instance_type, i.gpu_count, short_gpu(i.gpu), mem, price);
                        let id = i.instance_type;
                        let sel = id;
                        view! { <option value=id selected=move || ctx.plan.with(|p| p.hardware.instance.is(sel))>{label}</option> }
                    }).collect_view()
                }}
                <option value=planner::model::plan::InstanceId::CUSTOM_KEY selected=move || ctx.plan.with(|p| p.hardware.instance.is_custom())>{move || tr(lang.get(), Text::CustomGPU)}</option>
            </select>
            <span class="field-error" role="alert">{err}</span>
        </div>
    }
}

fn short_gpu(id: &str) -> &str {
    match id {
        "RTX PRO 6000 Blackwell Server Edition" => "RTX PRO 6000",
        "GB200 (B200 in NVL72)" => "GB200",
        other => other,
    }
}
