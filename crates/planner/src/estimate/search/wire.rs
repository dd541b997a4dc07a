//! The search's result as a text (#59: the page's auto-plan runs in the
//! page's worker, whose wasm holds the search; the page's does not):
//! the counts, and each candidate's link with what it offers. The page
//! puts each candidate back together (`Candidate::of`) against its own
//! report of the plan searched, so the why of each is in the page's
//! language and the link reopens the plan the search timed.
//!
//! One record per line (`formats::fields`): first `candidates evaluated
//! pruned fitting`, then one per candidate, `role query instance gpu gpus
//! peak tokens/s mfu hours usd`, its role `p` (on the Pareto front, in
//! order), `f` (fastest), `c` (cheapest), `b` (best under the budget) or
//! `d` (best under the deadline) or `g` (on the fewest GPUs), and `usd`
//! empty without a price.

use super::results::{Baseline, Candidate, Offer, SearchResult};
use crate::formats::fields::{field, opt_field, record, Fields};
use crate::model::plan::Plan;

/// The result as the worker sends it.
pub fn encode(r: &SearchResult) -> String {
    let counts = [r.candidates, r.evaluated, r.pruned, r.fitting];
    let mut lines = vec![record(counts.map(field))];
    lines.extend(r.pareto.iter().map(|c| candidate("p", c)));
    let roles = [
        ("f", &r.fastest),
        ("c", &r.cheapest),
        ("b", &r.best_under_budget),
        ("d", &r.best_under_deadline),
        ("g", &r.fewest_gpus),
    ];
    for (role, c) in roles {
        lines.extend(c.as_ref().map(|c| candidate(role, c)));
    }
    lines.join("\n")
}

fn candidate(role: &str, c: &Candidate) -> String {
    let o = c.offer();
    record([
        role.into(),
        field(&c.query),
        field(o.instance),
        field(o.gpu),
        field(o.gpus),
        field(o.peak_bytes_per_gpu),
        field(o.tokens_per_second),
        field(o.mfu),
        field(o.hours),
        opt_field(o.usd),
    ])
}

/// The result the worker sent, each candidate against the user's `base`.
pub fn decode(text: &str, base: &Baseline) -> Result<SearchResult, String> {
    let mut lines = text.lines();
    let mut counts = Fields::new(lines.next().unwrap_or_default());
    let mut r = SearchResult {
        candidates: counts.whole(),
        evaluated: counts.whole(),
        pruned: counts.whole(),
        fitting: counts.whole(),
        pareto: Vec::new(),
        fastest: None,
        cheapest: None,
        best_under_budget: None,
        best_under_deadline: None,
        fewest_gpus: None,
    };
    counts.done(())?;
    for line in lines {
        let mut f = Fields::new(line);
        let role = f.text();
        let c = back(&mut f, base)?;
        match role {
            "p" => r.pareto.push(c),
            "f" => r.fastest = Some(c),
            "c" => r.cheapest = Some(c),
            "b" => r.best_under_budget = Some(c),
            "d" => r.best_under_deadline = Some(c),
            "g" => r.fewest_gpus = Some(c),
            _ => return Err(format!("no candidate role \"{role}\"")),
        }
    }
    Ok(r)
}

fn back(f: &mut Fields, base: &Baseline) -> Result<Candidate, String> {
    // The link stays the search's own (a custom GPU's reopens with its
    // figures written out).
    let query = f.text().to_string();
    let offer = Offer {
        instance: f.text().into(),
        gpu: f.text().into(),
        gpus: f.whole(),
        peak_bytes_per_gpu: f.whole(),
        tokens_per_second: f.num(),
        mfu: f.num(),
        hours: f.num(),
        usd: f.opt_num(),
    };
    let offer = f.done(offer)?;
    let plan = Plan::from_query(&query).plan;
    Ok(Candidate {
        query,
        ..Candidate::of(&plan, offer, base)
    })
}
