//! Formatting at the edge: bytes, counts, durations, money, per language.

use planner::model::plan::Lang;
use planner::text::Text;

pub const GIB: f64 = (1u64 << 30) as f64;

/// The catalog's text of `id` in the page's language.
pub fn tr(lang: Lang, id: Text) -> &'static str {
    planner::text::t(lang, id)
}

/// A number with `decimals` places and the language's separators.
pub use planner::text::num;

/// Significant figures that do not pretend to more precision than the model has.
pub fn sig(x: f64, lang: Lang) -> String {
    let a = x.abs();
    let d = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    };
    num(x, d, lang)
}

/// The verdict's word and its CSS class: fits, tight (it runs, inside the
/// margin it names) or does not fit (Report::verdict).
pub fn verdict(r: &planner::Report) -> (Text, &'static str) {
    use planner::estimate::report::{Tight, Verdict};
    match (r.verdict, r.memory.tight) {
        (Verdict::Fits, _) => (Text::Fits, "fits"),
        (Verdict::Tight, Some(Tight::Headroom)) => (Text::TightHeadroom, "tight"),
        (Verdict::Tight, _) => (Text::Tight, "tight"),
        (Verdict::DoesNotFit, _) => (Text::DoesNotFit, "nofit"),
    }
}

pub fn gib(bytes: u64, lang: Lang) -> String {
    format!(
        "{} {}",
        num(bytes as f64 / GIB, 1, lang),
        tr(lang, Text::UnitGib)
    )
}

pub fn gb(bytes: u64, lang: Lang) -> String {
    format!(
        "{} {}",
        sig(bytes as f64 / 1e9, lang),
        tr(lang, Text::UnitGb)
    )
}

/// 8,030,261,248 → "8.03 B" / "8,03 млрд"
pub fn params(n: u64, lang: Lang) -> String {
    let x = n as f64;
    if x >= 1e9 {
        format!("{} {}", num(x / 1e9, 2, lang), tr(lang, Text::UnitBillions))
    } else {
        format!("{} {}", num(x / 1e6, 0, lang), tr(lang, Text::UnitMillions))
    }
}

pub fn hours(h: f64, lang: Lang) -> String {
    if h < 1.0 {
        format!("{} {}", sig(h * 60.0, lang), tr(lang, Text::UnitMinutes))
    } else if h < 72.0 {
        format!("{} {}", sig(h, lang), tr(lang, Text::UnitHours))
    } else {
        format!("{} {}", sig(h / 24.0, lang), tr(lang, Text::UnitDays))
    }
}

pub fn seconds(s: f64, lang: Lang) -> String {
    if s < 1.0 {
        format!("{} {}", sig(s * 1000.0, lang), tr(lang, Text::UnitMs))
    } else {
        format!("{} {}", sig(s, lang), tr(lang, Text::UnitSeconds))
    }
}

/// Money rounded to what the inputs can support (prices are uncertain).
pub fn usd(x: f64, lang: Lang) -> String {
    let rounded = if x >= 1000.0 {
        (x / 10.0).round() * 10.0
    } else {
        x
    };
    let d = if x >= 100.0 { 0 } else { 2 };
    format!("${}", num(rounded, d, lang))
}

pub fn percent(x: f64, lang: Lang) -> String {
    format!("{}%", num(x * 100.0, if x < 0.1 { 1 } else { 0 }, lang))
}

/// Tokens: "1.2 M", "524,288"
pub fn tokens(x: f64, lang: Lang) -> String {
    if x >= 1e9 {
        format!("{} {}", sig(x / 1e9, lang), tr(lang, Text::UnitBillions))
    } else if x >= 1e6 {
        format!("{} {}", sig(x / 1e6, lang), tr(lang, Text::UnitMillions))
    } else {
        num(x, 0, lang)
    }
}

/// Human label of a memory term key.
pub fn term_label(key: &str, lang: Lang) -> &'static str {
    match key {
        "weights" => tr(lang, Text::Weights),
        "gradients" => tr(lang, Text::Gradients),
        "master_weights" => tr(lang, Text::MasterWeightsFp32),
        "optimizer_states" => tr(lang, Text::OptimizerStates),
        "weight_copies" => tr(lang, Text::WeightCopiesCastsFP8),
        "adapters" => tr(lang, Text::LoRAAdapters),
        "reference" => tr(lang, Text::ReferenceModel),
        "generation" => tr(lang, Text::VllmEngineMemory),
        "unsharded_unit" => tr(lang, Text::FSDPUnshardedUnit),
        "activations" => tr(lang, Text::Activations),
        "attention_scores" => tr(lang, Text::AttentionScores),
        "logits_and_loss" => tr(lang, Text::LogitsAndLoss),
        "transient" => tr(lang, Text::TransientBuffers),
        "cuda_context" => tr(lang, Text::CUDAContext),
        "workspaces" => tr(lang, Text::WorkspacesCuBLASNCCL),
        "fragmentation" => tr(lang, Text::Fragmentation),
        _ => tr(lang, Text::Other),
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn locale_separators() {
        assert_eq!(num(12345.67, 1, Lang::En), "12,345.7");
        assert_eq!(num(12345.67, 1, Lang::Ru), "12\u{202f}345,7");
        assert_eq!(num(999.0, 0, Lang::En), "999");
        assert_eq!(params(8_030_261_248, Lang::En), "8.03 B");
    }
}
