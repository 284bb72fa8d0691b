//! The sparse vector technique: AboveThreshold with restarts (Dwork & Roth 2014, Alg. 2
//! "Sparse"), with a public threshold.
//!
//! * Domain: datasets X; a stream of queries q_1, q_2, ... of sensitivity Delta_q each under the
//!   run's relation, and a public threshold thr.
//! * Mechanism: eps' = eps/T; noisy threshold thr + Lap(2 Delta_q/eps'); query d is "above" if
//!   q_d + Lap(4 Delta_q/eps') >= the noisy threshold; after each positive the threshold is
//!   redrawn; stops after T positives or at the end of the queries.
//! * Measure: pure eps-DP.
//! * Proof sketch: each AboveThreshold round (up to and including one positive) is eps'-DP for
//!   sensitivity-Delta_q queries (Dwork & Roth 2014, Thm. 3.23); T rounds compose to eps.
//!
//! Floating-point sampling: fine for measuring accuracy, not hardened against Mironov (2012).

use super::Relation;
use super::laplace::LaplaceNoise;
use super::mechanism::{Charge, PrivacyMap};
use crate::error::{Error, Result};
use rand::Rng;

mechanism_with_map!(SparseVector);

/// Sparse vector for at most `t` positives; the recorded sensitivity is Delta_q.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SparseVector {
    t: usize,
    threshold_noise: LaplaceNoise,
    query_noise: LaplaceNoise,
    map: PrivacyMap,
}

impl SparseVector {
    /// At most `t` >= 1 positives, queries of sensitivity Delta_q under `relation`, eps in all.
    pub fn new(t: usize, sensitivity: f64, epsilon: f64, relation: Relation) -> Result<Self> {
        let map = PrivacyMap::pure(sensitivity, epsilon, relation)?;
        if t == 0 {
            return Err(Error::param("features", "T must be at least 1"));
        }
        let eps1 = epsilon / t as f64;
        Ok(SparseVector {
            t,
            threshold_noise: LaplaceNoise::with_scale(2.0 * sensitivity / eps1)?,
            query_noise: LaplaceNoise::with_scale(4.0 * sensitivity / eps1)?,
            map,
        })
    }
}

impl Charge<'_, SparseVector> {
    /// The indices (ascending) of the queries found above `threshold`, at most T; refuses
    /// T > the number of queries and a non-finite threshold.
    pub fn above_threshold<R: Rng + ?Sized>(
        &mut self,
        scores: &[f64],
        threshold: f64,
        rng: &mut R,
    ) -> Result<Vec<usize>> {
        let m = self.mechanism;
        if m.t > scores.len() {
            return Err(Error::param(
                "features",
                format!("T must be in 1..={}, got {}", scores.len(), m.t),
            ));
        }
        if !threshold.is_finite() {
            return Err(Error::param(
                "threshold",
                format!("sparse vector threshold must be finite, got {threshold}"),
            ));
        }
        let mut out = Vec::with_capacity(m.t);
        let mut noisy_thr = threshold + m.threshold_noise.sample(rng);
        for (i, &q) in scores.iter().enumerate() {
            if q + m.query_noise.sample(rng) >= noisy_thr {
                out.push(i);
                if out.len() == m.t {
                    break;
                }
                noisy_thr = threshold + m.threshold_noise.sample(rng);
            }
        }
        Ok(out)
    }
}
