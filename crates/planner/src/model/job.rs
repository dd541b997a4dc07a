//! A job: a plan resolved once (what its step runs, its model and parameter
//! counts, GPU and instance, the links its collectives cross, its parallel layout and
//! pipeline stages), which the memory, throughput, cost and label models
//! read instead of resolving the plan again. `resolve::resolve` builds it,
//! checking each part; the models add their methods where they live
//! (`Job::memory` in memory/, `Job::throughput` in throughput/), so this
//! module builds on the resolved parts only.

use crate::model::architecture::{Architecture, ParameterCounts};
use crate::model::fabric::Fabric;
use crate::model::hardware::{Gpu, Instance};
use crate::model::layout::Layout;
use crate::model::recipe::Recipe;
use crate::text::Phrase;
use std::borrow::Cow;

/// A plan resolved: its model, hardware and layout, each checked once.
pub struct Job {
    /// What each step runs, as the plan set it.
    pub recipe: Recipe,
    pub arch: Architecture,
    pub model_name: Phrase,
    pub counts: ParameterCounts,
    pub gpu: Cow<'static, Gpu>,
    pub instance: Cow<'static, Instance>,
    pub layout: Layout,
    /// The links the layout's collectives cross, built once.
    pub fabric: Fabric,
    /// Whether the plan resolved without an error (with one, each step
    /// fell back to the nearest valid value).
    pub valid: bool,
    /// Whether its model did (an error there is one on any hardware).
    pub model_valid: bool,
    /// Its allocated peak bytes per GPU once its memory was broken down
    /// (`Job::allocated_peak_bytes`): the labels compare put-back plans with it.
    pub(crate) peak: std::cell::OnceCell<u64>,
}
