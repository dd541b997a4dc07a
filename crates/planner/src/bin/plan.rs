//! `plan report '<URL or query string>'`: the JSON report of SPEC §8.

use std::process::ExitCode;

const USAGE: &str = "usage:\n  plan report '<URL or query string>'   JSON report on stdout\n  plan query  '<URL or query string>'   the normalised query string\n  plan search '<URL or query string>'   auto-plan: ranked plans and the Pareto front as JSON\n  plan export '<URL or query string>' --format pytorch|huggingface|modeltrainer|training-args\n  plan calibrate [--fit] [--markdown]     predicted vs measured throughput (data/calibration.csv)";

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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("calibrate") {
        calibrate(&args[1..]);
        return ExitCode::SUCCESS;
    }
    if args.first().map(String::as_str) == Some("export") {
        return export(&args[1..]);
    }
    if let [cmd, text] = args.as_slice() {
        if cmd == "py-literal" {
            outln!("{}", planner::export::py_str(text));
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
    let decoded = planner::Plan::from_query(query);
    for n in &decoded.notices {
        eprintln!("notice: {}", n.message);
    }
    match cmd {
        "report" => {
            let report = planner::evaluate(&decoded.plan);
            #[derive(serde::Serialize)]
            struct Out<'a> {
                query: String,
                notices: &'a [planner::plan::Notice],
                #[serde(flatten)]
                report: &'a planner::Report,
            }
            let out = Out {
                query: decoded.plan.to_query(),
                notices: &decoded.notices,
                report: &report,
            };
            match serde_json::to_string_pretty(&out) {
                Ok(s) => outln!("{s}"),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        "query" => outln!("{}", decoded.plan.to_query()),
        "search" => return search(query),
        _ => {
            eprintln!("unknown command `{cmd}`\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

/// Print the calibration tables: `--fit` refits the parameters from a neutral
/// start, `--markdown` prints docs/accuracy.md's generated part, `--coverage`
/// the JSON of data/coverage.json; without a flag, every row.
fn calibrate(flags: &[String]) {
    use planner::accuracy::{compute, markdown, throughput_rows};
    let has = |f: &str| flags.iter().any(|x| x == f);
    if has("--fit") {
        for (g, e, loss) in planner::calibration::fit() {
            outln!(
                "{g:?}: gemm {:.3} fp8_gemm {:.3} attention {:.3} (mean |ln error| {loss:.3})",
                e.gemm,
                e.fp8_gemm,
                e.attention
            );
        }
    } else if has("--coverage") {
        match serde_json::to_string_pretty(&compute()) {
            Ok(s) => outln!("{s}"),
            Err(e) => eprintln!("error: {e}"),
        }
    } else if has("--markdown") {
        let rows = throughput_rows();
        out!("{}", markdown(&compute(), &rows));
        outln!("\nREADME: {}", planner::accuracy::readme_groups(&rows));
    } else {
        outln!(
            "{:<34} {:<44} {:>9} {:>10} {:>8}",
            "row",
            "group",
            "measured",
            "in-sample",
            "LOO"
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
fn search(query: &str) -> ExitCode {
    let plan = planner::Plan::from_query(query).plan;
    let start = std::time::Instant::now();
    let result = planner::search::search(&plan);
    let seconds = start.elapsed().as_secs_f64();
    #[derive(serde::Serialize)]
    struct Out<'a> {
        seconds: f64,
        candidates_per_second: f64,
        #[serde(flatten)]
        result: &'a planner::search::SearchResult,
    }
    let out = Out {
        seconds,
        candidates_per_second: result.candidates as f64 / seconds.max(1e-9),
        result: &result,
    };
    match serde_json::to_string_pretty(&out) {
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

/// `plan export '<query>' --format F`: SageMaker launch code on stdout.
fn export(args: &[String]) -> ExitCode {
    let mut query = None;
    let mut format = planner::export::Format::Pytorch;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--format" {
            match it.next().and_then(|f| planner::export::Format::from_key(f)) {
                Some(f) => format = f,
                None => {
                    eprintln!("--format takes pytorch, huggingface, modeltrainer or training-args");
                    return ExitCode::from(2);
                }
            }
        } else if query.is_none() {
            query = Some(a.as_str());
        } else {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    let decoded = planner::Plan::from_query(query.unwrap_or(""));
    for n in &decoded.notices {
        eprintln!("notice: {}", n.message);
    }
    out!("{}", planner::export::export(&decoded.plan, format).code);
    ExitCode::SUCCESS
}
