//! Randomized response (Warner 1965; Dwork & Roth 2014, section 3.2), binary.
//!
//! * Domain: one respondent's secret bit b; each respondent answers once per call.
//! * Input metric: replace-one (the respondent's bit changes), equivalently the local model: the
//!   mechanism sees one record. Sensitivity: the bit, 1.
//! * Mechanism: answer b with probability p = e^eps / (1 + e^eps), else 1 - b. The classic coin
//!   version (flip a coin; heads: answer truthfully; tails: flip again and answer "yes" on heads)
//!   answers truthfully with probability 1/2 + 1/4 = 3/4, i.e. eps = ln 3.
//! * Measure: pure eps-DP.
//! * Proof sketch: P(answer a | b) / P(answer a | 1 - b) is p / (1 - p) = e^eps or its inverse.
//!   k answers of the same bit with fresh coins compose sequentially to k eps (k ln 3 for the
//!   coin version), which the majority-vote attack exploits (`release::attacks`).

use super::check_positive;
use crate::error::Result;
use rand::Rng;

/// Binary randomized response at a given epsilon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomizedResponse {
    epsilon: f64,
    p_truth: f64,
}

impl RandomizedResponse {
    /// The general mechanism: truthful with probability e^eps / (1 + e^eps).
    pub fn new(epsilon: f64) -> Result<Self> {
        check_positive("epsilon", epsilon)?;
        Ok(RandomizedResponse {
            epsilon,
            p_truth: truth_probability(epsilon),
        })
    }

    /// The classic two-coin version, eps = ln 3 (see [`Self::respond_with_coins`]).
    pub fn classic_coin() -> Self {
        RandomizedResponse {
            epsilon: 3f64.ln(),
            p_truth: 0.75,
        }
    }

    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Probability of a truthful answer.
    pub fn p_truth(&self) -> f64 {
        self.p_truth
    }

    /// One answer about `bit`.
    #[inline]
    pub fn respond<R: Rng + ?Sized>(&self, bit: bool, rng: &mut R) -> bool {
        if rng.r#gen::<f64>() < self.p_truth {
            bit
        } else {
            !bit
        }
    }

    /// The coin procedure itself (two fair coins): the same law as `classic_coin().respond`.
    pub fn respond_with_coins<R: Rng + ?Sized>(bit: bool, rng: &mut R) -> bool {
        if rng.r#gen::<bool>() {
            bit
        } else {
            rng.r#gen::<bool>()
        }
    }

    /// Unbiased estimate of the true fraction of ones from the fraction of "yes" answers:
    /// E[yes] = (1 - p) + (2p - 1) pi, so pi = (yes - (1 - p)) / (2p - 1).
    pub fn debias(&self, yes_fraction: f64) -> f64 {
        (yes_fraction - (1.0 - self.p_truth)) / (2.0 * self.p_truth - 1.0)
    }
}

/// e^eps / (1 + e^eps), computed stably.
pub fn truth_probability(epsilon: f64) -> f64 {
    1.0 / (1.0 + (-epsilon).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_coin_is_ln3() {
        let c = RandomizedResponse::classic_coin();
        let g = RandomizedResponse::new(3f64.ln()).unwrap();
        assert!((c.p_truth() - g.p_truth()).abs() < 1e-15);
        assert!(RandomizedResponse::new(0.0).is_err());
        assert!((g.debias(0.25) - 0.0).abs() < 1e-12);
        assert!((g.debias(0.75) - 1.0).abs() < 1e-12);
        assert_eq!(truth_probability(800.0), 1.0);
    }
}
