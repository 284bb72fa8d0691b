//! `learner = "partitioned_nb"`: the partitioning strategy of section 3.4.

use super::{
    Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, check_alpha,
    check_fixed_threshold,
};
use crate::error::Result;
use crate::learners::{Learner, PartitionedNbParams, Threshold};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionedNb {
    /// Smoothing pseudo-count; default 1.
    alpha: Option<f64>,
    /// Threshold t (or a `threshold` grid axis); default `q65`.
    threshold: Option<Threshold>,
}

impl Described for PartitionedNb {
    const NAME: &'static str = "partitioned_nb";
    const ABOUT: &'static str = "partitioning strategy (3.4): feature t counted on its own disjoint part, Lap(1/eps) (eps-DP, parallel composition)";
    const FIELDS: &'static [&'static str] = &["alpha", "threshold"];
}

impl LearnerKind for PartitionedNb {
    fn private(&self) -> bool {
        true
    }

    fn axes(&self) -> &'static [Axis] {
        &[Axis::Threshold]
    }

    fn validate(&self, grid: &[Axis]) -> std::result::Result<(), Refusal> {
        check_alpha(self.alpha)?;
        check_fixed_threshold(self.threshold.as_ref(), grid)
    }

    fn learner(&self, at: &GridValues, budget: &CellBudget) -> Result<Learner> {
        let mut params =
            PartitionedNbParams::new(budget.train_of(Self::NAME)?).alpha(self.alpha.unwrap_or(1.0));
        if let Some(t) = at.threshold.or(self.threshold) {
            params = params.threshold(t);
        }
        Ok(Learner::PartitionedNb(params))
    }
}
