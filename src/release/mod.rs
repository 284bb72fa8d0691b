//! The release layer's kernels: a query answered on a column with public bounds through a
//! mechanism, recorded in the trial's ledger. Specs reach them through the release and attack
//! kinds (`kinds::release`, `kinds::attack`).
//!
//! * [`query`]: the queries (count, sum, mean, quantiles, histogram, row count), clamping to
//!   public bounds and each query's sensitivity under both relations.
//! * This module: releases through the mechanisms — Laplace on any scalar query, the
//!   composed average (noisy sum / noisy count with a declared budget split), the
//!   exponential-mechanism quantile, the smooth- and global-sensitivity medians, a Laplace
//!   histogram, randomized response in the local model. Each release draws every mechanism call from its own labelled stream and
//!   records the step (and the clamping) in the ledger.
//! * [`composition`]: basic vs advanced composition as an analytic series.
//! * [`attacks`]: adversaries that consume releases and output a guess (differencing,
//!   majority vote on repeated randomized response).
//! * [`robust`]: robust statistics (issue 50): the trimmed mean and the IQR by
//!   propose-test-release, Lei's perturbed-histogram M-estimator.

pub mod attacks;
pub mod composition;
pub mod query;
pub mod robust;

use crate::error::{Error, Result};
use crate::privacy::exponential_median::ExponentialQuantile;
use crate::privacy::gaussian::Gaussian;
use crate::privacy::randomized_response::RandomizedResponse;
use crate::privacy::repeated_laplace::RepeatedLaplace;
use crate::privacy::smooth_sensitivity::SmoothSensitivityMedian;
use crate::privacy::{Laplace, Ledger, Mechanism};
use crate::rng::Streams;
pub use query::{Bounds, Clamped, Predicate, Query};

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

/// Records the clamping into `bounds` as a public step: a per-value map with public constants.
/// The note states no count: how many values moved, and of how many, are statistics of the
/// data (the trial's `clamped` metric keeps the first for the experimenter).
fn record_clamp(bounds: Bounds, ledger: &mut Ledger) {
    ledger.public(
        "clamp",
        "clamp to public bounds",
        &format!(
            "values clamped into [{}, {}]: a per-value map with public constants, spends no budget",
            bounds.lo, bounds.hi
        ),
    );
}

/// A scalar query's exact answer and the Laplace mechanism calibrated for it (the data is read
/// once; each release is one noise draw through a ledger charge).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaplaceRelease {
    pub truth: f64,
    pub mechanism: Laplace,
}

impl LaplaceRelease {
    /// The query's answer on `data` and the Laplace mechanism for its sensitivity under the
    /// ledger's relation at `epsilon`.
    pub fn new(query: Query, data: &Clamped, epsilon: f64, ledger: &Ledger) -> Result<Self> {
        let truth = query.answer(data)?;
        let relation = ledger.relation();
        let sensitivity = query.sensitivity(relation, data.bounds);
        Ok(LaplaceRelease {
            truth,
            mechanism: Laplace::new(sensitivity, epsilon, relation)?,
        })
    }

    pub fn sensitivity(&self) -> f64 {
        self.mechanism.privacy_map().sensitivity
    }

    /// The same release asked repeatedly (charged eps per release): many trials' releases
    /// of one query at once, as in the benchmark and the distribution tests.
    pub fn repeated(&self) -> RepeatedLaplace {
        let map = self.mechanism.privacy_map();
        RepeatedLaplace::new(map.sensitivity, map.epsilon, map.relation)
            .expect("calibrated from a valid mechanism")
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
    answered(
        name,
        r.truth,
        Calibrated::Laplace(r.mechanism),
        data.bounds,
        streams,
        ledger,
    )
}

/// A calibrated additive mechanism, ready to charge.
#[derive(Debug, Clone, Copy)]
enum Calibrated {
    Laplace(Laplace),
    Gaussian(Gaussian),
}

/// Records the clamp into `bounds` and releases `truth` plus one draw of `mechanism` charged
/// as `name`: the last steps of every additive release here, streamed or not.
fn answered(
    name: &str,
    truth: f64,
    mechanism: Calibrated,
    bounds: Bounds,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    record_clamp(bounds, ledger);
    let noise = match mechanism {
        Calibrated::Laplace(m) => {
            let mut charge = ledger.charge(name, "laplace", m)?;
            charge.sample(&mut streams.stream(name))
        }
        Calibrated::Gaussian(m) => {
            let mut charge = ledger.charge(name, "gaussian", m)?;
            charge.sample(&mut streams.stream(name))
        }
    };
    Ok(Release {
        value: truth + noise,
        truth,
    })
}

/// The noise of an additive release: Laplace at an epsilon (calibrated to the query's
/// sensitivity under the ledger's relation) or a calibrated Gaussian mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    Laplace { epsilon: f64 },
    Gaussian(Gaussian),
}

/// [`laplace`] or [`gaussian`] on the raw `values` clamped to `bounds` on the fly
/// ([`Query::answer_streaming`]): the same ledger steps, the same draw and the same bits,
/// without the clamped copy of the column (issue 52). `None` for a query that needs the values
/// themselves or an empty column; returns the release and the streaming pass's counts.
pub fn streaming(
    name: &str,
    query: Query,
    values: &[f64],
    bounds: Bounds,
    noise: Noise,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Option<Result<(Release, query::Streamed)>> {
    let seen = match query.answer_streaming(values, bounds)? {
        Ok(seen) => seen,
        Err(e) => return Some(Err(e)),
    };
    let mut run = || -> Result<Release> {
        let mechanism = match noise {
            Noise::Laplace { epsilon } => {
                let relation = ledger.relation();
                let sensitivity = query.sensitivity(relation, bounds);
                Calibrated::Laplace(Laplace::new(sensitivity, epsilon, relation)?)
            }
            Noise::Gaussian(g) => Calibrated::Gaussian(g),
        };
        answered(name, seen.answer, mechanism, bounds, streams, ledger)
    };
    Some(run().map(|r| (r, seen)))
}

/// Releases `query` on `data` through a calibrated Gaussian mechanism, recorded as `name`
/// (its sensitivity must be the query's under the ledger's relation: a scalar's L2 is its L1).
pub fn gaussian(
    name: &str,
    query: Query,
    data: &Clamped,
    mechanism: Gaussian,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    let truth = query.answer(data)?;
    answered(
        name,
        truth,
        Calibrated::Gaussian(mechanism),
        data.bounds,
        streams,
        ledger,
    )
}

/// How the composed average post-processes its noisy ratio (only public constants either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ratio {
    /// The noisy count floored at 1, the ratio clamped to the bounds.
    Clamped,
    /// The tutorial's M_sum / M_count as written (eq. 9): neither floor nor clamp, so a noisy
    /// count near 0 gives the heavy tails SURVEYS.md warns of. A count of exactly 0 (probability
    /// 0) releases the bounds' midpoint.
    Literal,
}

/// The composed average (tutorial Fig. 4): a noisy sum at `sum_share` eps and a noisy row
/// count at (1 - sum_share) eps, divided. Post-processing: the noisy count is floored at 1 and
/// the ratio clamped to the bounds (both use only public constants; [`Ratio::Clamped`]). This is the mean with a
/// private n: the noisy count is the private estimate of the size (the ledger's step `count`),
/// so nothing reads the data's own length. Under replace-one the row count has sensitivity 0
/// and is exact (n is public there); its share of the budget is then unspent.
pub fn composed_average(
    data: &Clamped,
    epsilon: f64,
    sum_share: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    check_composed(epsilon, sum_share)?;
    let truth = Query::DirectAverage.answer(data)?;
    let sum = Query::Sum.answer(data)?;
    let shares = (epsilon, sum_share);
    let value = composed_steps(
        sum,
        (data.len(), data.bounds),
        shares,
        Ratio::Clamped,
        streams,
        ledger,
    )?;
    Ok(Release { value, truth })
}

/// [`composed_average`] on the raw `values` clamped to `bounds` on the fly (the sum and the
/// truth, each in its own pass, no copy of the column: issue 52), bit for bit the same
/// release and ledger with `ratio` [`Ratio::Clamped`]. Returns the release and how many values
/// the clamp moved.
pub fn composed_average_streaming(
    values: &[f64],
    bounds: Bounds,
    (epsilon, sum_share): (f64, f64),
    ratio: Ratio,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<(Release, usize)> {
    check_composed(epsilon, sum_share)?;
    let (sum, clamped, truth) = match Query::Sum.answer_streaming(values, bounds) {
        Some(seen) => {
            let seen = seen?;
            let truth = query::clamped_mean(values, bounds);
            (seen.answer, seen.clamped, truth)
        }
        // Only an empty column does not stream: its sum is 0, its average the midpoint.
        None => (0.0, 0, bounds.midpoint()),
    };
    let shares = (epsilon, sum_share);
    let value = composed_steps(sum, (values.len(), bounds), shares, ratio, streams, ledger)?;
    Ok((Release { value, truth }, clamped))
}

/// Refuses a share outside (0, 1) and a bad epsilon. Not an empty column: under add/remove it
/// neighbours every one-row column, and the noisy count's floor of 1 keeps the ratio defined.
fn check_composed(epsilon: f64, sum_share: f64) -> Result<()> {
    if !(sum_share > 0.0 && sum_share < 1.0) {
        return Err(Error::param(
            "sum_share",
            format!("the sum's share of the budget must be in (0, 1), got {sum_share}"),
        ));
    }
    crate::privacy::check_epsilon(epsilon)
}

/// The composed average's steps from the clamped column's exact `sum`, its length `len` (the
/// count's exact answer) and `bounds`: the noisy sum, the noisy (or exact) row count, their
/// ratio.
fn composed_steps(
    sum: f64,
    (len, bounds): (usize, Bounds),
    (epsilon, sum_share): (f64, f64),
    ratio: Ratio,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<f64> {
    let relation = ledger.relation();
    let noise = Laplace::new(
        Query::Sum.sensitivity(relation, bounds),
        epsilon * sum_share,
        relation,
    )?;
    let sum = answered(
        "sum",
        sum,
        Calibrated::Laplace(noise),
        bounds,
        streams,
        ledger,
    )?;
    let count_eps = epsilon * (1.0 - sum_share);
    let rows = Query::RowCount.sensitivity(relation, bounds);
    let count = if rows > 0.0 {
        let noise = Laplace::new(rows, count_eps, relation)?;
        answered(
            "count",
            len as f64,
            Calibrated::Laplace(noise),
            bounds,
            streams,
            ledger,
        )?
        .value
    } else {
        ledger.public(
            "count",
            "none (row count)",
            "n is fixed under replace-one: sensitivity 0, released exactly",
        );
        len as f64
    };
    Ok(match ratio {
        Ratio::Clamped => (sum.value / count.max(1.0)).clamp(bounds.lo, bounds.hi),
        Ratio::Literal if count == 0.0 => bounds.midpoint(),
        Ratio::Literal => sum.value / count,
    })
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
    let m = ExponentialQuantile::new(
        p,
        epsilon,
        data.bounds.lo,
        data.bounds.hi,
        ledger.relation(),
    )?;
    let sorted = data.sorted();
    let truth = query::quantile_or_midpoint(&sorted, p, data.bounds);
    record_clamp(data.bounds, ledger);
    let value = ledger
        .charge(name, "exponential (median/quantile)", m)?
        .sample_sorted(&sorted, &mut streams.stream(name), &mut Vec::new());
    Ok(Release { value, truth })
}

/// [`exponential_quantile`] on the raw `values`, clamped into `sorted` and sorted there in
/// place, with `work` for the weights: both buffers are the caller's to reuse, so a trial
/// copies the column once and allocates nothing once they have grown (issue 52). Bit for bit
/// the same release (the same sorted values, weights and draws). Returns the release and how
/// many values the clamp moved.
#[allow(clippy::too_many_arguments)]
pub fn exponential_quantile_in(
    name: &str,
    p: f64,
    values: &[f64],
    bounds: Bounds,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
    [sorted, work]: [&mut Vec<f64>; 2],
) -> Result<(Release, usize)> {
    sorted.clear();
    let clamped = query::clamp_into(values, bounds, sorted)?;
    let m = ExponentialQuantile::new(p, epsilon, bounds.lo, bounds.hi, ledger.relation())?;
    sorted.sort_unstable_by(f64::total_cmp);
    let truth = query::quantile_or_midpoint(sorted, p, bounds);
    record_clamp(bounds, ledger);
    let value = ledger
        .charge(name, "exponential (median/quantile)", m)?
        .sample_sorted(sorted, &mut streams.stream(name), work);
    Ok((Release { value, truth }, clamped))
}

/// The smooth-sensitivity median (Cauchy noise, replace-one), recorded as `median` (the
/// step's note states the data's smooth sensitivity S*).
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
    record_clamp(data.bounds, ledger);
    let value = ledger
        .charge("median", "smooth sensitivity (Cauchy)", m)?
        .release(&sorted, &mut streams.stream("median"))?;
    // Clamped to the public bounds (post-processing): a median lies inside them.
    let value = value.clamp(data.bounds.lo, data.bounds.hi);
    Ok(Release { value, truth })
}

/// The global-sensitivity median, x_(m) + Lap((hi - lo) / eps) clamped to [lo, hi], recorded as
/// `median` (sensitivity hi - lo under both relations: one point can move the median across the
/// range; the clamp is post-processing, and a median lies inside the bounds).
pub fn global_median(
    data: &Clamped,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    // On no data (add/remove's neighbour of every one-row column) the midpoint.
    let truth = Query::Quantile(0.5).answer(data)?;
    let noise = Laplace::new(data.bounds.width(), epsilon, ledger.relation())?;
    record_clamp(data.bounds, ledger);
    let value = truth
        + ledger
            .charge("median", "laplace (global sensitivity)", noise)?
            .sample(&mut streams.stream("median"));
    let value = value.clamp(data.bounds.lo, data.bounds.hi);
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
    let relation = ledger.relation();
    let noise = Laplace::new(query::histogram_sensitivity(relation), epsilon, relation)?;
    record_clamp(data.bounds, ledger);
    let mut rng = streams.stream("histogram");
    let mut charge = ledger.charge("histogram", "laplace", noise)?;
    let noisy = exact.iter().map(|c| c + charge.sample(&mut rng)).collect();
    Ok((noisy, exact))
}

/// Randomized response in the local model (Warner 1965): each row answers "is my bit 1?" once
/// through `rr` (one survey: eps by parallel composition, replace-one), and the curator
/// debiases the share of "yes" answers, `E[yes] = (1 - p) + (2p - 1) pi`. Returns the estimate
/// of the share pi beside the true share; recorded as `name`.
/// The bits come as an iterator, read twice (the truth, then the answers), so a caller can
/// derive them from its column row by row without a vector of n bits (issue 52).
pub fn randomized_response(
    name: &str,
    bits: impl ExactSizeIterator<Item = bool> + Clone,
    rr: RandomizedResponse,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    if bits.len() == 0 {
        return Err(Error::param(
            "data",
            "randomized response needs respondents",
        ));
    }
    let n = bits.len() as f64;
    let truth = bits.clone().filter(|&b| b).count() as f64 / n;
    let yes = ledger
        .charge(name, "randomized response (one answer per row)", rr)?
        .survey(bits, &mut streams.stream(name));
    Ok(Release {
        value: rr.debias(yes as f64 / n),
        truth,
    })
}

/// The standard deviation of [`randomized_response`]'s estimate around the true share of n
/// respondents: each answer is a Bernoulli with variance p (1 - p) whatever the bit, so
/// sd = sqrt(p (1 - p) / n) / (2p - 1) = 1 / (2 sinh(eps / 2) sqrt(n)).
pub fn randomized_response_sd(rr: RandomizedResponse, n: usize) -> f64 {
    let p = rr.p_truth();
    (p * (1.0 - p) / n as f64).sqrt() / (2.0 * p - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clamp is a public step: its ledger entry is the same for columns of other lengths
    /// and other numbers of clamped values (both statistics of the data), as the composed
    /// average, which keeps the length private, needs.
    #[test]
    fn the_public_clamp_step_states_no_count() {
        let bounds = Bounds { lo: 0.0, hi: 1.0 };
        let ledger_of = |values: &[f64]| {
            let data = Clamped::new(values, bounds).unwrap();
            let mut ledger = Ledger::default();
            composed_average(&data, 1.0, 0.5, &mut Streams::new(1), &mut ledger).unwrap();
            ledger
        };
        let (short, long) = (ledger_of(&[0.5]), ledger_of(&[0.5, 2.0, -1.0]));
        let clamp = |l: &Ledger| -> Vec<_> {
            l.entries
                .iter()
                .filter(|e| e.name == "clamp")
                .cloned()
                .collect()
        };
        assert_eq!(clamp(&short).len(), 2, "{short:?}");
        assert_eq!(clamp(&short), clamp(&long));
        assert!(
            clamp(&short)
                .iter()
                .all(|e| e.private && e.epsilon == Some(0.0))
        );
    }
}
