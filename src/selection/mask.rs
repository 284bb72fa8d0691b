//! Algorithm 5 (mask sampling): the exponential mechanism over all T-subsets with quality
//! sum_d m_d q_d, sampled exactly by [`MaskSampler`].
//!
//! * Domain: masks m in {0,1}^D with T ones.
//! * Sensitivity of the quality: Delta_m = T Delta_q (each of the T chosen scores moves by at
//!   most Delta_q under the run's relation).
//! * Measure: pure eps-DP by the exponential mechanism, P(m) ∝ exp(eps q(m) / (2 Delta_m)).
//!
//! Ablation variant `delta_q` (`per_feature`): calibrated for Delta_m = Delta_q, as if Algorithm
//! 5's parameter Delta were the score's own sensitivity. The quality still moves by up to
//! T Delta_q, so the release is (T eps)-DP, not eps-DP: the ledger records T eps spent against
//! the eps claimed.

use super::{Context, STEP, Score};
use crate::error::Result;
use crate::privacy::Exponential;
use crate::privacy::exponential::{MaskSampler, exponential_weights};

/// Selects T features; `per_feature` is the `delta_q` ablation variant.
pub(super) fn select(score: Score, per_feature: bool, cx: &mut Context) -> Result<Vec<usize>> {
    let q = score.compute(cx.counts)?;
    let relation = cx.ledger.relation();
    let t = cx.t as f64;
    let sens = mask_sensitivity(score.sensitivity(cx.ledger)?, cx.t, per_feature);
    let mechanism = Exponential::new(sens, cx.epsilon, relation)?;
    let mut rng = cx.rng();
    let label = format!(
        "exponential over T-subsets (Algorithm 5, {} score{})",
        score.name(),
        if per_feature { ", variant delta_q" } else { "" }
    );
    let chosen = cx.ledger.charge(STEP, &label, mechanism)?.choose_subset(
        &mut MaskSampler::new(),
        &q,
        cx.t,
        &mut rng,
    )?;
    if per_feature && cx.t > 1 {
        cx.ledger.understate_last(
            t,
            "variant delta_q: calibrated for Delta_m = Delta_q while the quality moves by T Delta_q",
        );
    }
    Ok(chosen)
}

/// Delta_m the mechanism is calibrated for: T Delta_q (Algorithm 5, eq. 3.30), or Delta_q for
/// the `delta_q` variant.
pub fn mask_sensitivity(score_sensitivity: f64, t: usize, per_feature: bool) -> f64 {
    if per_feature {
        score_sensitivity
    } else {
        t as f64 * score_sensitivity
    }
}

/// Algorithm 5 weights w_d = eps q_d / (2 Delta_m).
pub fn mask_weights(q: &[f64], epsilon: f64, mask_sensitivity: f64) -> Vec<f64> {
    exponential_weights(q, epsilon, mask_sensitivity)
}
