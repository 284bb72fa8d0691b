//! `learner = "majority"`: the majority-class baseline.

use super::{CellBudget, Described, GridValues, LearnerKind};
use crate::error::Result;
use crate::learners::{Learner, MajorityBaseline};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Majority {}

impl Described for Majority {
    const NAME: &'static str = "majority";
    const ABOUT: &'static str = "majority-class baseline (non-private reference)";
    const FIELDS: &'static [&'static str] = &[];
}

impl LearnerKind for Majority {
    fn private(&self) -> bool {
        false
    }

    fn learner(&self, _: &GridValues, _: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(MajorityBaseline))
    }

    fn is_baseline(&self) -> bool {
        true
    }
}
