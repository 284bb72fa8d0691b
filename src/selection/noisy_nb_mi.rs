//! Algorithm 2: fit Algorithm 1 (Laplace, sensitivity D, default 65% threshold) with eps_select
//! on all features, compute the MI of the noisy NB parameters, keep the top T.
//!
//! * Relation and sensitivity: Algorithm 1's (D add/remove, 2D replace-one), recorded by its
//!   release.
//! * Measure: pure eps-DP. Algorithm 1 is eps-DP; the MI and the ranking read only its output
//!   (post-processing), so the step is Algorithm 1's release under another name.

use super::{Context, STEP, mi_from_parameters, top_k};
use crate::error::Result;
use crate::learners::PrivateNbParams;
use linfa::ParamGuard;

pub(super) fn select(cx: &mut Context) -> Result<Vec<usize>> {
    // Validate before spending.
    super::scores::mutual_information(cx.counts)?;
    let params = PrivateNbParams::new(cx.epsilon).check()?;
    let mut rng = cx.rng();
    let mut release = cx.ledger.scratch();
    let fit = params.fit_counts(cx.counts, None, &mut rng, &mut release)?;
    cx.ledger.absorb(release.renamed(
        STEP,
        "laplace (Algorithm 2: MI of the Algorithm 1 noisy NB)",
    ))?;
    let prior: Vec<f64> = fit.model.log_prior.iter().map(|l| l.exp()).collect();
    let q = mi_from_parameters(&fit.model.theta, &prior);
    cx.metrics.insert(
        "thresholded_features".into(),
        fit.thresholded_features as f64,
    );
    Ok(top_k(&q, cx.t))
}
