//! Sparse vector over the feature scores in index order, with a public threshold
//! ([`SparseVector`]: AboveThreshold with restarts, Dwork & Roth 2014, Alg. 2).
//!
//! * Sensitivity: Delta_q per score under the run's relation (recorded).
//! * Measure: pure eps-DP (eps/T per AboveThreshold round, T rounds). May return fewer than T
//!   features.

use super::{Context, STEP, Score};
use crate::error::{Error, Result};
use crate::privacy::SparseVector;

pub(super) fn select(score: Score, threshold: f64, cx: &mut Context) -> Result<Vec<usize>> {
    if !threshold.is_finite() {
        return Err(Error::param(
            "threshold",
            format!("sparse vector threshold must be finite, got {threshold}"),
        ));
    }
    let q = score.compute(cx.counts)?;
    let relation = cx.ledger.relation();
    let sens = score.sensitivity(cx.ledger)?;
    let mechanism = SparseVector::new(cx.t, sens, cx.epsilon, relation)?;
    let mut rng = cx.rng();
    let label = format!("sparse vector, public threshold ({} score)", score.name());
    let chosen = cx
        .ledger
        .charge(STEP, &label, mechanism)?
        .above_threshold(&q, threshold, &mut rng)?;
    cx.metrics.insert("threshold".into(), threshold);
    Ok(chosen)
}
