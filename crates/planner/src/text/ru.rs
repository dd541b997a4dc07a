//! Русский каталог: перевод каждой строки `en.rs`. Без подстановочного
//! варианта: пропущенный перевод не компилируется.

use super::Text;

pub(super) fn russian(id: Text) -> &'static str {
    match id {
        // ---- plan: чтение ссылки ----
        Text::ValueTooLong => "значение `{key}` длиннее {max} символов и пропущено",
        Text::BadValue => "`{key}`: {problem} (получено \"{value}\"); оставлено прежнее значение",
        Text::ExpectedWholeNumber => "ожидалось целое число от {lo} до {hi}",
        Text::ExpectedNumber => "ожидалось число от {lo} до {hi}",
        Text::ExpectedFlag => "ожидалось 0 или 1",
        Text::ExpectedOneOf => "ожидалось одно из: {keys}",
        Text::NewerSchema => "ссылка из более новой версии схемы (v={v}); прочитана как v={current}",
        Text::UnknownModel => "неизвестная модель",
        Text::ExpectedMlp => "ожидалось swiglu, geglu или gelu",
        Text::ExpectedCheckpointing => "ожидалось none, selective, full, op или доля слоёв от 0 до 1",
        Text::UnknownInstance => "неизвестный тип инстанса SageMaker",
        Text::ExpectedRole => "ожидался ARN роли IAM (arn:aws:iam::123456789012:role/Name) или имя роли",
        Text::ExpectedS3 => "ожидался S3 URI вида s3://my-bucket/runs (без пробелов и кавычек)",
        Text::ExpectedJobName => "имя задания SageMaker: до 63 латинских букв, цифр и дефисов, начинается с буквы или цифры",
        Text::ExpectedEntry => "ожидался относительный путь к скрипту .py (буквы, цифры, _ . / -)",
        Text::ExpectedHfModel => "ожидался идентификатор модели Hugging Face вида meta-llama/Llama-3.1-8B",
        Text::ExpectedLockList => "ожидался список через запятую из {keys}",
        Text::UnknownKey => "неизвестный ключ `{key}` пропущен",

        // ---- архитектура ----
        Text::NotPositiveWhole => "`{key}` должно быть целым положительным числом",
        Text::KvHeadsDoNotDivideHeads => "kv_heads ({kv_heads}) должно делить heads ({heads}) для grouped-query attention",
        Text::ActiveExpertsOutOfRange => "число активных экспертов ({active}) должно быть от 1 до числа экспертов ({experts})",
        Text::ExpertFfnNotPositive => "`expert_ffn` должно быть положительным",

        // ---- разбор плана ----
        Text::HeadsDoNotDivideHidden => "heads ({heads}) должно делить hidden ({hidden}), если head_dim не задан",
        Text::NoMultiNode => "{instance} не поддерживает многоузловое обучение через EFA: возьмите 1 узел или другой тип инстанса",
        Text::TpDoesNotDivideHeads => "степень тензорного параллелизма {tp} должна делить heads ({heads}) и kv_heads ({kv_heads})",
        Text::TpExceedsNode => "тензорный параллелизм ({tp}) должен помещаться в один узел ({gpus} GPU)",
        Text::PpDoesNotDivideLayers => "степень конвейерного параллелизма {pp} должна делить число слоёв ({layers})",
        Text::CpDoesNotDivideSeq => "степень контекстного параллелизма {cp} должна делить длину последовательности ({seq})",
        Text::EpDoesNotDivideExperts => "степень экспертного параллелизма {ep} должна делить число экспертов ({experts})",
        Text::EpWithoutMoe => "экспертный параллелизм нужен только для моделей MoE",
        Text::ParallelDegreesExceedGpus => "tp x pp x cp = {product} должно делить число GPU ({gpus})",
        Text::EpExceedsGpus => "степень экспертного параллелизма {ep} больше числа доступных GPU ({available})",
        Text::ShardDoesNotDivideDp => "группа гибридного шардирования {shard} должна делить степень параллелизма данных ({dp})",
        Text::Fp8Unsupported => "у {gpu} нет тензорных ядер FP8: {precision} на нём невозможен; используйте bf16",
        Text::BlackwellOnly => "{precision} требует блочного масштабирования Blackwell, которого у {gpu} нет; используйте fp8",
        Text::VpWithoutPp => "чередование (vp > 1) требует конвейерного параллелизма (pp > 1)",

        // ---- насколько проверена оценка ----
        Text::MemoryCheckedSingleRank => "HF Transformers + Trainer на одном ранге: совпадает со 120 измеренными шагами PyTorch (медианная ошибка 0,0%, худшая 6,6%)",
        Text::MemoryCheckedSharded => "шардирование FSDP/ZeRO: в пределах 13% от измеренных пиков torchtitan для 8B, обычно ниже них; держите запас 10-15%",
        Text::MemoryDerived => "тензорный, конвейерный, контекстный и экспертный параллелизм и профиль Megatron следуют опубликованным формулам (Korthikanti et al. 2022, Narayanan et al. 2021), но здесь не сверены с измерениями",
        Text::ThroughputAdaAssumed => "для L4/L40S нет опубликованных измерений: взяты эффективности, подобранные для Hopper",
        Text::ThroughputBlackwellPartly => "Blackwell откалиброван только на запусках Megatron-Bridge в FP8 (медианная ошибка 7%); эффективность BF16 и стека HF перенесена с Hopper",
        Text::ThroughputCalibrated => "откалибровано на 33 опубликованных запусках (NeMo, Megatron-Bridge, DGX Cloud, torchtitan, статьи Megatron): медианная ошибка 3,5%, худшая 22%",

        // ---- предупреждения ----
        Text::InlineActivations => "активации",
        Text::InlineAttentionScores => "матрицы внимания",
        Text::InlineLogitsAndLoss => "логиты и loss",
        Text::InlineOptimizerStates => "состояния оптимизатора",
        Text::InlineWeights => "веса",
        Text::InlineGradients => "градиенты",
        Text::InlineModelStates => "состояния модели",
        Text::OverBudget => "нужно {peak} ГиБ на GPU при бюджете {budget} ГиБ; больше всего занимают {term} ({term_gib} ГиБ): {fix}",
        Text::FixFlashAttention => "включите flash attention (attn=flash)",
        Text::FixFullCheckpointing => "включите полный activation checkpointing (ckpt=full)",
        Text::FixFusedLoss => "используйте fused cross-entropy (loss=fused)",
        Text::FixLowerMicroBatch => "уменьшите micro-batch (mb)",
        Text::FixShardStates => "шардируйте состояния модели (zero=3)",
        Text::FixMoreHardware => "возьмите больше GPU или узлов, тензорный/конвейерный параллелизм или GPU с большей памятью",
        Text::MemoryUnderused => "занято лишь {percent}% бюджета памяти: micro-batch побольше (влезает до {max_mb}) лучше загрузит GPU",
        Text::Fp8SmallModel => "FP8 почти не ускоряет модели меньше ~7B: матричные умножения слишком малы, а преобразования типов тратят пропускную способность памяти",
        Text::Fp8KeepBf16 => "оставьте эмбеддинги, нормализации и LM head в BF16 (TransformerEngine так делает по умолчанию): FP8 в них грозит расхождением loss",
        Text::SelectiveNoopWithFlash => "выборочный пересчёт отбрасывает только матрицы внимания, а flash attention их и так не хранит: здесь он ничего не экономит",
        Text::LongSequenceWithoutCheckpointing => "при {seq} токенах одни активации занимают {gib} ГиБ на GPU: включите activation checkpointing",
        Text::EagerAttentionLongSequence => "eager attention хранит матрицы s x s ({gib} ГиБ здесь) и работает медленно: используйте flash/SDPA",
        Text::DimsNotMultipleOf64 => "{dims} не кратно 64: тензорные ядра работают ниже пика",
        Text::SequenceBeyondContext => "последовательность {seq} длиннее контекста, на котором обучена модель ({context}): нужны масштабирование RoPE и длинные данные",
        Text::MicroBatchOneLowUtilisation => "micro-batch 1 для модели {billions}B даёт лишь {mfu}% MFU: micro-batch побольше окупит накладные расходы на связь и запуск ядер",
        Text::CheckpointOverhead => "сохранение чекпоинтов ({gb} ГБ, {seconds} с на сохранение) занимает {percent}% времени: {fix}",
        Text::FixSaveLessOften => "сохраняйте реже (увеличьте save_every)",
        Text::FixSaveAsync => "сохраняйте асинхронно (async_save=1) или реже",
        Text::PriceUnknown => "цена SageMaker для {instance} неизвестна: введите свою цену за час (price=), чтобы увидеть стоимость",
        Text::PriceUncertain => "цена {instance} в каталоге взята по памяти и не проверена: сверьтесь со страницей цен SageMaker и введите свою (price=)",
        Text::Fp32Slow => "FP32 работает намного ниже пика тензорных ядер и удваивает память: используйте bf16",

        // ---- автоплан ----
        Text::TimesFaster => "в {x} раза быстрее",
        Text::TimesSlower => "в {x} раза медленнее",
        Text::PercentCheaper => "на {percent}% дешевле",
        Text::PercentDearer => "на {percent}% дороже",
        Text::FitsUnlikeYours => "помещается, в отличие от вашего плана",
        Text::CostForHours => "; ${usd} за {hours} ч",
        Text::OnAParWithYours => "как ваш план",
        Text::ComparedWithYours => "{parts} вашего плана",
        Text::And => " и ",
    }
}
