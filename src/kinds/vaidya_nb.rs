//! `learner = "vaidya_nb"`: Vaidya et al. 2013, kept as a known-bad comparison.

use super::{CellBudget, Described, GridValues, LearnerKind, Refusal, check_alpha};
use crate::error::Result;
use crate::learners::{Learner, VaidyaNbParams};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaidyaNb {
    /// Smoothing pseudo-count; default 1.
    alpha: Option<f64>,
}

impl Described for VaidyaNb {
    const NAME: &'static str = "vaidya_nb";
    const ABOUT: &'static str =
        "Vaidya et al. 2013 NB, BROKEN: claims eps, really (D eps + C)-DP (known-bad comparison)";
    const FIELDS: &'static [&'static str] = &["alpha"];
}

impl LearnerKind for VaidyaNb {
    fn private(&self) -> bool {
        true
    }

    fn validate(&self, _: &[super::Axis]) -> std::result::Result<(), Refusal> {
        check_alpha(self.alpha)
    }

    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Learner> {
        Ok(Learner::VaidyaNb(
            VaidyaNbParams::new(budget.train_of(Self::NAME)?).alpha(self.alpha.unwrap_or(1.0)),
        ))
    }
}
