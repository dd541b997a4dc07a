//! The text catalogs (`crates/planner/src/text/`): every id has a text in
//! both languages with the same `{placeholders}`, every id is used by the
//! planner or the page, and no user-facing Russian is written outside the
//! Russian catalog (`ru.txt` lists every id of `en.rs`, in its order).

use planner::model::plan::Lang;
use planner::text::{fill, placeholders, t, Text};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every Rust source of the planner and the page, with its text.
fn sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join("crates/planner/src"), root().join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("readable source");
                out.push((path, text));
            }
        }
    }
    out
}

/// The catalogs and the module that declares them (`text/message.rs`,
/// which renders phrases, is code like any other).
fn in_catalog(path: &Path) -> bool {
    let text = root().join("crates/planner/src/text");
    ["en.rs", "ru.txt", "mod.rs"]
        .iter()
        .any(|f| path == text.join(f))
}

#[test]
fn every_text_exists_in_both_languages_with_the_same_placeholders() {
    assert!(Text::ALL.len() > 250, "ids: {}", Text::ALL.len());
    for &id in Text::ALL {
        let (en, ru) = (t(Lang::En, id), t(Lang::Ru, id));
        assert!(
            !en.trim().is_empty() && !ru.trim().is_empty(),
            "{id:?} is empty"
        );
        let (mut a, mut b) = (placeholders(en), placeholders(ru));
        a.sort_unstable();
        b.sort_unstable();
        a.dedup();
        b.dedup();
        assert_eq!(a, b, "{id:?}: placeholders differ between en and ru");
    }
}

/// The page reads `ru.txt` by position: it lists every id of `en.rs`, once,
/// in `en.rs`'s order, and a catalog with a text missing is refused.
#[test]
fn russian_catalog_follows_the_english_order() {
    let ru = planner::text::parse_catalog(planner::text::RUSSIAN_CATALOG).expect("ru.txt reads");
    let ids: Vec<&str> = ru.iter().map(|(id, _)| *id).collect();
    let want: Vec<String> = Text::ALL.iter().map(|id| format!("{id:?}")).collect();
    for (i, (a, b)) in want.iter().zip(&ids).enumerate() {
        assert_eq!(a, b, "entry {i}: en.rs has {a}, ru.txt has {b}");
    }
    assert_eq!(
        ids.len(),
        want.len(),
        "ru.txt has {} entries for {} ids",
        ids.len(),
        want.len()
    );
    let short: String = planner::text::RUSSIAN_CATALOG
        .lines()
        .skip(8)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        planner::text::load_russian(&short).is_err(),
        "a catalog with texts missing is refused"
    );
    assert!(
        planner::text::parse_catalog("Fits => fits").is_err(),
        "a line without quotes is refused"
    );
}

#[test]
fn every_id_is_used_outside_the_catalog() {
    let code: String = sources()
        .into_iter()
        .filter(|(p, _)| !in_catalog(p))
        .map(|(_, s)| s)
        .collect();
    let unused: Vec<String> = Text::ALL
        .iter()
        .map(|id| format!("{id:?}"))
        .filter(|name| {
            let needle = format!("Text::{name}");
            !code.match_indices(&needle).any(|(i, _)| {
                // a whole identifier: `Text::Fit` must not count `Text::Fits`
                let next = code[i + needle.len()..].chars().next();
                !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
        .collect();
    assert!(unused.is_empty(), "ids nobody uses: {unused:?}");
}

#[test]
fn russian_lives_only_in_its_catalog() {
    let cyrillic = |c: char| ('\u{0400}'..='\u{04FF}').contains(&c);
    let mut files = sources();
    let index = root().join("index.html");
    files.push((
        index.clone(),
        std::fs::read_to_string(&index).expect("index.html"),
    ));
    for (path, text) in files {
        if path.ends_with("text/ru.rs") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.chars().any(cyrillic),
                "{}:{}: Russian outside text/ru.rs: {line}",
                path.display(),
                n + 1
            );
        }
    }
}

#[test]
fn no_bilingual_helper_survives() {
    // The old `tr(lang, "English", "Russian")` helpers built text outside the catalog.
    for (path, text) in sources() {
        assert!(
            !text.contains("en: &'static str, ru: &'static str")
                && !text.contains("fn tr<T>(ru: bool"),
            "{} still takes English and Russian side by side",
            path.display()
        );
    }
}

/// `fill` substitutes each named value once and leaves other braces alone.
#[test]
fn fill_substitutes_named_values() {
    let args: [(&str, &dyn std::fmt::Display); 2] = [("tp", &3), ("gpus", &8)];
    assert_eq!(
        fill(Lang::En, Text::TpExceedsNode, &args),
        "tensor parallelism (3) should stay inside one NVLink domain (8 GPUs)"
    );
    assert_eq!(
        fill(Lang::Ru, Text::TpExceedsNode, &args),
        "тензорный параллелизм (3) должен помещаться в один домен NVLink (8 GPU)"
    );
    // A value that looks like a placeholder is written as it is.
    let args: [(&str, &dyn std::fmt::Display); 1] = [("key", &"{key}")];
    assert_eq!(
        fill(Lang::En, Text::UnknownKey, &args),
        "unknown key `{key}` was ignored"
    );
}

/// #24: a Russian warning wrote "95.3 ГиБ" beside the page's "95,3 ГиБ". The
/// model's sentences now format numbers as the language does: a decimal
/// comma and narrow no-break spaces in Russian, a point and commas in English.
#[test]
fn warnings_and_labels_format_numbers_as_the_language_does() {
    use planner::text::{render, render_all};
    let q = "model=llama-3.1-70b&seq=32768&instance=ml.p5.48xlarge";
    let r = planner::evaluate(&planner::Plan::from_query(q).plan);
    let over = |lang| {
        r.warnings
            .iter()
            .find(|w| w.code() == "over_budget")
            .map(|w| render(lang, &w.phrase))
            .expect("70B at 32K on one p5 is over budget")
    };
    let decimal_point = |s: &str| {
        s.as_bytes()
            .windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit())
    };
    let (ru_msg, en_msg) = (over(Lang::Ru), over(Lang::En));
    assert!(!decimal_point(&ru_msg), "{ru_msg}");
    assert!(
        ru_msg.contains(',') && decimal_point(&en_msg),
        "{ru_msg} / {en_msg}"
    );
    let ru_note = render_all(Lang::Ru, &r.memory.accuracy.note);
    assert!(!decimal_point(&ru_note), "{ru_note}");
    assert_eq!(
        planner::text::num(12345.67, 1, planner::model::plan::Lang::Ru),
        "12\u{202f}345,7"
    );
    assert_eq!(
        planner::text::num(12345.67, 1, planner::model::plan::Lang::En),
        "12,345.7"
    );
    assert_eq!(
        planner::text::signed(-0.04, 1, planner::model::plan::Lang::En),
        "+0.0"
    );
}

/// A speed note names its kind of plan; in Russian its layout is Russian
/// too (the default plan, Hugging Face data parallel on B200, is a kind no
/// published run checks: "Blackwell, HF Trainer, BF16, data parallel").
#[test]
fn group_names_follow_the_language() {
    use planner::text::render_all;
    let r = planner::evaluate(&planner::Plan::default());
    let note = &r.throughput_accuracy.note;
    let en = render_all(Lang::En, note);
    let ru = render_all(Lang::Ru, note);
    assert!(en.contains("HF Trainer, BF16, data parallel)"), "{en}");
    assert!(
        ru.contains("HF Trainer, BF16, параллелизм по данным)"),
        "{ru}"
    );
    assert!(!ru.contains("data parallel"), "{ru}");
}

/// Russian counts take one of three forms, English one of two (CLDR's rules
/// for whole numbers): 1 шагом, 2 шагами, 5 шагами; 21 запуск, 22 запуска,
/// 25 запусков, 11 запусков, 111 запусков.
#[test]
fn counts_take_their_plural_forms() {
    use planner::text::{plural, render, Phrase};
    let ru = |n| plural(Lang::Ru, n, "запуск|запуска|запусков");
    let forms: Vec<&str> = [1, 2, 4, 5, 11, 12, 14, 21, 22, 25, 101, 111, 112]
        .iter()
        .map(|&n| ru(n))
        .collect();
    assert_eq!(
        forms,
        [
            "запуск",
            "запуска",
            "запуска",
            "запусков",
            "запусков",
            "запусков",
            "запусков",
            "запуск",
            "запуска",
            "запусков",
            "запуск",
            "запусков",
            "запусков"
        ]
    );
    assert_eq!(plural(Lang::En, 1, "run|runs"), "run");
    assert_eq!(plural(Lang::En, 0, "run|runs"), "runs");
    // In a catalog sentence: two published runs, then one.
    let few = |n: u64| {
        let p = Phrase::new(Text::ThroughputFewRows)
            .with("rows", n)
            .with("models", 1u64)
            .with("group", "Hopper")
            .with("under", planner::text::Arg::Signed(-3.0, 1))
            .with("over", planner::text::Arg::Signed(4.0, 1));
        (render(Lang::En, &p), render(Lang::Ru, &p))
    };
    let (en1, ru1) = few(1);
    let (en2, ru2) = few(2);
    assert!(en1.contains("on 1 published run of"), "{en1}");
    assert!(en2.contains("on 2 published runs of"), "{en2}");
    assert!(ru1.contains("по 1 опубликованному запуску"), "{ru1}");
    assert!(ru2.contains("по 2 опубликованным запускам"), "{ru2}");
}

/// A derived shape's size reads with the language's decimal mark (#34: the
/// core wrote `1.5` into the Russian page).
#[test]
fn derived_shape_size_uses_the_decimal_mark() {
    let plan = planner::Plan::from_query("params_b=1.5").plan;
    let (_, name) = planner::model::resolve::resolve_architecture(&plan);
    assert_eq!(
        planner::text::render(Lang::En, &name),
        "~1.5B (derived shape)"
    );
    assert_eq!(
        planner::text::render(Lang::Ru, &name),
        "~1,5B (форма по размеру)"
    );
}

/// #34: the core pre-rendered parts of two messages in English: the GRPO
/// launcher's refusals ("precisions other than BF16") and vLLM's share
/// ("0.05") reached a Russian page as they were. Each is now a phrase or a
/// number the page's language writes.
#[test]
fn grpo_refusals_and_shares_are_said_in_the_language() {
    use planner::text::render;
    // An error, or a note on the export (#55).
    let error = |q: &str, id: Text| {
        let r = planner::evaluate(&planner::Plan::from_query(q).plan);
        let all = r.errors.iter().chain(&r.export_notes);
        let e = all.clone().find(|e| e.id() == id).cloned();
        e.unwrap_or_else(|| panic!("{q}: {id:?} in {:?}", all.collect::<Vec<_>>()))
    };
    let grpo = "model=llama-3.1-8b&instance=ml.p5.48xlarge&zero=3&ckpt=full&stage=grpo";
    let fp8 = error(&format!("{grpo}&precision=fp8"), Text::GrpoRefuses);
    let (ru, en) = (render(Lang::Ru, &fp8.phrase), render(Lang::En, &fp8.phrase));
    assert!(
        ru.contains("точности, кроме BF16") && !ru.contains("other than"),
        "{ru}"
    );
    assert!(en.contains("precisions other than BF16"), "{en}");
    let small = error(
        &format!("{grpo}&gen_share=0.05").replace("8b", "70b"),
        Text::GrpoEngineTooSmall,
    );
    let (ru, en) = (
        render(Lang::Ru, &small.phrase),
        render(Lang::En, &small.phrase),
    );
    assert!(
        ru.contains("(0,05)") && en.contains("(0.05)"),
        "{ru} / {en}"
    );
}
