//! The release layer's kernels: a query answered on a column with public bounds through a
//! mechanism, recorded in the trial's ledger (issue 12, first part; not yet wired into specs).
//!
//! * [`query`]: the queries (count, sum, mean, quantiles, histogram, row count), clamping to
//!   public bounds and each query's sensitivity under both relations.
//! * This module: releases through the mechanisms — Laplace on any scalar query, the
//!   composed average (noisy sum / noisy count with a declared budget split), the
//!   exponential-mechanism quantile, the smooth- and global-sensitivity medians, a Laplace
//!   histogram. Each release draws every mechanism call from its own labelled stream and
//!   records the step (and the clamping) in the ledger.
//! * [`composition`]: basic vs advanced composition as an analytic series.
//! * [`attacks`]: adversaries that consume releases and output a guess (differencing,
//!   majority vote on repeated randomized response).

pub mod attacks;
pub mod composition;
pub mod query;

use crate::error::{Error, Result};
use crate::privacy::exponential_median::ExponentialQuantile;
use crate::privacy::smooth_sensitivity::{SmoothSensitivityMedian, global_sensitivity_median};
use crate::privacy::{Laplace, Ledger};
use crate::rng::Streams;
pub use query::{Bounds, Clamped, Predicate, Query};
use rand::Rng;

/// One released value beside the exact answer it privatises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Release {
    pub value: f64,
    pub truth: f64,
}

impl Release {
    pub fn abs_error(&self) -> f64 {
        (self.value - self.truth).abs()
    }
}

/// Records the clamping of `data` as a public step (it uses only the public bounds per row).
fn record_clamp(data: &Clamped, ledger: &mut Ledger) {
    ledger.public(
        "clamp",
        "clamp to public bounds",
        &format!(
            "{} of {} values moved into [{}, {}]",
            data.clamped,
            data.len(),
            data.bounds.lo,
            data.bounds.hi
        ),
    );
}

/// A scalar query's exact answer with its Laplace noise, ready to release many times (the
/// data is read once; each release is one noise draw, allocation-free).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaplaceRelease {
    pub truth: f64,
    pub sensitivity: f64,
    pub noise: Laplace,
}

impl LaplaceRelease {
    /// The query's answer on `data` and Laplace noise for its sensitivity under the ledger's
    /// relation at `epsilon`.
    pub fn new(query: Query, data: &Clamped, epsilon: f64, ledger: &Ledger) -> Result<Self> {
        let truth = query.answer(data)?;
        let sensitivity = query.sensitivity(ledger.relation(), data.bounds, data.len());
        Ok(LaplaceRelease {
            truth,
            sensitivity,
            noise: Laplace::new(sensitivity, epsilon)?,
        })
    }

    /// One release.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.truth + self.noise.sample(rng)
    }

    /// Independent releases into `out` (the benchmark's hot loop; a trial releases once).
    pub fn fill<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [f64]) {
        for y in out {
            *y = self.truth + self.noise.sample(rng);
        }
    }
}

/// Releases `query` on `data` with the Laplace mechanism at `epsilon`, recorded as `name`.
pub fn laplace(
    name: &str,
    query: Query,
    data: &Clamped,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    let r = LaplaceRelease::new(query, data, epsilon, ledger)?;
    record_clamp(data, ledger);
    let value = r.sample(&mut streams.stream(name));
    ledger.spend(name, "laplace", epsilon, r.sensitivity);
    Ok(Release {
        value,
        truth: r.truth,
    })
}

/// The composed average (tutorial Fig. 4): a noisy sum at `sum_share` eps and a noisy row
/// count at (1 - sum_share) eps, divided. Post-processing: the noisy count is floored at 1 and
/// the ratio clamped to the bounds (both use only public constants). Under replace-one the row
/// count has sensitivity 0 and is exact; its share of the budget is then unspent.
pub fn composed_average(
    data: &Clamped,
    epsilon: f64,
    sum_share: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    if !(sum_share > 0.0 && sum_share < 1.0) {
        return Err(Error::param(
            "sum_share",
            format!("the sum's share of the budget must be in (0, 1), got {sum_share}"),
        ));
    }
    crate::privacy::check_epsilon(epsilon)?;
    let truth = Query::Mean.answer(data)?;
    let sum = laplace(
        "sum",
        Query::Sum,
        data,
        epsilon * sum_share,
        streams,
        ledger,
    )?;
    let count_eps = epsilon * (1.0 - sum_share);
    let count = if Query::RowCount.sensitivity(ledger.relation(), data.bounds, data.len()) > 0.0 {
        laplace("count", Query::RowCount, data, count_eps, streams, ledger)?.value
    } else {
        ledger.public(
            "count",
            "none (row count)",
            "n is fixed under replace-one: sensitivity 0, released exactly",
        );
        data.len() as f64
    };
    let value = (sum.value / count.max(1.0)).clamp(data.bounds.lo, data.bounds.hi);
    Ok(Release { value, truth })
}

/// The p-quantile by the exponential mechanism ([`ExponentialQuantile`]), recorded as `name`.
pub fn exponential_quantile(
    name: &str,
    p: f64,
    data: &Clamped,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    let m = ExponentialQuantile::new(p, epsilon, data.bounds.lo, data.bounds.hi)?;
    let sorted = data.sorted();
    let truth = if sorted.is_empty() {
        f64::NAN
    } else {
        query::quantile_sorted(&sorted, p)
    };
    record_clamp(data, ledger);
    let value = m.sample_sorted(&sorted, &mut streams.stream(name), &mut Vec::new());
    ledger.spend(
        name,
        "exponential (median/quantile)",
        epsilon,
        ExponentialQuantile::UTILITY_SENSITIVITY,
    );
    Ok(Release { value, truth })
}

/// The smooth-sensitivity median (Cauchy noise, replace-one), recorded as `median`; the
/// ledger's sensitivity is the data's smooth sensitivity S*.
pub fn smooth_median(
    data: &Clamped,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    let m =
        SmoothSensitivityMedian::new(epsilon, data.bounds.lo, data.bounds.hi, ledger.relation())?;
    let sorted = data.sorted();
    let truth = Query::Quantile(0.5).answer(data)?;
    record_clamp(data, ledger);
    let value = m.release(&sorted, &mut streams.stream("median"))?;
    ledger.spend(
        "median",
        "smooth sensitivity (Cauchy)",
        epsilon,
        m.smooth_sensitivity(&sorted),
    );
    Ok(Release { value, truth })
}

/// The global-sensitivity median, x_(m) + Lap((hi - lo) / eps), recorded as `median`.
pub fn global_median(
    data: &Clamped,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    let sorted = data.sorted();
    let truth = Query::Quantile(0.5).answer(data)?;
    record_clamp(data, ledger);
    let (lo, hi) = (data.bounds.lo, data.bounds.hi);
    let value = global_sensitivity_median(&sorted, epsilon, lo, hi, &mut streams.stream("median"))?;
    ledger.spend("median", "laplace (global sensitivity)", epsilon, hi - lo);
    Ok(Release { value, truth })
}

/// A histogram over public bin edges with Laplace noise on every count (L1 sensitivity 1, or
/// 2 under replace-one). Returns (noisy, exact) counts.
pub fn histogram(
    data: &Clamped,
    edges: &[f64],
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let exact = query::histogram(data, edges)?;
    let sensitivity = query::histogram_sensitivity(ledger.relation());
    let noise = Laplace::new(sensitivity, epsilon)?;
    record_clamp(data, ledger);
    let mut rng = streams.stream("histogram");
    let noisy = exact.iter().map(|c| c + noise.sample(&mut rng)).collect();
    ledger.spend("histogram", "laplace", epsilon, sensitivity);
    Ok((noisy, exact))
}
