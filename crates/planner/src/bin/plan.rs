//! `plan report '<URL or query string>'`: the JSON report of SPEC §8.

use std::process::ExitCode;

const USAGE: &str = "usage:\n  plan report '<URL or query string>'   JSON report on stdout\n  plan query  '<URL or query string>'   the normalised query string";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
                Ok(s) => println!("{s}"),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        "query" => println!("{}", decoded.plan.to_query()),
        _ => {
            eprintln!("unknown command `{cmd}`\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
