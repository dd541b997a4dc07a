//! The auto-plan: search instance type and count, parallel degrees, ZeRO
//! stage, micro-batch (keeping the global batch in tokens), precision,
//! checkpointing and loss; keep the plans that fit; rank them by time and cost.
//!
//! Every candidate is evaluated by the same memory, throughput and cost
//! models as the page. Pruning uses bounds only, so no plan on the Pareto
//! front is missed:
//! - memory grows with the micro-batch, so once one does not fit the larger
//!   ones are skipped;
//! - a whole block (instance, nodes, precision, layout) is skipped when even
//!   its ideal time (every GPU at its dense peak) and the cost of that time are
//!   dominated by a plan already found.
//!
//! Three facts save work without changing the answer:
//! - memory does not depend on the instance type, only on the layout, so a
//!   block's peaks are computed once and reused by every instance type with
//!   as many GPUs per node (`PeakCache`);
//! - inside a block every plan costs the same per hour, so only the block's
//!   fastest plan can be on the front or be the best under a budget or a
//!   deadline: the others are counted, not kept;
//! - so a candidate at least as slow as another of its block that fits
//!   (recomputing where nothing is offloaded, the plain loss beside the
//!   fused one, ZeRO-2 beside ZeRO-1) is not evaluated at all (`dominance`).
//!
//! The search runs in chunks (`Search::run`) so its caller can say how far
//! it got; the page runs it in its worker and gets the result as `wire` text.

mod dominance;
mod results;
mod space;
mod walk;
pub mod wire;

pub use results::*;
pub use walk::*;
