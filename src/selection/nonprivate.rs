//! Top T by the exact score: the non-private reference ranking.
//!
//! * Privacy: none. The exact scores choose the features; the ledger records the step as
//!   non-private, so no trial using it is reported private.

use super::{Context, STEP, Score, top_k};
use crate::error::Result;

pub(super) fn select(score: Score, cx: &mut Context) -> Result<Vec<usize>> {
    let q = score.compute(cx.counts)?;
    cx.ledger.non_private(
        STEP,
        &format!("none (exact {} ranking)", score.name()),
        "non-private feature ranking: the exact scores choose the features",
    );
    Ok(top_k(&q, cx.t))
}
