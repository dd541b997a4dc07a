//! What still fits: the largest micro-batch and the longest sequence whose
//! peak (with the allocator's typical reserve: a plan that fits only with
//! its least reserve may run out of memory, #55) stays inside the budget,
//! found with few probes of the memory model.

use crate::model::job::Job;
use crate::model::memory;
use crate::model::plan::Attention;
use crate::model::recipe::Recipe;

/// The largest micro-batch (up to 4096) and the longest sequence (in steps
/// of 128 up to 131072, at the plan's micro-batch) whose peak stays within
/// the budget, and whose offloaded activations the host holds. `peak` is the
/// plan's own. One working copy of the recipe serves every probe of both
/// searches (a clone per probe cost more than the probe).
pub(crate) fn largest_that_fit(r: &Job, budget: u64, peak: u64) -> (u64, u64) {
    let recipe = std::cell::RefCell::new(r.recipe);
    let peak_of = |p: &Recipe| {
        let m = memory::breakdown(&r.arch, &r.counts, p, &r.layout);
        memory::with_engine(m, (&r.arch, &r.counts), p, &r.layout, &r.gpu).peak_bytes
    };
    let backup = r.host_backup_bytes();
    let host_holds = |p: &Recipe| {
        let offload = memory::offload(&r.arch, &r.counts, p, &r.layout);
        !crate::model::host::overflows(p, &offload, backup, &r.instance, r.layout.gpus)
    };
    let x = r.recipe.data.micro_batch.clamp(1, 4096);
    let (mb, per_sequence) = {
        let at = Probes::new(|mb| {
            let mut p = recipe.borrow_mut();
            p.data.micro_batch = mb;
            peak_of(&p)
        });
        at.know(x, peak);
        let mb = largest_near(1, 4096, at.guess(x, budget, 4096), |m| {
            at.get(m) <= budget && {
                recipe.borrow_mut().data.micro_batch = m;
                host_holds(&recipe.borrow())
            }
        });
        (mb, at.slope(x, 4096))
    };
    recipe.borrow_mut().data.micro_batch = r.recipe.data.micro_batch;
    let cp = r.layout.cp.max(1);
    let hi = 1024 / cp;
    let at = Probes::new(|steps| {
        let mut p = recipe.borrow_mut();
        p.data.seq = steps * 128 * cp;
        peak_of(&p)
    });
    // The plan's own sequence is a known point when it lies on the grid.
    let steps = r.recipe.data.seq / (128 * cp);
    let on_grid = steps >= 1 && steps <= hi && r.recipe.data.seq == steps * 128 * cp;
    let x = if on_grid {
        at.know(steps, peak);
        steps
    } else {
        hi.clamp(1, 64)
    };
    let guess = on_grid
        .then(|| sequence_guess(r, per_sequence, (steps, hi), (budget, peak)))
        .flatten()
        .unwrap_or_else(|| at.guess(x, budget, hi));
    let seq = largest_near(1, hi, guess, |s| {
        at.get(s) <= budget && {
            recipe.borrow_mut().data.seq = s * 128 * cp;
            host_holds(&recipe.borrow())
        }
    });
    (mb, seq * 128 * cp)
}

/// Where the sequence axis (in steps of 128 x cp tokens, the plan at
/// `steps` of `1..=hi`) reaches `budget` from the plan's `peak`, with the
/// slope the micro-batch axis found (`per_sequence`, bytes per sequence
/// more): without eager attention's s x s scores the peak grows with the
/// tokens alone, and a step adds 128 x cp tokens to each of the
/// micro-batch's sequences. It spares the sequence axis its own slope
/// probe (60 varied plans: 310 probes -> 252, none more); the probes find
/// the exact answer whatever the guess. `None` where it does not apply.
fn sequence_guess(
    r: &Job,
    per_sequence: Option<f64>,
    (steps, hi): (u64, u64),
    (budget, peak): (u64, u64),
) -> Option<u64> {
    let d = per_sequence.filter(|d| *d > 0.0)?;
    if r.recipe.implementation.attention == Attention::Eager {
        return None;
    }
    let (mb, cp) = (r.recipe.data.micro_batch.clamp(1, 4096), r.layout.cp.max(1));
    let per_step = d * (mb * 128 * cp) as f64 / r.recipe.data.seq as f64;
    let g = steps as f64 + (budget as f64 - peak as f64) / per_step;
    Some(g.clamp(0.0, hi as f64) as u64)
}

/// A peak as a function of one setting, each value computed once.
struct Probes<F: Fn(u64) -> u64> {
    f: F,
    seen: std::cell::RefCell<Vec<(u64, u64)>>,
}

impl<F: Fn(u64) -> u64> Probes<F> {
    fn new(f: F) -> Self {
        Probes {
            f,
            seen: Default::default(),
        }
    }

    /// Record a value already computed.
    fn know(&self, x: u64, peak: u64) {
        self.seen.borrow_mut().push((x, peak));
    }

    fn get(&self, x: u64) -> u64 {
        let seen = self
            .seen
            .borrow()
            .iter()
            .find(|(k, _)| *k == x)
            .map(|s| s.1);
        seen.unwrap_or_else(|| {
            let p = (self.f)(x);
            self.know(x, p);
            p
        })
    }

    /// Where the peak reaches `budget`, extrapolating the local slope at `x`
    /// (the peak is piecewise linear in the micro-batch and, with flash
    /// attention, in the sequence): the first probe of `largest_near`, which
    /// finds the exact answer whatever the guess.
    fn guess(&self, x: u64, budget: u64, hi: u64) -> u64 {
        let Some(slope) = self.slope(x, hi) else {
            return x;
        };
        let px = self.get(x) as f64;
        if slope <= 0.0 {
            return if px <= budget as f64 { hi } else { x };
        }
        let g = x as f64 + (budget as f64 - px) / slope;
        g.clamp(0.0, hi as f64) as u64
    }

    /// The peak's change per unit at `x`, from its neighbour inside `1..=hi`.
    fn slope(&self, x: u64, hi: u64) -> Option<f64> {
        let near = if x < hi { x + 1 } else { x.saturating_sub(1) };
        if near == 0 || near == x {
            return None;
        }
        let (px, pn) = (self.get(x) as f64, self.get(near) as f64);
        Some((pn - px) / (near as f64 - x as f64))
    }
}

/// Largest `x` in `lo..=hi` with `fits(x)`, memory being monotonic in `x`; 0
/// if none. Starts at `guess` and gallops away from it (up if it fits, down
/// if not) before bisecting, so a good guess takes two or three probes.
fn largest_near(lo: u64, hi: u64, guess: u64, fits: impl Fn(u64) -> bool) -> u64 {
    if hi < lo {
        return 0;
    }
    let g = guess.clamp(lo, hi);
    let (mut ok, mut bad);
    if fits(g) {
        // Gallop up: ok fits; look for the first that does not.
        (ok, bad) = (g, hi + 1);
        let mut step = 1;
        while ok + step <= hi {
            if fits(ok + step) {
                ok += step;
                step *= 2;
            } else {
                bad = ok + step;
                break;
            }
        }
        if bad == hi + 1 {
            if ok == hi || fits(hi) {
                return hi;
            }
            bad = hi;
        }
    } else {
        // Gallop down: bad does not fit; look for one that does.
        bad = g;
        let mut step = 1;
        loop {
            if bad - lo < step {
                if !fits(lo) {
                    return 0;
                }
                ok = lo;
                break;
            }
            if fits(bad - step) {
                ok = bad - step;
                break;
            }
            bad -= step;
            step *= 2;
        }
    }
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if fits(mid) {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::largest_near;

    /// `largest_near` against counting up: the same answer for every
    /// threshold and every guess, inside the range and outside it.
    #[test]
    fn largest_near_agrees_with_a_linear_scan() {
        for (lo, hi) in [(1u64, 1), (1, 2), (1, 64), (3, 100), (1, 1024)] {
            for limit in 0..=hi + 2 {
                let fits = |x: u64| x <= limit;
                let want = (lo..=hi).filter(|&x| fits(x)).max().unwrap_or(0);
                for guess in [0, 1, lo, limit, limit + 1, hi / 2, hi, hi + 5, u64::MAX / 4] {
                    assert_eq!(
                        largest_near(lo, hi, guess, fits),
                        want,
                        "lo {lo} hi {hi} limit {limit} guess {guess}"
                    );
                }
            }
        }
        assert_eq!(largest_near(5, 4, 5, |_| true), 0, "an empty range");
    }
}
