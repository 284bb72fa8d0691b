//! Algorithm 3: q~_d = q_d + Lap(D Delta_q / eps), keep the top T.
//!
//! * Domain: the score vector q(X) in R^D.
//! * Sensitivity: each coordinate moves by at most Delta_q between neighbours, so the L1
//!   sensitivity of the vector is D Delta_q (Delta_q for the run's relation).
//! * Measure: pure eps-DP by the Laplace mechanism; top-T is post-processing.

use super::{Context, STEP, Score, top_k};
use crate::error::Result;
use crate::privacy::Laplace;

pub(super) fn select(score: Score, cx: &mut Context) -> Result<Vec<usize>> {
    let q = score.compute(cx.counts)?;
    let relation = cx.ledger.relation();
    let sens = cx.counts.n_features() as f64 * score.sensitivity(cx.ledger)?;
    let mechanism = Laplace::new(sens, cx.epsilon, relation)?;
    let mut rng = cx.rng();
    let label = format!("laplace (Algorithm 3, {} score)", score.name());
    let mut noise = cx.ledger.charge(STEP, &label, mechanism)?;
    let noisy: Vec<f64> = q.iter().map(|&v| v + noise.sample(&mut rng)).collect();
    Ok(top_k(&noisy, cx.t))
}
