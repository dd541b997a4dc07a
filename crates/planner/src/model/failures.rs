//! Interruptions at scale (#58): what failures add to the time to train, and
//! the checkpoint interval that keeps that smallest.
//!
//! A synchronous job restarts whole: each interruption costs the restart
//! (detection, rescheduling, start-up), reloading the last complete save,
//! and the work done since it, on average half an interval between saves
//! (../shared/data/sagemaker_at_scale.md, "Failures at scale"). With λ
//! interruptions per second of the whole job and `c` seconds lost to each,
//! the wall time `W` solves `W = W₀ + λ·W·c` (first order), so
//! `W = W₀ / (1 − λ·c)`; when `λ·c ≥ 1` the job loses work as fast as it
//! makes it and never finishes. The interval between saves that minimises
//! the total is Young's `τ = √(2·δ·M)`, `δ` the seconds a save blocks
//! training and `M = 1/λ` the mean time between interruptions (Young 1974;
//! Daly 2006).

use serde::Serialize;

/// Meta's Llama 3 405B pre-training: 419 unexpected interruptions in a
/// 54-day snapshot on 16,384 H100s ("The Llama 3 Herd of Models", 2024,
/// §3.3.4): the default rate, per million GPU-hours.
pub const PUBLISHED_INTERRUPTIONS: f64 = 419.0;
pub const PUBLISHED_GPUS: f64 = 16_384.0;
pub const PUBLISHED_DAYS: f64 = 54.0;

/// The published rate: 419 / (16,384 × 54 × 24 GPU-hours) × 10⁶ = 19.73
/// interruptions per million GPU-hours (one per 50,700 GPU-hours).
pub fn published_rate_per_million_gpu_hours() -> f64 {
    PUBLISHED_INTERRUPTIONS / (PUBLISHED_GPUS * PUBLISHED_DAYS * 24.0) * 1e6
}

/// What a job spends on its saves, as `cost::time` computes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Saves {
    pub step_seconds: f64,
    pub steps: u64,
    /// Steps between saves; 0: it never saves.
    pub every: u64,
    /// Seconds each save blocks training.
    pub blocking_seconds: f64,
    /// Seconds to read the last save back (at the write bandwidth).
    pub reload_seconds: f64,
    /// Checkpointless recovery: the state comes back from the peers'
    /// memory, so an interruption loses the step under way (half a step on
    /// average) and reads no save; the saves no longer bound the loss.
    pub in_memory: bool,
}

impl Saves {
    /// Seconds of training and blocked saving, without interruptions.
    fn base_seconds(&self) -> f64 {
        let saves = self.steps.checked_div(self.every).unwrap_or(0);
        self.steps as f64 * self.step_seconds + saves as f64 * self.blocking_seconds
    }

    /// Seconds of work lost to one interruption on average: half the
    /// interval between saves, or half the whole run when it never saves
    /// (or ends before its first save).
    fn lost_work_seconds(&self) -> f64 {
        if self.in_memory {
            return self.step_seconds / 2.0;
        }
        let run = self.base_seconds() / 2.0;
        match self.every {
            0 => run,
            n => ((n as f64 * self.step_seconds + self.blocking_seconds) / 2.0).min(run),
        }
    }
}

/// How the job's GPUs fail and what a restart takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reliability {
    /// Unexpected interruptions per million GPU-hours.
    pub rate_per_million_gpu_hours: f64,
    /// GPUs the job runs on: any one failing stops it.
    pub gpus: u64,
    /// Seconds from an interruption to training again, before reloading.
    pub restart_seconds: f64,
    /// Managed spot: interruptions per instance-hour the spot market adds,
    /// and the instances it can reclaim.
    pub spot_per_instance_hour: f64,
    pub instances: u64,
}

impl Reliability {
    /// Interruptions per second of the whole job.
    fn per_second(&self) -> f64 {
        let gpus = self.rate_per_million_gpu_hours.max(0.0) / 1e6 * self.gpus as f64;
        let spot = self.spot_per_instance_hour.max(0.0) * self.instances as f64;
        (gpus + spot) / 3600.0
    }
}

/// Interruptions in the time to train.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Failures {
    /// Interruptions per million GPU-hours, as planned.
    pub rate_per_million_gpu_hours: f64,
    /// Mean hours between interruptions of the whole job (None: no rate).
    pub mtbf_hours: Option<f64>,
    /// Interruptions expected before the job ends (None: it never ends).
    pub expected_interruptions: Option<f64>,
    /// Hours each interruption costs: restart, reload and lost work.
    pub hours_per_interruption: f64,
    /// Hours the interruptions add to the time to train (None: it never ends).
    pub lost_hours: Option<f64>,
    /// Their share of the wall time.
    pub wall_share: f64,
    /// Whether work is lost as fast as it is made: no finite time.
    pub never_finishes: bool,
    /// The save interval, in steps, that minimises the wall time (Young),
    /// where the job saves at all and the rate is above zero.
    pub best_save_every: Option<u64>,
    /// The wall hours (training, saves and interruptions) at that interval.
    pub best_total_hours: Option<f64>,
}

/// Wall seconds with interruptions, or None when the job never finishes.
fn wall_seconds(saves: &Saves, r: &Reliability) -> Option<f64> {
    let loss = r.per_second() * seconds_per_interruption(saves, r);
    (loss < 1.0).then(|| saves.base_seconds() / (1.0 - loss))
}

/// Seconds one interruption costs: the restart, reading the last save back
/// (none from the peers' memory) and the work lost.
fn seconds_per_interruption(saves: &Saves, r: &Reliability) -> f64 {
    let reload = if saves.in_memory {
        0.0
    } else {
        saves.reload_seconds
    };
    r.restart_seconds + reload + saves.lost_work_seconds()
}

/// Young's interval in steps: `√(2·δ·M)` seconds of training between saves.
fn best_every(saves: &Saves, r: &Reliability) -> Option<u64> {
    let lambda = r.per_second();
    if lambda <= 0.0 || saves.step_seconds <= 0.0 || saves.in_memory {
        return None;
    }
    let tau = (2.0 * saves.blocking_seconds / lambda).sqrt();
    Some(((tau / saves.step_seconds).round() as u64).clamp(1, saves.steps.max(1)))
}

/// Interruptions for a job whose saves are `saves`.
pub fn failures(saves: &Saves, r: &Reliability) -> Failures {
    let lambda = r.per_second();
    let base = saves.base_seconds();
    let wall = wall_seconds(saves, r);
    let best = best_every(saves, r);
    let best_wall = best.and_then(|every| wall_seconds(&Saves { every, ..*saves }, r));
    Failures {
        rate_per_million_gpu_hours: r.rate_per_million_gpu_hours,
        mtbf_hours: (lambda > 0.0).then(|| 1.0 / lambda / 3600.0),
        expected_interruptions: wall.map(|w| lambda * w),
        hours_per_interruption: seconds_per_interruption(saves, r) / 3600.0,
        lost_hours: wall.map(|w| (w - base) / 3600.0),
        wall_share: wall.map_or(1.0, |w| if w > 0.0 { (w - base) / w } else { 0.0 }),
        never_finishes: wall.is_none(),
        best_save_every: best.filter(|_| best_wall.is_some()),
        best_total_hours: best_wall.map(|w| w / 3600.0),
    }
}
