//! `plan report '<URL or query string>'`: the JSON report of SPEC §8.

use planner::model::plan::with_pinned;
use std::process::ExitCode;

const USAGE: &str = "usage:\n  plan report '<URL or query string>'   JSON report on stdout\n  plan query  '<URL or query string>'   the normalised query string\n  plan search '<URL or query string>'   auto-plan: ranked plans and the Pareto front as JSON\n  plan report '<URL or query string>' --measured '<the TRAIN_PLANNER_MEASURED line>'\n  plan export '<URL or query string>' --format pytorch|huggingface|modeltrainer|training-args|hyperpod\n  plan export '<URL or query string>' --format bundle --out DIR|FILE.zip [--launcher pytorch|huggingface|modeltrainer]\n  plan calibrate [--fit] [--markdown] [--coverage] [--readme]   predicted vs measured throughput (data/calibration.csv)";

/// `print!` that ends the program quietly when its reader has gone
/// (`plan search ... | head -1`): a closed pipe is not an error here.
macro_rules! out {
    ($($arg:tt)*) => { emit(format_args!($($arg)*)) };
}

/// `println!`, likewise.
macro_rules! outln {
    ($($arg:tt)*) => { emit(format_args!("{}\n", format_args!($($arg)*))) };
}

fn emit(args: std::fmt::Arguments) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// The plan of a query, with each part of it that was not taken said on stderr.
fn decode(query: &str) -> planner::Decoded {
    let decoded = planner::Plan::from_query(query);
    for n in &decoded.notices {
        eprintln!("notice: {}", n.message());
    }
    decoded
}

/// `value` as pretty JSON on stdout.
fn print_json(value: &impl serde::Serialize) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(s) => {
            outln!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("calibrate") {
        calibrate(&args[1..]);
        return ExitCode::SUCCESS;
    }
    if args.first().map(String::as_str) == Some("export") {
        return export(&args[1..]);
    }
    if let [cmd, query, flag, line] = args.as_slice() {
        if cmd == "report" && flag == "--measured" {
            return report_measured(query, line);
        }
    }
    if let [cmd, text] = args.as_slice() {
        if cmd == "py-literal" {
            outln!("{}", planner::launch::export::py_str(text));
            return ExitCode::SUCCESS;
        }
    }
    let (cmd, query) = match args.as_slice() {
        [cmd] => (cmd.as_str(), ""),
        [cmd, q] => (cmd.as_str(), q.as_str()),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let decoded = decode(query);
    match cmd {
        "report" => {
            let report = planner::evaluate(&decoded.plan);
            #[derive(serde::Serialize)]
            struct Out<'a> {
                query: String,
                notices: &'a [planner::model::plan::Notice],
                #[serde(flatten)]
                report: &'a planner::Report,
            }
            return print_json(&Out {
                query: decoded.plan.to_query(),
                notices: &decoded.notices,
                report: &report,
            });
        }
        "query" => {
            let query = decoded.plan.to_query();
            outln!("{}", with_pinned(query, decoded.pinned.as_deref()))
        }
        "search" => return search(&decoded.plan),
        _ => {
            eprintln!("unknown command `{cmd}`\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

/// Print the calibration tables: `--fit` refits the parameters from a neutral
/// start, `--markdown` prints docs/accuracy.md's generated part, `--coverage`
/// the JSON of data/coverage.json, `--readme` the README's accuracy section;
/// without a flag, every row.
fn calibrate(flags: &[String]) {
    use planner::accuracy::docs::markdown;
    use planner::accuracy::summary::{compute, throughput_rows};
    let has = |f: &str| flags.iter().any(|x| x == f);
    if has("--fit") {
        for (g, e, loss) in planner::accuracy::calibration::fit() {
            outln!(
                "{g:?}: gemm {:.3} fp8_gemm {:.3} attention {:.3} moe {:.3} moe_layer_overhead {:.6} (mean |ln error| {loss:.3})",
                e.gemm,
                e.fp8_gemm,
                e.attention,
                e.moe,
                e.moe_layer_overhead
            );
            if g == planner::model::throughput::Generation::Blackwell {
                outln!(
                    "host (every generation): moe_expert_launch {:.6} moe_router_launch {:.6} moe_alltoall_launch {:.6}",
                    e.host.moe_expert_launch,
                    e.host.moe_router_launch,
                    e.host.moe_alltoall_launch
                );
            }
        }
    } else if has("--coverage") {
        match serde_json::to_string_pretty(&compute()) {
            Ok(s) => outln!("{s}"),
            Err(e) => eprintln!("error: {e}"),
        }
    } else if has("--readme") {
        outln!("{}", planner::runs::readme::accuracy_section());
    } else if has("--markdown") {
        let rows = throughput_rows();
        out!("{}", markdown(&compute(), &rows));
        outln!(
            "\nREADME: {}",
            planner::accuracy::docs::readme_groups(&rows)
        );
    } else {
        outln!(
            "{:<34} {:<44} {:>9} {:>10} {:>8}",
            "row",
            "group",
            "measured",
            "in-sample",
            "LOAO"
        );
        for r in throughput_rows() {
            outln!(
                "{:<34} {:<44} {:>9.0} {:>+9.1}% {:>+7.1}%",
                r.id,
                r.group.name(),
                r.measured,
                r.in_sample_percent,
                r.cross_validated_percent
            );
        }
    }
}

/// `plan search`: the auto-plan as JSON, with the count and the time taken.
fn search(plan: &planner::Plan) -> ExitCode {
    let start = std::time::Instant::now();
    let result = planner::estimate::search::search(plan);
    let seconds = start.elapsed().as_secs_f64();
    #[derive(serde::Serialize)]
    struct Out<'a> {
        seconds: f64,
        candidates_per_second: f64,
        #[serde(flatten)]
        result: &'a planner::estimate::search::SearchResult,
    }
    let out = Out {
        seconds,
        candidates_per_second: result.candidates as f64 / seconds.max(1e-9),
        result: &result,
    };
    print_json(&out)
}

/// `plan report '<query>' --measured '<line>'`: the report with the measured
/// run beside it, time and cost re-based on the measured speed.
fn report_measured(query: &str, line: &str) -> ExitCode {
    let decoded = decode(query);
    let plan = &decoded.plan;
    let lang = decoded.lang.unwrap_or(planner::text::Lang::En);
    let report = planner::evaluate(plan);
    let compared = planner::runs::measured::parse(line)
        .and_then(|m| planner::runs::measured::compare(plan, &report, &m));
    let comparison = match compared {
        Ok(c) => c,
        Err(p) => {
            eprintln!("error: {}", planner::text::render(lang, &p.phrase()));
            return ExitCode::from(2);
        }
    };
    #[derive(serde::Serialize)]
    struct Out<'a> {
        query: String,
        measured: &'a planner::runs::measured::Comparison,
        #[serde(flatten)]
        report: &'a planner::Report,
    }
    print_json(&Out {
        query: plan.to_query(),
        measured: &comparison,
        report: &report,
    })
}

/// `plan export` options: the query, the format, and for a bundle its launcher and folder.
struct ExportArgs<'a> {
    query: &'a str,
    format: Option<planner::launch::export::Format>,
    bundle: bool,
    launcher: planner::launch::export::Format,
    out: Option<&'a str>,
}

fn export_args(args: &[String]) -> Result<ExportArgs<'_>, String> {
    use planner::launch::export::Format;
    let mut e = ExportArgs {
        query: "",
        format: Some(Format::Pytorch),
        bundle: false,
        launcher: Format::Pytorch,
        out: None,
    };
    let mut query = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--format" => match it.next().map(String::as_str) {
                Some("bundle") => (e.bundle, e.format) = (true, None),
                f => e.format = Some(f.and_then(Format::from_key).ok_or(
                    "--format takes pytorch, huggingface, modeltrainer, training-args, hyperpod or bundle",
                )?),
            },
            "--launcher" => {
                e.launcher = it
                    .next()
                    .and_then(|f| Format::from_key(f))
                    .filter(|f| planner::launch::bundle::launchers().contains(f))
                    .ok_or("--launcher takes pytorch, huggingface or modeltrainer")?
            }
            "--out" => e.out = Some(it.next().ok_or("--out takes a folder")?.as_str()),
            _ if query.is_none() => query = Some(a.as_str()),
            _ => return Err(USAGE.into()),
        }
    }
    if e.bundle && e.out.is_none() {
        return Err("--format bundle writes files: give it --out DIR".into());
    }
    e.query = query.unwrap_or("");
    Ok(e)
}

/// `plan export '<query>' --format F`: SageMaker launch code on stdout, or with
/// `--format bundle --out DIR` the launch bundle's files in DIR.
fn export(args: &[String]) -> ExitCode {
    let e = match export_args(args) {
        Ok(e) => e,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let decoded = decode(e.query);
    match (e.format, e.out) {
        (Some(format), _) => out!(
            "{}",
            planner::launch::export::export(&decoded.plan, format).code
        ),
        (None, Some(dir)) => return write_bundle(&decoded.plan, e.launcher, dir),
        (None, None) => unreachable!("export_args requires --out for a bundle"),
    }
    ExitCode::SUCCESS
}

/// The bundle's files under `dir`, one path per line on stdout; or, when
/// `dir` ends in `.zip`, the ZIP archive the page downloads.
fn write_bundle(
    plan: &planner::Plan,
    launcher: planner::launch::export::Format,
    dir: &str,
) -> ExitCode {
    const SCRIPTS: [(&str, &str); 7] = [
        ("train.py", include_str!("../../bundle/train.py")),
        ("train_plan.py", include_str!("../../bundle/train_plan.py")),
        (
            "train_model.py",
            include_str!("../../bundle/train_model.py"),
        ),
        ("train_data.py", include_str!("../../bundle/train_data.py")),
        (
            "train_checkpoints.py",
            include_str!("../../bundle/train_checkpoints.py"),
        ),
        ("grpo.py", include_str!("../../bundle/grpo.py")),
        (
            "pretrain_megatron_bridge.py",
            include_str!("../../bundle/pretrain_megatron_bridge.py"),
        ),
    ];
    let text = |name: &&str| {
        SCRIPTS
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, t)| t)
    };
    let scripts: Vec<&str> = planner::launch::bundle::script_names(plan)
        .iter()
        .map(text)
        .collect();
    let files = planner::launch::bundle::files(plan, launcher, &scripts);
    if dir.ends_with(".zip") {
        if let Err(err) = std::fs::write(dir, planner::launch::bundle::zip(&files)) {
            eprintln!("error: {dir}: {err}");
            return ExitCode::FAILURE;
        }
        outln!("{dir}");
        return ExitCode::SUCCESS;
    }
    for f in files {
        let path = std::path::Path::new(dir).join(&f.path);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, &f.text));
        if let Err(err) = written {
            eprintln!("error: {}: {err}", path.display());
            return ExitCode::FAILURE;
        }
        outln!("{}", path.display());
    }
    ExitCode::SUCCESS
}
