//! `learner = "nb"`: Bernoulli Naive Bayes, the non-private reference.

use super::{CellBudget, Described, GridValues, LearnerKind, Refusal, check_alpha};
use crate::error::Result;
use crate::learners::{BernoulliNbParams, Learner};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nb {
    /// Smoothing pseudo-count; default 1.
    alpha: Option<f64>,
}

impl Described for Nb {
    const NAME: &'static str = "nb";
    const ABOUT: &'static str =
        "Bernoulli Naive Bayes, add-alpha smoothing (non-private reference)";
    const FIELDS: &'static [&'static str] = &["alpha"];
}

impl LearnerKind for Nb {
    fn private(&self) -> bool {
        false
    }

    fn validate(&self, _: &[super::Axis]) -> std::result::Result<(), Refusal> {
        check_alpha(self.alpha)
    }

    fn learner(&self, _: &GridValues, _: &CellBudget) -> Result<Learner> {
        Ok(Learner::Nb(
            BernoulliNbParams::new().alpha(self.alpha.unwrap_or(1.0)),
        ))
    }
}
