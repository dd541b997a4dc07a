//! Cross-validation by held-out group (#57): every row of one GPU
//! generation, one stack or one scale band left out of the fit at once,
//! and predicted by what the other rows fit. Leaving out one model at a
//! time (`cross_validated`) still lets a row's own generation, stack and
//! scale vouch for it; these say how far the fit carries to a kind of run
//! it has not seen.

use super::fitting::{fit_on, host_fit, median_abs_error, predict_with, Prediction};
use super::rows::{cases, Case};
use crate::model::throughput::Generation;

/// How the rows are grouped for holding out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldOut {
    Generation,
    Stack,
    /// GPUs in the run: up to 64, 65 to 1,024, more.
    Scale,
}

impl HeldOut {
    /// The group a row belongs to under this grouping.
    pub fn key(self, c: &Case) -> String {
        match self {
            HeldOut::Generation => format!("{:?}", c.gpu.generation),
            HeldOut::Stack => {
                crate::accuracy::sequence_bands::stack_name(c.plan.implementation.stack).to_string()
            }
            HeldOut::Scale => match c.layout.gpus {
                0..=64 => "up to 64 GPUs".to_string(),
                65..=1024 => "65 to 1,024 GPUs".to_string(),
                _ => "more than 1,024 GPUs".to_string(),
            },
        }
    }
}

/// One held-out group's predictions, each made without any of its rows.
pub struct HeldOutGroup {
    pub name: String,
    pub predictions: Vec<Prediction>,
}

impl HeldOutGroup {
    pub fn median(&self) -> f64 {
        median_abs_error(&self.predictions)
    }
    /// The worst under- and over-prediction, percent (0 where none).
    pub fn under_over(&self) -> (f64, f64) {
        crate::accuracy::coverage::under_over(self.predictions.iter().map(|p| p.error_percent))
    }
}

/// Every group of `by`, in the order its first row appears, predicted by
/// parameters fitted on the other groups' rows: of its own generation where
/// the others have some, else (a generation held out) on all of them, each
/// efficiency a share of its own GPU's peak; the host's launch costs from
/// the other groups' Blackwell rows.
pub fn held_out(by: HeldOut) -> Vec<HeldOutGroup> {
    let cases = cases();
    let mut names: Vec<String> = Vec::new();
    for c in &cases {
        let k = by.key(c);
        if !names.contains(&k) {
            names.push(k);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let others: Vec<&Case> = cases.iter().filter(|c| by.key(c) != name).collect();
            let host = host_fit(&others);
            let mut fits: Vec<(Generation, crate::model::throughput::Efficiency)> = Vec::new();
            let predictions = cases
                .iter()
                .filter(|c| by.key(c) == name)
                .map(|c| {
                    let g = c.gpu.generation;
                    if !fits.iter().any(|(f, _)| *f == g) {
                        let mine: Vec<&Case> = others
                            .iter()
                            .copied()
                            .filter(|o| o.gpu.generation == g)
                            .collect();
                        let train = if mine.is_empty() { &others } else { &mine };
                        fits.push((g, fit_on(g, train, &host).0));
                    }
                    let eff = fits
                        .iter()
                        .find(|(f, _)| *f == g)
                        .map(|(_, e)| e)
                        .expect("fitted");
                    predict_with(c, eff)
                })
                .collect();
            HeldOutGroup { name, predictions }
        })
        .collect()
}
