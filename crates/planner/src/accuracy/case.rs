//! A published run turned into a plan on its own hardware: what the
//! calibration (data/calibration.csv) and the other stacks' runs
//! (data/published_runs.csv) both give the fit and the docs.

use crate::model::architecture::Architecture;
use crate::model::fabric::Fabric;
use crate::model::hardware;
use crate::model::layout::Layout;
use crate::model::plan::InstanceId;
use crate::model::plan::{Plan, Stack};

/// A calibration row turned into a plan on its own hardware.
pub struct Case {
    pub id: String,
    pub arch: Architecture,
    pub plan: Plan,
    pub layout: Layout,
    pub gpu: &'static hardware::Gpu,
    pub fabric: Fabric,
    pub measured_tokens_per_s_per_gpu: f64,
    /// Step time the source reports, where it does.
    pub measured_step_seconds: Option<f64>,
    pub(crate) recipe_found: bool,
    /// The model's family as the row names it (`model_family`).
    pub family: String,
}

/// A model's family: the leading letters of its name, lower-cased, after
/// its Hub owner (`Llama3 8B`, `llama-3.1-70b` and
/// `NousResearch/Llama-2-7b-hf` are `llama`, `Qwen2.5-72B` is `qwen`). A
/// speed label vouches only for the families its runs trained (#57).
pub fn model_family(name: &str) -> String {
    family_letters(name).to_ascii_lowercase()
}

/// The leading letters of a name after its Hub owner, as written.
fn family_letters(name: &str) -> &str {
    let owner = name.bytes().rposition(|b| b == b'/').map_or(0, |i| i + 1);
    let name = &name[owner..];
    let end = name
        .bytes()
        .position(|b| !b.is_ascii_alphabetic())
        .unwrap_or(name.len());
    &name[..end]
}

/// The family a plan trains: its preset's (preset ids are lower case, as
/// `model_family` writes a row's); none for a shape of its own (a quick
/// size, a changed field, a pasted config or a published run's link),
/// which the envelope's shape settings judge instead.
pub fn plan_family(plan: &Plan) -> Option<&str> {
    let m = &plan.model;
    let own_shape = m.params_b.is_some() || !m.arch.is_empty() || m.preset == "custom";
    (!own_shape).then(|| family_letters(&m.preset))
}

impl Case {
    /// The SageMaker instance with this row's GPU.
    pub fn instance(&self) -> &'static str {
        match self.gpu.id {
            id if id.starts_with("A100") => "ml.p4de.24xlarge",
            id if id.starts_with("H100") => "ml.p5.48xlarge",
            id if id.starts_with("H200") => "ml.p5en.48xlarge",
            "B200" => "ml.p6-b200.48xlarge",
            id if id.contains("B300") => "ml.p6-b300.48xlarge",
            _ => "ml.p6e-gb200.36xlarge",
        }
    }

    /// The page's link to this row's run: its shape (an MoE row's preset,
    /// else custom fields), its layout on the instance with its GPU, and what
    /// its recipe set, written by `Plan::to_query` as any link is.
    pub fn link(&self) -> String {
        let a = &self.arch;
        let mut p = self.plan.clone();
        match crate::model::architecture::presets()
            .iter()
            .find(|pre| a.moe.is_some() && pre.arch == *a)
        {
            Some(pre) => p.model.preset = pre.id.to_string(),
            None => {
                p.model.preset = "custom".into();
                p.model.arch = crate::model::plan::ArchOverrides {
                    layers: Some(a.layers),
                    hidden: Some(a.hidden),
                    heads: Some(a.heads),
                    kv_heads: Some(a.kv_heads),
                    head_dim: Some(a.head_dim),
                    ffn: Some(a.ffn),
                    vocab: Some(a.vocab),
                    tied: Some(a.tied),
                    mlp: Some(a.mlp),
                    ..Default::default()
                };
            }
        }
        let l = &self.layout;
        (
            p.parallelism.tp,
            p.parallelism.pp,
            p.parallelism.cp,
            p.parallelism.ep,
        ) = (l.tp, l.pp, l.cp, l.ep);
        if self.plan.implementation.stack == Stack::Torchtitan {
            // torchtitan's own entry point, not the bundle's data-parallel
            // train.py: its 2D rows run tensor parallelism.
            p.launch.entry = "torchtitan/train.py".into();
        }
        p.hardware.instance = InstanceId::parse(self.instance());
        let per_node =
            hardware::instance(p.hardware.instance.key()).map_or(8, |i| i.gpu_count.max(1));
        p.hardware.nodes = l.gpus.div_ceil(per_node);
        p.to_query()
    }

    /// Whether the row's recipe could be read at the table's release
    /// (`recipe_recompute` is not "not found"); rows without recipe columns
    /// (torchtitan, the papers) state their settings in the table.
    pub fn recipe_found(&self) -> bool {
        self.recipe_found
    }
}
