//! The seed articles' field guide as rules (SPEC §6). Each warning says why
//! and which setting fixes it; `fix` is a single `key=value` where one exists.

use crate::memory::{MemoryBreakdown, Term};
use crate::plan::{Attention, Checkpointing, Lang, Loss, Precision};
use crate::report::{tr, Message, Report, Resolved};

const GIB: f64 = (1u64 << 30) as f64;

fn warn(
    code: &'static str,
    key: &'static str,
    message: String,
    fix: Option<(&'static str, String)>,
) -> Message {
    Message {
        code,
        key: Some(key),
        message,
        fix,
    }
}

fn term_name(term: Term, ru: bool) -> &'static str {
    match (term, ru) {
        (Term::Activations, false) => "activations",
        (Term::Activations, true) => "активации",
        (Term::AttentionScores, false) => "attention scores",
        (Term::AttentionScores, true) => "матрицы внимания",
        (Term::LogitsAndLoss, false) => "logits and loss",
        (Term::LogitsAndLoss, true) => "логиты и loss",
        (Term::OptimizerStates, false) => "optimizer states",
        (Term::OptimizerStates, true) => "состояния оптимизатора",
        (Term::Weights, false) => "weights",
        (Term::Weights, true) => "веса",
        (Term::Gradients, false) => "gradients",
        (Term::Gradients, true) => "градиенты",
        (_, false) => "model states",
        (_, true) => "состояния модели",
    }
}

/// All rules that apply to this plan.
pub fn check(r: &Resolved<'_>, report: &Report, mem: &MemoryBreakdown) -> Vec<Message> {
    let plan = r.plan;
    let ru = plan.lang == Some(Lang::Ru);
    let arch = &r.arch;
    let mut out = Vec::new();
    let budget = report.memory.budget_bytes as f64;
    let peak = report.memory.peak_bytes_per_gpu as f64;
    if !report.fits {
        // Name the term that blows up, and the one setting most likely to fix it.
        let (term, bytes) = mem
            .terms
            .iter()
            .copied()
            .max_by_key(|(_, b)| *b)
            .unwrap_or((Term::Weights, 0));
        let act = matches!(term, Term::Activations | Term::AttentionScores);
        let (fix, en, rus): (Option<(&'static str, String)>, &str, &str) = if term
            == Term::AttentionScores
            && plan.attention == Attention::Eager
        {
            (
                Some(("attn", "flash".into())),
                "use flash attention (attn=flash)",
                "включите flash attention (attn=flash)",
            )
        } else if act && plan.checkpointing != Checkpointing::Full {
            (
                Some(("ckpt", "full".into())),
                "turn on full activation checkpointing (ckpt=full)",
                "включите полный activation checkpointing (ckpt=full)",
            )
        } else if term == Term::LogitsAndLoss && plan.loss == Loss::Plain {
            (
                Some(("loss", "fused".into())),
                "use a fused cross-entropy (loss=fused)",
                "используйте fused cross-entropy (loss=fused)",
            )
        } else if plan.micro_batch > 1
            && matches!(
                term,
                Term::Activations | Term::LogitsAndLoss | Term::AttentionScores
            )
        {
            let mb = report.max_micro_batch.max(1);
            (
                Some(("mb", mb.to_string())),
                "lower the micro-batch (mb)",
                "уменьшите micro-batch (mb)",
            )
        } else if plan.zero < 3 && report.layout.dp > 1 {
            (
                Some(("zero", "3".into())),
                "shard the model states (zero=3)",
                "шардируйте состояния модели (zero=3)",
            )
        } else {
            (None, "use more GPUs or nodes, tensor/pipeline parallelism, or a larger GPU", "возьмите больше GPU или узлов, тензорный/конвейерный параллелизм или GPU с большей памятью")
        };
        let key = fix.as_ref().map(|f| f.0).unwrap_or("nodes");
        out.push(warn(
            "over_budget",
            key,
            tr(
                ru,
                format!("needs {:.1} GiB per GPU but the budget is {:.1} GiB; the largest term is {} ({:.1} GiB): {en}", peak / GIB, budget / GIB, term_name(term, false), bytes as f64 / GIB),
                format!("нужно {:.1} ГиБ на GPU при бюджете {:.1} ГиБ; больше всего занимают {} ({:.1} ГиБ): {rus}", peak / GIB, budget / GIB, term_name(term, true), bytes as f64 / GIB),
            ),
            fix,
        ));
    } else if peak < 0.7 * budget && report.max_micro_batch > plan.micro_batch {
        let mb = report
            .max_micro_batch
            .min(plan.micro_batch * 2)
            .max(plan.micro_batch + 1);
        out.push(warn(
            "memory_underused",
            "mb",
            tr(
                ru,
                format!("uses only {:.0}% of the memory budget: a larger micro-batch (up to {} fits) keeps the GPUs busier", 100.0 * peak / budget, report.max_micro_batch),
                format!("занято лишь {:.0}% бюджета памяти: micro-batch побольше (влезает до {}) лучше загрузит GPU", 100.0 * peak / budget, report.max_micro_batch),
            ),
            Some(("mb", mb.to_string())),
        ));
    }
    if plan.precision.is_low_precision() && report.parameters < 7_000_000_000 {
        out.push(warn(
            "fp8_small_model",
            "precision",
            tr(
                ru,
                "FP8 gains little below ~7B parameters: the GEMMs are too small to be compute-bound, and the casts cost bandwidth".into(),
                "FP8 почти не ускоряет модели меньше ~7B: матричные умножения слишком малы, а преобразования типов тратят пропускную способность памяти".into(),
            ),
            Some(("precision", "bf16".into())),
        ));
    }
    if plan.precision.is_low_precision() {
        out.push(warn(
            "fp8_keep_bf16",
            "precision",
            tr(
                ru,
                "keep the embedding, norms and LM head in BF16 (TransformerEngine does so by default): FP8 there risks loss divergence".into(),
                "оставьте эмбеддинги, нормализации и LM head в BF16 (TransformerEngine так делает по умолчанию): FP8 в них грозит расхождением loss".into(),
            ),
            None,
        ));
    }
    if plan.checkpointing == Checkpointing::Selective && plan.attention == Attention::Flash {
        out.push(warn(
            "selective_noop_with_flash",
            "ckpt",
            tr(
                ru,
                "selective recomputation only drops the attention scores, which flash attention never stores: it saves nothing here".into(),
                "выборочный пересчёт отбрасывает только матрицы внимания, а flash attention их и так не хранит: здесь он ничего не экономит".into(),
            ),
            Some(("ckpt", "none".into())),
        ));
    }
    if plan.seq >= 32_768 && plan.checkpointing == Checkpointing::None && !report.fits {
        out.push(warn(
            "long_sequence_without_checkpointing",
            "ckpt",
            tr(
                ru,
                format!("at {} tokens the activations alone take {:.1} GiB per GPU: turn on activation checkpointing", plan.seq, mem.saved_activation_bytes as f64 / GIB),
                format!("при {} токенах одни активации занимают {:.1} ГиБ на GPU: включите activation checkpointing", plan.seq, mem.saved_activation_bytes as f64 / GIB),
            ),
            Some(("ckpt", "full".into())),
        ));
    }
    if plan.attention == Attention::Eager && plan.seq >= 4096 {
        out.push(warn(
            "eager_attention_long_sequence",
            "attn",
            tr(
                ru,
                format!("eager attention stores s x s scores ({:.1} GiB here) and is slow: use flash/SDPA attention", mem.get(Term::AttentionScores) as f64 / GIB),
                format!("eager attention хранит матрицы s x s ({:.1} ГиБ здесь) и работает медленно: используйте flash/SDPA", mem.get(Term::AttentionScores) as f64 / GIB),
            ),
            Some(("attn", "flash".into())),
        ));
    }
    let misaligned: Vec<String> = [
        ("hidden", arch.hidden),
        ("ffn", arch.ffn),
        ("head_dim", arch.head_dim),
    ]
    .iter()
    .filter(|(_, v)| v % 64 != 0)
    .map(|(k, v)| format!("{k}={v}"))
    .collect();
    if !misaligned.is_empty() {
        out.push(warn(
            "dims_not_multiple_of_64",
            "hidden",
            tr(
                ru,
                format!(
                    "{} not a multiple of 64: tensor-core GEMMs run below peak",
                    misaligned.join(", ")
                ),
                format!(
                    "{} не кратно 64: тензорные ядра работают ниже пика",
                    misaligned.join(", ")
                ),
            ),
            None,
        ));
    }
    if arch.max_context > 0 && plan.seq > arch.max_context {
        out.push(warn(
            "sequence_beyond_context",
            "seq",
            tr(
                ru,
                format!("sequence {} is longer than the model's trained context ({}): long-context quality needs RoPE scaling and long-context data", plan.seq, arch.max_context),
                format!("последовательность {} длиннее контекста, на котором обучена модель ({}): нужны масштабирование RoPE и длинные данные", plan.seq, arch.max_context),
            ),
            Some(("seq", arch.max_context.to_string())),
        ));
    }
    if plan.micro_batch == 1
        && report.parameters > 30_000_000_000
        && report.throughput.mfu < 0.3
        && report.max_micro_batch > 1
    {
        out.push(warn(
            "micro_batch_one_low_utilisation",
            "mb",
            tr(
                ru,
                format!("micro-batch 1 on a {:.0}B model runs at {:.0}% MFU: a larger micro-batch amortises communication and kernel overheads", report.parameters as f64 / 1e9, report.throughput.mfu * 100.0),
                format!("micro-batch 1 для модели {:.0}B даёт лишь {:.0}% MFU: micro-batch побольше окупит накладные расходы на связь и запуск ядер", report.parameters as f64 / 1e9, report.throughput.mfu * 100.0),
            ),
            Some(("mb", "2".into())),
        ));
    }
    let ck = &report.checkpoint;
    if ck.wall_share > 0.03 {
        let (key, fix, en, rus) = if plan.async_save {
            (
                "save_every",
                (plan.save_every * 4).to_string(),
                "save less often (raise save_every)",
                "сохраняйте реже (увеличьте save_every)",
            )
        } else {
            (
                "async_save",
                "1".to_string(),
                "save asynchronously (async_save=1) or less often",
                "сохраняйте асинхронно (async_save=1) или реже",
            )
        };
        out.push(warn(
            "checkpoint_overhead",
            key,
            tr(
                ru,
                format!("saving checkpoints ({:.0} GB each, {:.0} s per save) takes {:.1}% of wall time: {en}", ck.size_bytes as f64 / 1e9, ck.seconds_per_save, ck.wall_share * 100.0),
                format!("сохранение чекпоинтов ({:.0} ГБ, {:.0} с на сохранение) занимает {:.1}% времени: {rus}", ck.size_bytes as f64 / 1e9, ck.seconds_per_save, ck.wall_share * 100.0),
            ),
            Some((key, fix)),
        ));
    }
    if report.cost.total_usd.is_none() {
        out.push(warn(
            "price_unknown",
            "price",
            tr(
                ru,
                format!("no SageMaker price is known for {}: enter the hourly price you pay (price=) to see the cost", report.instance),
                format!("цена SageMaker для {} неизвестна: введите свою цену за час (price=), чтобы увидеть стоимость", report.instance),
            ),
            None,
        ));
    } else if report.cost.price_source.starts_with("catalogue") {
        out.push(warn(
            "price_uncertain",
            "price",
            tr(
                ru,
                format!("the catalogue price for {} is recalled, not verified: check the SageMaker pricing page and enter yours (price=)", report.instance),
                format!("цена {} в каталоге взята по памяти и не проверена: сверьтесь со страницей цен SageMaker и введите свою (price=)", report.instance),
            ),
            None,
        ));
    }
    if plan.precision == Precision::Fp32 {
        out.push(warn(
            "fp32_slow",
            "precision",
            tr(
                ru,
                "FP32 runs far below tensor-core peak and doubles memory: use bf16".into(),
                "FP32 работает намного ниже пика тензорных ядер и удваивает память: используйте bf16".into(),
            ),
            Some(("precision", "bf16".into())),
        ));
    }
    out
}
