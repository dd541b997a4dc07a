//! Every input of the plan, grouped as a user thinks about a job.
//! Each field writes through `Ctx::set`, i.e. through the URL parser.

use crate::app::Ctx;
use crate::format::{num, tr};
use leptos::prelude::*;
use planner::architecture::{from_hf_config, presets, Mlp};
use planner::hardware::{gpu, instances};
use planner::plan::{Checkpointing, Lang, Plan};

type Label = (&'static str, &'static str);
/// A custom-architecture field: URL key, label, and the resolved value shown.
type ArchField = (
    &'static str,
    Label,
    fn(&planner::architecture::Architecture) -> u64,
);

#[component]
pub fn Inputs(ctx: Ctx) -> impl IntoView {
    let t = move |l: Label| tr(ctx.lang.get(), l.0, l.1);
    view! {
        <form class="inputs" aria-label="Plan" on:submit=|ev| ev.prevent_default()>
            <fieldset>
                <legend>{move || t(("Model", "Модель"))}</legend>
                <ModelPicker ctx=ctx />
                <NumberField ctx=ctx key="params_b" label=("or about N billion parameters", "или около N млрд параметров")
                    step="any" get=|p| p.params_b.map(|b| b.to_string()).unwrap_or_default() />
                <details class="custom-arch">
                    <summary>{move || t(("Custom architecture", "Своя архитектура"))}</summary>
                    <ArchFields ctx=ctx />
                </details>
                <ConfigPaste ctx=ctx />
            </fieldset>
            <fieldset>
                <legend>{move || t(("Data and batch", "Данные и батч"))}</legend>
                <SeqField ctx=ctx />
                <div class="row2">
                    <NumberField ctx=ctx key="mb" label=("Micro-batch per GPU", "Micro-batch на GPU") get=|p| p.micro_batch.to_string() />
                    <NumberField ctx=ctx key="ga" label=("Gradient accumulation", "Накопление градиентов") get=|p| p.grad_accum.to_string() />
                </div>
                <p class="derived" id="global-batch">{move || {
                    let lang = ctx.lang.get();
                    ctx.report.with(|r| format!("{}: {} × {} = {} {}",
                        tr(lang, "Global batch", "Глобальный батч"),
                        num(r.global_batch_sequences as f64, 0, lang),
                        num(ctx.plan.with(|p| p.seq) as f64, 0, lang),
                        num(r.global_batch_tokens as f64, 0, lang),
                        tr(lang, "tokens", "токенов")))
                }}</p>
                <NumberField ctx=ctx key="tokens" label=("Training tokens", "Токенов для обучения") step="any"
                    get=|p| planner::plan::fmt_num(p.tokens) />
                <SelectField ctx=ctx key="train" label=("Training", "Обучение")
                    options=vec![("full", ("Full fine-tuning / pre-training", "Полное обучение")), ("lora", ("LoRA", "LoRA")), ("qlora", ("QLoRA (4-bit base)", "QLoRA (4-битная база)"))]
                    get=|p| p.train.key().to_string() />
                <Show when=move || plan_is(ctx, |p| p.train != planner::plan::Training::Full)>
                    <NumberField ctx=ctx key="lora_rank" label=("LoRA rank", "Ранг LoRA") get=|p| p.lora_rank.to_string() />
                </Show>
            </fieldset>
            <fieldset>
                <legend>{move || t(("Precision and memory savers", "Точность и экономия памяти"))}</legend>
                <SelectField ctx=ctx key="precision" label=("Precision", "Точность")
                    options=vec![
                        ("bf16", ("BF16 mixed (fp32 master)", "BF16 смешанная (fp32 мастер)")),
                        ("bf16-pure", ("Pure BF16", "Чистый BF16")),
                        ("fp8", ("FP8 (TransformerEngine)", "FP8 (TransformerEngine)")),
                        ("mxfp8", ("MXFP8 (Blackwell)", "MXFP8 (Blackwell)")),
                        ("nvfp4", ("NVFP4 (Blackwell)", "NVFP4 (Blackwell)")),
                        ("fp32", ("FP32", "FP32")),
                    ]
                    get=|p| p.precision.key().to_string() />
                <SelectField ctx=ctx key="optimizer" label=("Optimizer", "Оптимизатор")
                    options=vec![
                        ("adamw", ("AdamW (fused)", "AdamW (fused)")),
                        ("adamw-foreach", ("AdamW (foreach)", "AdamW (foreach)")),
                        ("adamw8bit", ("8-bit AdamW", "8-битный AdamW")),
                        ("adafactor", ("Adafactor", "Adafactor")),
                        ("sgd", ("SGD with momentum", "SGD с моментом")),
                    ]
                    get=|p| p.optimizer.key().to_string() />
                <SelectField ctx=ctx key="ckpt" label=("Activation checkpointing", "Activation checkpointing")
                    options=vec![
                        ("none", ("None", "Нет")),
                        ("selective", ("Selective (attention core)", "Выборочный (ядро внимания)")),
                        ("op", ("Selective op-level (PyTorch SAC)", "Выборочный по операциям (PyTorch SAC)")),
                        ("0.5", ("Half of the layers", "Половина слоёв")),
                        ("full", ("Full (every layer)", "Полный (каждый слой)")),
                    ]
                    get=|p| match p.checkpointing { Checkpointing::Fraction(f) if (f - 0.5).abs() > 1e-9 => "0.5".to_string(), c => c.key() } />
                <CheckField ctx=ctx key="offload" label=("Offload activations to CPU (SMP)", "Выгрузка активаций на CPU (SMP)") get=|p| p.offload />
                <div class="row2">
                    <SelectField ctx=ctx key="attn" label=("Attention", "Внимание")
                        options=vec![("flash", ("Flash / SDPA", "Flash / SDPA")), ("eager", ("Eager (s² scores)", "Eager (матрица s²)"))]
                        get=|p| p.attention.key().to_string() />
                    <SelectField ctx=ctx key="loss" label=("Loss", "Loss")
                        options=vec![("plain", ("Plain logits", "Полные логиты")), ("fused", ("Fused / chunked", "Fused / по частям"))]
                        get=|p| p.loss.key().to_string() />
                </div>
                <SelectField ctx=ctx key="impl" label=("Implementation", "Реализация")
                    options=vec![("hf", ("Hugging Face Transformers + Trainer", "Hugging Face Transformers + Trainer")), ("megatron", ("Megatron / TransformerEngine", "Megatron / TransformerEngine"))]
                    get=|p| p.implementation.key().to_string() />
            </fieldset>
            <fieldset>
                <legend>{move || t(("Parallelism", "Параллелизм"))}</legend>
                <SelectField ctx=ctx key="zero" label=("Sharding (ZeRO / FSDP)", "Шардирование (ZeRO / FSDP)")
                    options=vec![
                        ("0", ("DDP (ZeRO-0)", "DDP (ZeRO-0)")),
                        ("1", ("ZeRO-1 (optimizer states)", "ZeRO-1 (состояния оптимизатора)")),
                        ("2", ("ZeRO-2 / FSDP SHARD_GRAD_OP", "ZeRO-2 / FSDP SHARD_GRAD_OP")),
                        ("3", ("ZeRO-3 / FSDP FULL_SHARD", "ZeRO-3 / FSDP FULL_SHARD")),
                    ]
                    get=|p| p.zero.to_string() />
                <NumberField ctx=ctx key="shard" label=("Hybrid shard group (empty: all GPUs)", "Группа гибридного шардирования (пусто: все GPU)")
                    get=|p| p.shard.map(|s| s.to_string()).unwrap_or_default() />
                <div class="row4">
                    <NumberField ctx=ctx key="tp" label=("TP", "TP") get=|p| p.tp.to_string() />
                    <NumberField ctx=ctx key="pp" label=("PP", "PP") get=|p| p.pp.to_string() />
                    <NumberField ctx=ctx key="cp" label=("CP", "CP") get=|p| p.cp.to_string() />
                    <NumberField ctx=ctx key="ep" label=("EP", "EP") get=|p| p.ep.to_string() />
                </div>
                <div class="row2">
                    <CheckField ctx=ctx key="sp" label=("Sequence parallel", "Sequence parallel") get=|p| p.sp />
                    <NumberField ctx=ctx key="vp" label=("Interleave (vp)", "Чередование (vp)") get=|p| p.vp.to_string() />
                </div>
            </fieldset>
            <fieldset>
                <legend>{move || t(("Hardware and cost", "Железо и стоимость"))}</legend>
                <InstancePicker ctx=ctx />
                <Show when=move || plan_is(ctx, |p| p.instance == "custom")>
                    <div class="row2">
                        <NumberField ctx=ctx key="gpu_mem" label=("GPU memory, GB", "Память GPU, ГБ") step="any" get=|p| p.custom_gpu.memory_gb.to_string() />
                        <NumberField ctx=ctx key="gpu_bf16" label=("BF16 dense TFLOP/s", "BF16 TFLOP/s (dense)") step="any" get=|p| p.custom_gpu.bf16_tflops.to_string() />
                        <NumberField ctx=ctx key="gpu_fp8" label=("FP8 dense TFLOP/s (0: none)", "FP8 TFLOP/s (0: нет)") step="any" get=|p| p.custom_gpu.fp8_tflops.to_string() />
                        <NumberField ctx=ctx key="gpu_bw" label=("HBM bandwidth, TB/s", "Пропускная способность HBM, ТБ/с") step="any" get=|p| p.custom_gpu.bandwidth_tbs.to_string() />
                        <NumberField ctx=ctx key="gpu_count" label=("GPUs per node", "GPU на узел") get=|p| p.custom_gpu.per_node.to_string() />
                        <NumberField ctx=ctx key="gpu_nvlink" label=("NVLink GB/s (0: PCIe)", "NVLink ГБ/с (0: PCIe)") step="any" get=|p| p.custom_gpu.nvlink_gbs.to_string() />
                    </div>
                </Show>
                <div class="row2">
                    <NumberField ctx=ctx key="nodes" label=("Instance count", "Число инстансов") get=|p| p.nodes.to_string() />
                    <NumberField ctx=ctx key="price" label=("Price, USD per instance-hour", "Цена, USD за инстанс-час") step="any"
                        get=|p| p.price.map(|x| x.to_string()).unwrap_or_default() />
                </div>
                <CheckField ctx=ctx key="spot" label=("Managed spot training", "Managed spot training") get=|p| p.spot />
                <div class="row3">
                    <NumberField ctx=ctx key="headroom" label=("Headroom, %", "Запас, %") step="any" get=|p| p.headroom.to_string() />
                    <NumberField ctx=ctx key="ws_gib" label=("Workspaces, GiB", "Буферы, ГиБ") step="any" get=|p| p.workspace_gib.to_string() />
                    <NumberField ctx=ctx key="frag" label=("Fragmentation, %", "Фрагментация, %") step="any" get=|p| p.fragmentation.to_string() />
                </div>
            </fieldset>
            <fieldset>
                <legend>{move || t(("Checkpoint saving", "Сохранение чекпоинтов"))}</legend>
                <div class="row2">
                    <NumberField ctx=ctx key="save_every" label=("Save every N steps (0: never)", "Каждые N шагов (0: никогда)") get=|p| p.save_every.to_string() />
                    <NumberField ctx=ctx key="save_bw" label=("Write bandwidth, GB/s per node", "Запись, ГБ/с на узел") step="any" get=|p| p.save_bw.to_string() />
                </div>
                <SelectField ctx=ctx key="save" label=("What is saved", "Что сохраняется")
                    options=vec![("full", ("Full state (resumable)", "Полное состояние (можно продолжить)")), ("weights", ("Weights only", "Только веса")), ("adapter", ("LoRA adapter", "Адаптер LoRA"))]
                    get=|p| p.save.key().to_string() />
                <CheckField ctx=ctx key="async_save" label=("Asynchronous save", "Асинхронное сохранение") get=|p| p.async_save />
            </fieldset>
        </form>
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
            <label for=key>{move || tr(lang.get(), label.0, label.1)}</label>
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
            <label for=key>{move || tr(lang.get(), label.0, label.1)}</label>
            <select id=key name=key aria-describedby=err_id.clone() aria-invalid=move || err().is_some().to_string()
                on:change=move |ev| ctx.set(key, &event_target_value(&ev))>
                {options.into_iter().map(|(value, text)| {
                    view! { <option value=value selected=move || ctx.plan.with(|p| get(p) == value)>{move || tr(lang.get(), text.0, text.1)}</option> }
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
    let lang = ctx.lang;
    view! {
        <div class="field check">
            <input id=key name=key type="checkbox" prop:checked=move || ctx.plan.with(get)
                on:change=move |ev| ctx.set(key, if event_target_checked(&ev) { "1" } else { "0" }) />
            <label for=key>{move || tr(lang.get(), label.0, label.1)}</label>
        </div>
    }
}

/// Preset picker with a search box that filters the list.
#[component]
fn ModelPicker(ctx: Ctx) -> impl IntoView {
    let query = RwSignal::new(String::new());
    let lang = ctx.lang;
    let err = ctx.error("model");
    view! {
        <div class="field">
            <label for="model-search">{move || tr(lang.get(), "Search models", "Поиск модели")}</label>
            <input id="model-search" type="search" autocomplete="off" placeholder="llama, qwen, mixtral…"
                prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev)) />
            <label for="model">{move || tr(lang.get(), "Model preset", "Модель")}</label>
            <select id="model" name="model" on:change=move |ev| {
                let v = event_target_value(&ev);
                // Picking a preset clears the quick size and custom fields.
                ctx.plan.update(|p| { p.params_b = None; p.arch = Default::default(); });
                ctx.set("model", &v);
            }>
                {move || {
                    let q = query.get().to_lowercase();
                    let current = ctx.plan.with(|p| p.model.clone());
                    presets().iter()
                        .filter(|p| q.is_empty() || p.name.to_lowercase().contains(&q) || p.id.contains(&q) || p.id == current)
                        .map(|p| {
                            let c = p.arch.parameter_counts();
                            let size = if c.total == c.active { format!("{:.1}B", c.total as f64 / 1e9) } else { format!("{:.0}B, {:.1}B active", c.total as f64 / 1e9, c.active as f64 / 1e9) };
                            let selected = p.id == current;
                            view! { <option value=p.id.clone() selected=selected>{format!("{} ({size})", p.name)}</option> }
                        })
                        .collect_view()
                }}
                {move || ctx.plan.with(|p| p.model == "custom").then(|| view! { <option value="custom" selected=true>{tr(lang.get(), "Custom", "Своя")}</option> })}
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
        f: fn(&planner::architecture::Architecture) -> u64,
    ) -> impl Fn() -> String + Copy {
        move || ctx.report.with(|r| f(&r.architecture).to_string())
    }
    let fields: Vec<ArchField> = vec![
        ("layers", ("Layers", "Слои"), |a| a.layers),
        ("hidden", ("Hidden size", "Скрытый размер"), |a| a.hidden),
        ("heads", ("Attention heads", "Головы внимания"), |a| a.heads),
        ("kv_heads", ("KV heads", "KV-головы"), |a| a.kv_heads),
        ("head_dim", ("Head dim", "Размер головы"), |a| {
            a.head_dim
        }),
        ("ffn", ("FFN size", "Размер FFN"), |a| a.ffn),
        ("vocab", ("Vocabulary", "Словарь"), |a| a.vocab),
        (
            "experts",
            ("Experts (MoE)", "Эксперты (MoE)"),
            |a| a.moe.map_or(1, |m| m.experts as u64),
        ),
        (
            "active_experts",
            ("Active experts", "Активные эксперты"),
            |a| a.moe.map_or(1, |m| m.active as u64),
        ),
        (
            "expert_ffn",
            ("Expert FFN size", "FFN эксперта"),
            |a| a.moe.map_or(a.ffn, |m| m.expert_ffn),
        ),
    ];
    let lang = ctx.lang;
    view! {
        <div class="row2">
            {fields.into_iter().map(|(key, label, f)| {
                let err = ctx.error(key);
                let value = shown(ctx, f);
                view! {
                    <div class="field">
                        <label for=key>{move || tr(lang.get(), label.0, label.1)}</label>
                        <input id=key name=key type="text" inputmode="numeric" autocomplete="off"
                            aria-invalid=move || err().is_some().to_string()
                            prop:value=value on:change=move |ev| ctx.set(key, &event_target_value(&ev)) />
                        <span class="field-error" role="alert">{err}</span>
                    </div>
                }
            }).collect_view()}
        </div>
        <div class="row2">
            <SelectField ctx=ctx key="mlp" label=("MLP", "MLP")
                options=vec![("swiglu", ("SwiGLU (gated)", "SwiGLU (с гейтом)")), ("geglu", ("GeGLU (gated)", "GeGLU (с гейтом)")), ("gelu", ("Plain GELU", "Обычный GELU"))]
                get=|p| p.arch.mlp.unwrap_or(Mlp::Swiglu).key().to_string() />
            <CheckField ctx=ctx key="tied" label=("Tied embeddings", "Общие эмбеддинги") get=|p| p.arch.tied.unwrap_or(false) />
        </div>
    }
}

/// Paste a Hugging Face config.json: fills the custom architecture.
#[component]
fn ConfigPaste(ctx: Ctx) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let lang = ctx.lang;
    let apply = move |_| {
        let ru = lang.get_untracked() == Lang::Ru;
        match from_hf_config(&text.get_untracked()) {
            Ok(a) => {
                error.set(None);
                ctx.plan.update(|p| {
                    p.params_b = None;
                    p.model = "custom".into();
                    p.arch = planner::plan::ArchOverrides {
                        layers: Some(a.layers),
                        hidden: Some(a.hidden),
                        heads: Some(a.heads),
                        kv_heads: Some(a.kv_heads),
                        head_dim: Some(a.head_dim),
                        ffn: Some(a.moe.map_or(a.ffn, |m| m.expert_ffn)),
                        vocab: Some(a.vocab),
                        tied: Some(a.tied),
                        mlp: Some(a.mlp),
                        experts: a.moe.map(|m| m.experts as u64),
                        active_experts: a.moe.map(|m| m.active as u64),
                        expert_ffn: a.moe.map(|m| m.expert_ffn),
                    };
                });
            }
            Err(e) => {
                let field = e.field.map(|f| format!(" [{f}]")).unwrap_or_default();
                let prefix = if ru {
                    "config.json не прочитан"
                } else {
                    "config.json not read"
                };
                error.set(Some(format!("{prefix}{field}: {}", e.message)));
            }
        }
    };
    view! {
        <details class="config-paste">
            <summary>{move || tr(lang.get(), "Paste a Hugging Face config.json", "Вставить config.json с Hugging Face")}</summary>
            <label for="config-json" class="sr-only">"config.json"</label>
            <textarea id="config-json" rows="6" spellcheck="false" placeholder="{\"model_type\": \"llama\", \"hidden_size\": 4096, …}"
                aria-describedby="config-json-error"
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <button type="button" id="config-apply" on:click=apply>{move || tr(lang.get(), "Use this architecture", "Взять эту архитектуру")}</button>
            <span class="field-error" id="config-json-error" role="alert">{move || error.get()}</span>
        </details>
    }
}

/// Sequence length: a log-scale slider from 128 to 131072 and a typed field.
#[component]
fn SeqField(ctx: Ctx) -> impl IntoView {
    let err = ctx.error("seq");
    let lang = ctx.lang;
    let log = move || ctx.plan.with(|p| (p.seq as f64).log2());
    view! {
        <div class="field">
            <label for="seq">{move || tr(lang.get(), "Sequence length (tokens)", "Длина последовательности (токенов)")}</label>
            <div class="seq">
                <input id="seq-slider" type="range" min="7" max="17" step="0.25"
                    aria-label=move || tr(lang.get(), "Sequence length, log scale", "Длина последовательности, логарифмическая шкала")
                    aria-valuetext=move || ctx.plan.with(|p| p.seq.to_string())
                    prop:value=move || log().to_string()
                    on:input=move |ev| {
                        let x: f64 = event_target_value(&ev).parse().unwrap_or(13.0);
                        // Snap to multiples of 128 so the GEMM shapes stay aligned.
                        let seq = ((2f64.powf(x) / 128.0).round() * 128.0).clamp(128.0, 131072.0) as u64;
                        ctx.set("seq", &seq.to_string());
                    } />
                <input id="seq" name="seq" type="text" inputmode="numeric" autocomplete="off"
                    aria-invalid=move || err().is_some().to_string() aria-describedby="seq-error"
                    prop:value=move || ctx.plan.with(|p| p.seq.to_string())
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
            <label for="instance">{move || tr(lang.get(), "SageMaker instance", "Инстанс SageMaker")}</label>
            <select id="instance" name="instance" on:change=move |ev| ctx.set("instance", &event_target_value(&ev))>
                {move || {
                    let l = lang.get();
                    instances().iter().map(|i| {
                        let mem = gpu(&i.gpu).map(|g| g.memory_gb).unwrap_or(0.0);
                        let price = i.price_usd_hr.map(|p| format!("${}/h", num(p, 2, l))).unwrap_or_else(|| tr(l, "price unknown", "цена неизвестна").to_string());
                        let label = format!("{} — {} × {} {} GB — {}", i.instance_type, i.gpu_count, short_gpu(&i.gpu), mem, price);
                        let id = i.instance_type.clone();
                        let sel = id.clone();
                        view! { <option value=id selected=move || ctx.plan.with(|p| p.instance == sel)>{label}</option> }
                    }).collect_view()
                }}
                <option value="custom" selected=move || ctx.plan.with(|p| p.instance == "custom")>{move || tr(lang.get(), "Custom GPU…", "Свой GPU…")}</option>
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
