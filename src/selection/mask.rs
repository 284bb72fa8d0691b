//! Algorithm 5 (mask sampling): the exponential mechanism over all T-subsets with quality
//! sum_d m_d q_d, sampled exactly by [`MaskSampler`].
//!
//! * Domain: masks m in {0,1}^D with T ones.
//! * Sensitivity of the quality: Delta_m = T Delta_q (each of the T chosen scores moves by at
//!   most Delta_q under the run's relation).
//! * Measure: pure eps-DP by the exponential mechanism, P(m) ∝ exp(eps q(m) / (2 Delta_m)).

use super::{Context, STEP, Score};
use crate::error::Result;
use crate::privacy::Exponential;
use crate::privacy::exponential::{MaskSampler, exponential_weights};

pub(super) fn select(score: Score, cx: &mut Context) -> Result<Vec<usize>> {
    let q = score.compute(cx.counts)?;
    let relation = cx.ledger.relation();
    let sens = cx.t as f64 * score.sensitivity(cx.counts, relation);
    let mechanism = Exponential::new(sens, cx.epsilon, relation)?;
    let mut rng = cx.rng();
    let label = format!(
        "exponential over T-subsets (Algorithm 5, {} score)",
        score.name()
    );
    cx.ledger.charge(STEP, &label, mechanism)?.choose_subset(
        &mut MaskSampler::new(),
        &q,
        cx.t,
        &mut rng,
    )
}

/// Algorithm 5 weights w_d = eps q_d / (2 Delta_m).
pub fn mask_weights(q: &[f64], epsilon: f64, mask_sensitivity: f64) -> Vec<f64> {
    exponential_weights(q, epsilon, mask_sensitivity)
}
