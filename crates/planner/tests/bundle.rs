//! The launch bundle and the measured line read back (tests/bundle trains with
//! the bundle's script for real; these check the planner's side).

use planner::launch::bundle::{entry_path, files, requirements};
use planner::launch::export::Format;
use planner::runs::measured::{compare, parse, Problem};
use planner::{evaluate, Plan};

fn plan(q: &str) -> Plan {
    let d = Plan::from_query(q);
    assert!(d.notices.is_empty(), "{q}: {:?}", d.notices);
    d.plan
}

#[test]
fn a_bundle_is_readme_launcher_script_and_requirements() {
    let p = plan("model=llama-3.1-8b&entry=src/train_fsdp.py");
    let modules = ["import train_plan\n", "a", "b", "c"];
    let f = files(
        &p,
        Format::Pytorch,
        &[&["print('train')\n"], &modules[..]].concat(),
    );
    let paths: Vec<&str> = f.iter().map(|f| f.path.as_str()).collect();
    // train.py's modules go beside it, wherever the plan names it (#59).
    assert_eq!(
        paths,
        [
            "README.md",
            "launch.py",
            "scripts/src/train_fsdp.py",
            "scripts/src/train_plan.py",
            "scripts/src/train_model.py",
            "scripts/src/train_data.py",
            "scripts/src/train_checkpoints.py",
            "scripts/requirements.txt"
        ]
    );
    assert_eq!(
        f[2].text, "print('train')\n",
        "the script is carried as given"
    );
    assert_eq!(f[3].text, modules[0], "and its modules");
    assert!(f[1].text.contains("entry_point=\"src/train_fsdp.py\""));
    assert!(f[0].text.contains("python launch.py --trial"));
}

#[test]
fn the_entry_script_never_leaves_the_bundle() {
    let mut p = Plan::default();
    for (entry, want) in [
        ("train.py", "train.py"),
        ("src/train.py", "src/train.py"),
        ("../train.py", "train.py"),
        ("/etc/train.py", "train.py"),
        ("train.sh", "train.py"),
        ("", "train.py"),
    ] {
        p.launch.entry = entry.into();
        assert_eq!(entry_path(&p), want, "{entry}");
    }
}

#[test]
fn requirements_name_only_what_the_image_lacks() {
    let full = requirements(&plan("model=llama-3.1-8b"), Format::Huggingface);
    assert!(
        !full.contains("transformers"),
        "the HF image has transformers"
    );
    let pt = requirements(&plan("model=llama-3.1-8b"), Format::Pytorch);
    assert!(
        pt.contains("transformers==4.56.2"),
        "the PyTorch image does not"
    );
    let q = requirements(
        &plan("model=llama-3.1-8b&train=qlora&zero=0"),
        Format::Huggingface,
    );
    assert!(q.contains("peft==") && q.contains("bitsandbytes=="), "{q}");
    let fp8 = requirements(&plan("model=llama-3.1-8b&precision=fp8"), Format::Pytorch);
    assert!(fp8.contains("torchao=="), "{fp8}");
}

#[test]
fn launch_code_carries_the_plan_and_a_trial_switch() {
    let p =
        plan("model=llama-3.1-70b&nodes=4&shard=8&instance=ml.p5.48xlarge&ckpt=full&loss=fused");
    let code = planner::launch::export::export(&p, Format::ModelTrainer).code;
    for want in [
        "\"model_id\": \"meta-llama/Llama-3.1-70B\"",
        "\"shard_degree\": 8",
        "\"planned_world_size\": 32",
        "\"zero_stage\": 3",
        "\"checkpointing\": \"full\"",
        "\"loss\": \"fused\"",
        "TRIAL = \"--trial\" in sys.argv",
        "hyperparameters[\"max_steps\"] = 30",
    ] {
        assert!(code.contains(want), "missing {want}");
    }
    // A custom shape has no Hub weights: the script asks for a model instead of guessing.
    let custom = plan("model=llama-3.1-8b&hidden=5120");
    assert!(!planner::launch::export::export(&custom, Format::Pytorch)
        .code
        .contains("model_id"));
}

const LINE: &str = r#"TRAIN_PLANNER_MEASURED {"v": 1, "plan": "model=llama-3.1-8b", "gpu": "NVIDIA B200", "world_size": 8, "steps": 30, "measured_steps": 27, "step_time_s": 6.5536, "tokens_per_second_per_gpu": 10000.0, "max_memory_allocated_gib": [70.0, 71.5], "max_memory_reserved_gib": [80.0, 82.25], "compute": "fsdp bf16 gather, fp32 reduce"}"#;

#[test]
fn a_measured_line_re_bases_time_and_cost() {
    let p = plan("model=llama-3.1-8b");
    let r = evaluate(&p);
    let m = parse(&format!("step 30 loss 2.1\n{LINE}\n")).expect("the line parses");
    let c = compare(&p, &r, &m).expect("same plan");
    // By hand: 1e10 tokens / (10,000 tokens/s/GPU x 8 GPUs) = 125,000 s = 34.722 h,
    // plus the predicted checkpoint time.
    let want = 1e10 / (10_000.0 * 8.0) / 3600.0 + r.time.checkpoint_hours;
    assert!((c.hours - want).abs() < 1e-9, "{} vs {want}", c.hours);
    let price = r.cost.price_per_instance_hour.expect("p6-b200 has a price");
    assert!((c.usd.unwrap() - price * c.hours).abs() < 1e-6);
    assert_eq!(
        c.measured_peak_gib,
        Some(82.25),
        "the largest reserved peak"
    );
    assert!(c.notes.is_empty(), "same GPU, same world: {:?}", c.notes);
    assert!((c.speed_ratio - 10_000.0 / r.throughput.tokens_per_second_per_gpu).abs() < 1e-12);
}

#[test]
fn a_trial_of_the_same_plan_is_the_same_plan() {
    // Tokens, price, spot and names do not change a step: the line still applies.
    let p = plan("model=llama-3.1-8b&tokens=2e9&spot=1&price=99&job=x1&lang=ru");
    let m = parse(LINE).unwrap();
    assert!(compare(&p, &evaluate(&p), &m).is_ok());
}

#[test]
fn bad_lines_say_what_is_wrong() {
    let p = plan("model=llama-3.1-8b");
    let r = evaluate(&p);
    assert_eq!(parse("step 3 loss 2.0"), Err(Problem::NotALine));
    assert!(matches!(
        parse("TRAIN_PLANNER_MEASURED {\"v\": 1,"),
        Err(Problem::Json(_))
    ));
    assert_eq!(
        parse(&LINE.replace("\"v\": 1", "\"v\": 2")),
        Err(Problem::Version(2))
    );
    assert_eq!(
        parse(&LINE.replace("6.5536", "null")),
        Err(Problem::NoSpeed)
    );
    let other = parse(&LINE.replace("llama-3.1-8b", "llama-3.1-70b")).unwrap();
    let err = compare(&p, &r, &other).unwrap_err();
    assert!(matches!(err, Problem::OtherPlan(_)));
    let lang = planner::model::plan::Lang::Ru;
    assert!(planner::text::render(lang, &err.phrase()).contains("другого плана"));
    let cpu = parse(
        &LINE
            .replace("NVIDIA B200", "cpu")
            .replace("\"world_size\": 8", "\"world_size\": 2"),
    )
    .unwrap();
    let notes = compare(&p, &r, &cpu).unwrap().notes;
    assert_eq!(
        notes.len(),
        2,
        "another GPU and another world size: {notes:?}"
    );
}

/// #59: the page reads a pasted line through its worker: the reply puts
/// back exactly what `parse` read, or why it did not read, in either
/// language (a line without a plan: the lists absent, a tab in a name).
#[test]
fn the_worker_reads_a_line_back_exactly() {
    use planner::runs::measured::{line_reply, read_line_reply};
    let bare = LINE
        .replace("\"plan\": \"model=llama-3.1-8b\", ", "")
        .replace("\"max_memory_allocated_gib\": [70.0, 71.5], ", "")
        .replace("NVIDIA B200", "NVIDIA\\tB200");
    for text in [LINE.to_string(), bare.clone()] {
        let read = parse(&text).expect("parses");
        let mut want = read.clone();
        want.gpu = want.gpu.replace('\t', " ");
        assert_eq!(read_line_reply(&line_reply(&text)), Ok(want));
    }
    assert_eq!(parse(&bare).unwrap().max_memory_allocated_gib, None);
    for bad in [
        "step 3 loss 2.0".to_string(),
        "TRAIN_PLANNER_MEASURED {\"v\": 1,".into(),
        LINE.replace("\"v\": 1", "\"v\": 2"),
    ] {
        let why = parse(&bad).unwrap_err().phrase();
        let back = read_line_reply(&line_reply(&bad)).unwrap_err();
        let ru = planner::model::plan::Lang::Ru;
        assert_eq!(back.english(), why.english(), "{bad}");
        assert_eq!(
            planner::text::render(ru, &back),
            planner::text::render(ru, &why)
        );
    }
    let garbled = read_line_reply("2\tx").unwrap_err().english();
    assert!(garbled.contains("not 1 or 0"), "{garbled}");
}
