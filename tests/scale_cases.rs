//! The scale bench (`benches/scale.rs`, issue 52: a log-log slope for every kind) has a case
//! for every registered kind: a kind added without one fails here, in `cargo test`, not only
//! when someone next runs the bench.

#[path = "../benches/common/scale_cases.rs"]
#[allow(dead_code)]
mod scale_cases;

use epsilab::error::{Error, Result};
use epsilab::kinds::{CellBudget, Described, GridValues, LearnerKind, Registry};
use epsilab::learners::Learner;
use serde::Deserialize;

#[test]
fn every_registered_kind_has_a_scale_case() {
    if let Err(e) = scale_cases::check_coverage(&Registry::builtin()) {
        panic!("{e}");
    }
}

/// A learner kind the bench has no case for.
#[derive(Debug, Clone, Deserialize)]
struct Unbenched {}

impl Described for Unbenched {
    const NAME: &'static str = "unbenched";
    const ABOUT: &'static str = "a kind registered without a scale case";
    const FIELDS: &'static [&'static str] = &[];
}

impl LearnerKind for Unbenched {
    fn private(&self) -> bool {
        false
    }

    fn learner(&self, _: &GridValues, _: &CellBudget) -> Result<Box<dyn Learner>> {
        Err(Error::param(
            "learner",
            "never fitted: the test only registers it",
        ))
    }
}

#[test]
fn a_kind_without_a_case_is_named() {
    let kinds = Registry::builtin().with_learner::<Unbenched>();
    let err = scale_cases::check_coverage(&kinds).expect_err("a kind without a case");
    assert!(err.contains("`unbenched`"), "{err}");
}
