//! Randomized response (Warner 1965; Dwork & Roth 2014, section 3.2), binary.
//!
//! * Domain: one respondent's secret bit b; each respondent answers once per call.
//! * Input metric: replace-one (the respondent's bit changes), equivalently the local model: the
//!   mechanism sees one record. Sensitivity: the bit, 1.
//! * Mechanism: answer b with probability p = e^eps / (1 + e^eps), else 1 - b. The classic coin
//!   version (flip a coin; heads: answer truthfully; tails: flip again and answer "yes" on heads)
//!   answers truthfully with probability 1/2 + 1/4 = 3/4, i.e. eps = ln 3.
//! * Measure: pure eps-DP per answer. Every answer is a release of its own: the mechanism is
//!   charged per draw, so a ledger [`Charge`] that drew k answers records k eps. A survey
//!   (one answer from each of n respondents, [`Charge::survey`]) records eps once: each answer
//!   is about a different row (parallel composition).
//! * Epsilon statement: eps = ln(p / (1 - p)) for truth probability p (ln 3 at p = 3/4).
//! * Proof sketch: P(answer a | b) / P(answer a | 1 - b) is p / (1 - p) = e^eps or its inverse.
//!   k answers of the same bit with fresh coins compose sequentially to k eps (k ln 3 for the
//!   coin version), which the majority-vote attack exploits (`release::attacks`).

use super::Relation;
use super::mechanism::{Charge, PrivacyMap};
use crate::error::Result;
use rand::Rng;

mechanism_with_map!(per_draw: RandomizedResponse);

/// Binary randomized response at a given epsilon (replace-one: the respondent's bit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomizedResponse {
    map: PrivacyMap,
    p_truth: f64,
    /// The classic two-coin procedure (eps = ln 3) instead of one biased draw.
    coins: bool,
}

impl Charge<'_, RandomizedResponse> {
    /// One answer about `bit` (recorded: the step's epsilon grows by eps per answer): a
    /// survey of one respondent.
    #[inline]
    pub fn respond<R: Rng + ?Sized>(&mut self, bit: bool, rng: &mut R) -> bool {
        self.survey([bit], rng) == 1
    }

    /// One answer from each respondent of `bits` (the local model), returning how many
    /// answered "yes". Each answer is about a different row and is eps-DP for it, so the
    /// survey is eps-DP by parallel composition: it records eps once, whatever the number of
    /// respondents; asking again through the same handle records eps more.
    pub fn survey<R: Rng + ?Sized>(
        &mut self,
        bits: impl IntoIterator<Item = bool>,
        rng: &mut R,
    ) -> usize {
        self.count_draw();
        bits.into_iter()
            .filter(|&b| self.mechanism.answer(b, rng))
            .count()
    }

    /// [`Self::survey`] keeping every answer (input perturbation's noisy labels).
    pub fn survey_answers<R: Rng + ?Sized>(
        &mut self,
        bits: impl IntoIterator<Item = bool>,
        rng: &mut R,
    ) -> Vec<bool> {
        self.count_draw();
        bits.into_iter()
            .map(|b| self.mechanism.answer(b, rng))
            .collect()
    }
}

impl RandomizedResponse {
    /// The general mechanism: truthful with probability e^eps / (1 + e^eps).
    pub fn new(epsilon: f64) -> Result<Self> {
        Ok(RandomizedResponse {
            map: PrivacyMap::pure(1.0, epsilon, Relation::ReplaceOne)?,
            p_truth: truth_probability(epsilon),
            coins: false,
        })
    }

    /// The classic two-coin version, eps = ln 3: heads, the truth; tails, a second coin.
    pub fn classic_coin() -> Self {
        RandomizedResponse {
            map: PrivacyMap::pure(1.0, 3f64.ln(), Relation::ReplaceOne).expect("valid"),
            p_truth: 0.75,
            coins: true,
        }
    }

    pub fn epsilon(&self) -> f64 {
        self.map.epsilon
    }

    /// Probability of a truthful answer.
    pub fn p_truth(&self) -> f64 {
        self.p_truth
    }

    /// The answer's randomisation (drawn through [`Charge::respond`]).
    #[inline]
    fn answer<R: Rng + ?Sized>(&self, bit: bool, rng: &mut R) -> bool {
        if self.coins {
            if rng.r#gen::<bool>() {
                bit
            } else {
                rng.r#gen::<bool>()
            }
        } else if rng.r#gen::<f64>() < self.p_truth {
            bit
        } else {
            !bit
        }
    }

    /// Unbiased estimate of the true fraction of ones from the fraction of "yes" answers:
    /// `E[yes] = (1 - p) + (2p - 1) pi`, so `pi = (yes - (1 - p)) / (2p - 1)`.
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
        // k answers through one charge record k eps.
        let mut ledger = crate::privacy::Ledger::new(Relation::ReplaceOne);
        let mut charge = ledger.charge("answers", "randomized response", c).unwrap();
        let mut rng = crate::rng::rng_from(&["rr-ledger"]);
        for _ in 0..5 {
            charge.respond(true, &mut rng);
        }
        assert!((ledger.total_epsilon() - 5.0 * 3f64.ln()).abs() < 1e-12);
        let mut add = crate::privacy::Ledger::new(Relation::AddRemove);
        assert!(add.charge("answers", "randomized response", g).is_err());
    }
}
