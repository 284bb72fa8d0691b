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
    /// The respondents' bits.
    fn bits(&self, values: &[f64]) -> Result<Vec<bool>> {
        if self.at_least.is_some() || self.below.is_some() {
            let p: Predicate = predicate(self.at_least, self.below);
            return Ok(values.iter().map(|&x| p.holds(x)).collect());
        }
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| match v {
                0.0 => Ok(false),
                1.0 => Ok(true),
                _ => Err(Error::param(
                    "data",
                    format!(
                        "randomized response without `at_least`/`below` reads a 0/1 column; row {i} is {v}"
                    ),
                )),
            })
            .collect()
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
        let bits = self.bits(input.values)?;
        let rr = RandomizedResponse::new(eps)?;
        let r =
            release::randomized_response("release", &bits, rr, &mut log.streams, &mut log.ledger)?;
        record(r, log);
        let sd = release::randomized_response_sd(rr, bits.len());
        // E|N(0, sd^2)| = sd sqrt(2 / pi): the estimate is a scaled binomial share.
        log.metrics.insert(
            "abs_error_analytic".into(),
            sd * (2.0 / std::f64::consts::PI).sqrt(),
        );
        log.metrics.insert("p_truth".into(), rr.p_truth());
        Ok(ReleaseOutput::default())
    }
}
