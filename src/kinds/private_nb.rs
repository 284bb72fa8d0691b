//! `learner = "private_nb"`: Algorithm 1, Laplace noise on the Naive Bayes counts.

use super::{
    Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, check_alpha,
    check_fixed_threshold,
};
use crate::error::Result;
use crate::learners::{Learner, PrivateNbParams, Release, Threshold};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateNb {
    /// Smoothing pseudo-count; default 1.
    alpha: Option<f64>,
    /// Threshold t (or a `threshold` grid axis); default `q65`.
    threshold: Option<Threshold>,
    /// Which counts are released; default `on_off`.
    release: Option<Release>,
}

impl Described for PrivateNb {
    const NAME: &'static str = "private_nb";
    const ABOUT: &'static str =
        "Algorithm 1: Laplace noise on NB counts, threshold t (eps-DP, sensitivity D)";
    const FIELDS: &'static [&'static str] = &["alpha", "threshold", "release"];
}

impl LearnerKind for PrivateNb {
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
        let mut params = PrivateNbParams::new(budget.train_of(Self::NAME)?)
            .alpha(self.alpha.unwrap_or(1.0))
            .release(self.release.unwrap_or_default());
        if let Some(t) = at.threshold.or(self.threshold) {
            params = params.threshold(t);
        }
        Ok(Learner::PrivateNb(params))
    }
}
