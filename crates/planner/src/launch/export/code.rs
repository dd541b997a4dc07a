//! The launch code of a plan in each format.

use super::context::*;
use super::estimators::*;
use super::model_trainer::*;
use super::python::*;
use crate::estimate::evaluate::evaluate;
use crate::estimate::report::Report;
use crate::model::plan::Plan;

/// The launch code of `plan` in `format`.
pub fn export(plan: &Plan, format: Format) -> Export {
    export_of(plan, &evaluate(plan), format)
}

/// The launch code of `plan` in `format`, from its report (the page's:
/// one evaluation per edit serves the results and the export, #34).
pub fn export_of(plan: &Plan, report: &Report, format: Format) -> Export {
    let c = ctx(plan, report);
    let code = match format {
        Format::Pytorch => pytorch(&c),
        // The NeMo container is not a Hugging Face image: the PyTorch
        // estimator runs it.
        Format::Huggingface if nemo(plan) => pytorch(&c),
        Format::Huggingface => huggingface(&c),
        Format::ModelTrainer => modeltrainer(&c),
        Format::TrainingArgs => training_args(&c),
        Format::Hyperpod => super::hyperpod::config_yaml(&c),
    };
    let filename = match format {
        Format::TrainingArgs => "training_args.py".into(),
        Format::Hyperpod => "hyperpod_config.yaml".into(),
        f => format!("launch_{}.py", f.key().replace('-', "_")),
    };
    Export {
        format,
        code,
        filename,
    }
}

#[cfg(test)]
mod sdk_tests {
    use super::*;
    use crate::formats::json::Json;

    /// build.rs writes data/sdk.json as Rust values; read again, the file
    /// holds the same versions in the same order.
    #[test]
    fn sdk_matches_the_file() {
        let file =
            crate::formats::json::parse(include_str!("../../../data/sdk.json")).expect("parses");
        let rows = |v: &str, list: &str, keys: &[&str]| -> Vec<Vec<String>> {
            let items = file
                .get(v)
                .and_then(|x| x.get(list))
                .and_then(Json::as_array);
            items
                .expect("a list")
                .iter()
                .map(|e| {
                    keys.iter()
                        .map(|k| e.get(k).and_then(Json::as_str).unwrap().to_string())
                        .collect()
                })
                .collect()
        };
        let pt = |l: &[Pt]| -> Vec<Vec<String>> {
            l.iter()
                .map(|p| vec![p.version.into(), p.py.into(), p.cuda.into()])
                .collect()
        };
        let smp = |l: &[Smp]| -> Vec<Vec<String>> {
            l.iter()
                .map(|p| vec![p.version.into(), p.py.into(), p.smp.into()])
                .collect()
        };
        let s = sdk();
        assert_eq!(
            pt(s.v2.pytorch),
            rows("v2", "pytorch", &["version", "py", "cuda"])
        );
        assert_eq!(
            pt(s.v3.pytorch),
            rows("v3", "pytorch", &["version", "py", "cuda"])
        );
        assert_eq!(
            smp(s.v2.smp_pytorch),
            rows("v2", "smp_pytorch", &["version", "py", "smp"])
        );
        assert_eq!(
            smp(s.v3.smp_pytorch),
            rows("v3", "smp_pytorch", &["version", "py", "smp"])
        );
        let hf: Vec<Vec<String>> =
            s.v2.huggingface
                .iter()
                .map(|h| {
                    vec![
                        h.transformers.into(),
                        h.pytorch.into(),
                        h.py.into(),
                        h.cuda.into(),
                    ]
                })
                .collect();
        assert_eq!(
            hf,
            rows(
                "v2",
                "huggingface",
                &["transformers", "pytorch", "py", "cuda"]
            )
        );
        let package = |v: &str| {
            file.get(v)
                .and_then(|x| x.get("package"))
                .and_then(Json::as_str)
        };
        assert_eq!(Some(s.v2.package), package("v2"));
        assert_eq!(Some(s.v3.package), package("v3"));
    }
}
