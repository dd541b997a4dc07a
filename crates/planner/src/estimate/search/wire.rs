//! The search's result as a text (#59: the page's auto-plan runs in the
//! page's worker, whose wasm holds the search; the page's does not):
//! the counts, and each candidate's link with what it offers. The page
//! puts each candidate back together (`Candidate::of`) against its own
//! report of the plan searched, so the why of each is in the page's
//! language and the link reopens the plan the search timed.
//!
//! `[[candidates, evaluated, pruned, fitting], [pareto...], fastest,
//! cheapest, best_under_budget, best_under_deadline]`, a candidate being
//! `[query, instance, gpu, gpus, peak, tokens/s, mfu, hours, usd]` or null.

use super::results::{Baseline, Candidate, Offer, SearchResult};
use crate::formats::json::{parse, Json};
use crate::model::plan::Plan;

/// The result as the worker sends it.
pub fn encode(r: &SearchResult) -> String {
    let counts = [r.candidates, r.evaluated, r.pruned, r.fitting];
    let one = |c: &Option<Candidate>| c.as_ref().map_or(Json::Null, candidate);
    Json::Arr(vec![
        Json::Arr(counts.iter().map(|&n| Json::Num(n as f64)).collect()),
        Json::Arr(r.pareto.iter().map(candidate).collect()),
        one(&r.fastest),
        one(&r.cheapest),
        one(&r.best_under_budget),
        one(&r.best_under_deadline),
    ])
    .to_string()
}

fn candidate(c: &Candidate) -> Json {
    let o = c.offer();
    Json::Arr(vec![
        Json::Str(c.query.clone()),
        Json::Str(o.instance),
        Json::Str(o.gpu),
        Json::Num(o.gpus as f64),
        Json::Num(o.peak_bytes_per_gpu as f64),
        Json::Num(o.tokens_per_second),
        Json::Num(o.mfu),
        Json::Num(o.hours),
        o.usd.map_or(Json::Null, Json::Num),
    ])
}

/// The result the worker sent, each candidate against the user's `base`.
pub fn decode(text: &str, base: &Baseline) -> Result<SearchResult, String> {
    let j = parse(text).map_err(|e| e.to_string())?;
    let parts = j
        .as_array()
        .filter(|a| a.len() == 6)
        .ok_or("not a search result")?;
    let counts: Vec<u64> = items(&parts[0])?.iter().filter_map(Json::as_u64).collect();
    let [candidates, evaluated, pruned, fitting] = counts[..] else {
        return Err("no counts".into());
    };
    let one = |j: &Json| match j {
        Json::Null => Ok(None),
        j => back(j, base).map(Some),
    };
    Ok(SearchResult {
        candidates,
        evaluated,
        pruned,
        fitting,
        pareto: items(&parts[1])?
            .iter()
            .map(|c| back(c, base))
            .collect::<Result<_, _>>()?,
        fastest: one(&parts[2])?,
        cheapest: one(&parts[3])?,
        best_under_budget: one(&parts[4])?,
        best_under_deadline: one(&parts[5])?,
    })
}

fn items(j: &Json) -> Result<&[Json], String> {
    j.as_array().ok_or_else(|| "not a list".to_string())
}

fn back(j: &Json, base: &Baseline) -> Result<Candidate, String> {
    let f = items(j)?;
    let [query, instance, gpu, gpus, peak, tps, mfu, hours, usd] = f else {
        return Err("not a candidate".into());
    };
    let text = |j: &Json| j.as_str().map(str::to_string).ok_or("not a text");
    let num = |j: &Json| j.as_f64().ok_or("not a number");
    let whole = |j: &Json| j.as_u64().ok_or("not a whole number");
    let offer = Offer {
        instance: text(instance)?,
        gpu: text(gpu)?,
        gpus: whole(gpus)?,
        peak_bytes_per_gpu: whole(peak)?,
        tokens_per_second: num(tps)?,
        mfu: num(mfu)?,
        hours: num(hours)?,
        usd: usd.as_f64(),
    };
    // The link stays the search's own (a custom GPU's reopens with its
    // figures written out).
    let query = text(query)?;
    let plan = Plan::from_query(&query).plan;
    Ok(Candidate {
        query,
        ..Candidate::of(&plan, offer, base)
    })
}
