//! Randomized response as a release of its own (`release = "randomized_response"`): every row
//! of the column answers whether its value satisfies a binary predicate, once, through
//! [`RandomizedResponse`] at the grid's eps, and the curator releases the debiased share of
//! ones (`release::randomized_response`). The majority-vote attack asks one respondent the
//! same question repeatedly through the same mechanism (`kinds::attack`).
//!
//! * Relation: replace-one (one respondent's bit changes); the run refuses add/remove.
//! * Epsilon: truthful with probability p = e^eps / (1 + e^eps), i.e. eps = ln(p / (1 - p)).
//! * Ledger: one entry of eps (each answer concerns its own row: parallel composition).
//! * Proof sketch: for one respondent, P(a | b) / P(a | 1 - b) is p / (1 - p) = e^eps or its
//!   inverse; the other rows' answers do not depend on that bit; debiasing is post-processing.

use super::release::{check_range, need_eps, predicate, record};
use super::{Axis, Described, Refusal, ReleaseInput, ReleaseKind, ReleaseOutput};
use crate::error::{Error, Result};
use crate::learners::TrialLog;
use crate::privacy::Relation;
use crate::privacy::randomized_response::RandomizedResponse;
use crate::release::{self, Predicate};
use serde::Deserialize;

/// Randomized response over a binary predicate of the column (or a 0/1 column).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Survey {
    /// A row's bit is `at_least` <= x < `below`; with neither, the column must be 0/1.
    at_least: Option<f64>,
    below: Option<f64>,
}

impl Described for Survey {
    const NAME: &'static str = "randomized_response";
    const ABOUT: &'static str = "each row answers its bit (at_least <= x < below, or a 0/1 column) once, truthfully with probability p = e^eps/(1+e^eps) (eps = ln(p/(1-p))); the share of ones debiased; pure eps-DP under replace-one (each answer is about its own row: parallel composition)";
    const FIELDS: &'static [&'static str] = &["at_least", "below"];
}

impl Survey {
    /// The predicate a row's bit answers; `None`: the column itself must be 0/1.
    fn predicate(&self) -> Option<Predicate> {
        (self.at_least.is_some() || self.below.is_some())
            .then(|| predicate(self.at_least, self.below))
    }

    /// Refuses a column that is not 0/1 when no predicate is given, naming the first bad row.
    fn check(&self, values: &[f64]) -> Result<()> {
        if self.predicate().is_some() {
            return Ok(());
        }
        match values.iter().position(|&v| v != 0.0 && v != 1.0) {
            None => Ok(()),
            Some(i) => Err(Error::param(
                "data",
                format!(
                    "randomized response without `at_least`/`below` reads a 0/1 column; row {i} is {}",
                    values[i]
                ),
            )),
        }
    }

    /// The respondents' bits, row by row, with no vector of n bits (issue 52); the column
    /// passed [`Survey::check`].
    fn bits<'a>(&self, values: &'a [f64]) -> impl ExactSizeIterator<Item = bool> + Clone + use<'a> {
        let p = self.predicate();
        values.iter().map(move |&x| match p {
            Some(p) => p.holds(x),
            None => x == 1.0,
        })
    }
}

impl ReleaseKind for Survey {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_range(self.at_least, self.below)
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        if log.ledger.relation() != Relation::ReplaceOne {
            return Err(Error::param(
                "neighbours",
                "randomized response is eps-DP when one respondent's bit changes: set `neighbours = \"replace_one\"` in [experiment]",
            ));
        }
        self.check(input.values)?;
        let bits = self.bits(input.values);
        let rr = RandomizedResponse::new(eps)?;
        let r =
            release::randomized_response("release", bits, rr, &mut log.streams, &mut log.ledger)?;
        record(r, log);
        let sd = release::randomized_response_sd(rr, input.values.len());
        // E|N(0, sd^2)| = sd sqrt(2 / pi): the estimate is a scaled binomial share.
        log.metrics.insert(
            "abs_error_analytic".into(),
            sd * (2.0 / std::f64::consts::PI).sqrt(),
        );
        log.metrics.insert("p_truth".into(), rr.p_truth());
        Ok(ReleaseOutput::default())
    }
}
