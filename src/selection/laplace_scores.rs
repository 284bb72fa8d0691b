//! Algorithm 3: q~_d = q_d + Lap(D Delta_q / eps), keep the top T.
//!
//! * Domain: the score vector q(X) in R^D.
//! * Sensitivity: each coordinate moves by at most Delta_q between neighbours, so the L1
//!   sensitivity of the vector is D Delta_q (Delta_q for the run's relation).
//! * Measure: pure eps-DP by the Laplace mechanism; top-T is post-processing.

use super::{Context, STEP, Score, top_k};
use crate::counts::ClassCounts;
use crate::error::Result;
use crate::privacy::{Laplace, Ledger};
use crate::rng::Rng;

pub(super) fn select(score: Score, cx: &mut Context) -> Result<Vec<usize>> {
    let mut rng = cx.rng();
    let noisy = noisy_scores(score, cx.counts, cx.epsilon, &mut rng, cx.ledger)?;
    Ok(top_k(&noisy, cx.t))
}

/// The mechanism: every score of `counts` plus Lap(D Delta_q / eps), Delta_q for the ledger's
/// relation and public size, charged there as the selection step (the audit runs it as is).
pub fn noisy_scores(
    score: Score,
    counts: &ClassCounts,
    epsilon: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<Vec<f64>> {
    let q = score.compute(counts)?;
    let relation = ledger.relation();
    let sens = counts.n_features() as f64 * score.sensitivity(ledger)?;
    let mechanism = Laplace::new(sens, epsilon, relation)?;
    let label = format!("laplace (Algorithm 3, {} score)", score.name());
    let mut noise = ledger.charge(STEP, &label, mechanism)?;
    Ok(q.iter().map(|&v| v + noise.sample(rng)).collect())
}
