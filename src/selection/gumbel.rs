//! One-shot Gumbel top-k: add Gumbel noise of scale 2 T Delta_q / eps to every score and keep
//! the T largest.
//!
//! * Sensitivity: Delta_q per score under the run's relation (recorded).
//! * Measure: pure eps-DP. Equals T rounds of the peeling exponential mechanism at eps/T each
//!   (Durfee & Rogers 2019), composed sequentially.

use super::{Context, STEP, Score};
use crate::error::Result;
use crate::privacy::Exponential;

pub(super) fn select(score: Score, cx: &mut Context) -> Result<Vec<usize>> {
    let q = score.compute(cx.counts)?;
    let relation = cx.ledger.relation();
    let sens = score.sensitivity(cx.ledger)?;
    let mechanism = Exponential::new(sens, cx.epsilon, relation)?;
    let mut rng = cx.rng();
    let label = format!("gumbel top-k ({} score)", score.name());
    cx.ledger
        .charge(STEP, &label, mechanism)?
        .gumbel_top_k(&q, cx.t, &mut rng)
}
