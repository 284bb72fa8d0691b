//! Release kinds: a query on one scalar column with public bounds, answered through a
//! mechanism (`release = "..."` in a pipeline). Each trial records the metrics `release` (the
//! released value), `truth` (the exact answer on the clamped column), `abs_error` and
//! `clamped` (values moved into the bounds; the ledger records the clamp, not the count).
//! Mechanisms, sensitivities and proofs: `privacy/` and `release::query` (docs/privacy.md).

use super::{
    Axis, Described, Refusal, ReleaseInput, ReleaseKind, ReleaseOutput, check_open_unit, kind,
    refuse,
};
use crate::error::{Error, Result};
use crate::learners::TrialLog;
use crate::privacy::gaussian::{GaussCalibration, Gaussian};
use crate::privacy::{Ledger, PNormNoise, Relation};
use crate::release::query::{Bounds, Clamped, Predicate, Query};
use crate::release::{self, Noise, Release, composition};
use serde::Deserialize;
use statrs::distribution::{ContinuousCDF, Normal};

/// The query of an additive-noise release, as a spec names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryName {
    /// Rows satisfying `at_least` <= x < `below` (either may be absent).
    Count,
    Sum,
    /// The mean: over the run's public n (sensitivity (hi - lo) / n), or with `sum_share` a
    /// noisy sum over a noisy count (n private).
    Mean,
    /// The tutorial's direct average Lap(C / eps), C = hi - lo (n kept private).
    DirectAverage,
    Median,
    /// The `p`-quantile.
    Quantile,
}

/// `bounds` as [lo, hi], checked.
pub(super) fn bounds_of(b: [f64; 2]) -> std::result::Result<Bounds, Refusal> {
    Bounds::new(b[0], b[1]).map_err(|_| {
        refuse(
            "bounds",
            format!("need finite lo < hi, got [{}, {}]", b[0], b[1]),
        )
    })
}

fn check_p(p: Option<f64>) -> std::result::Result<(), Refusal> {
    p.map_or(Ok(()), |p| check_open_unit("p", p))
}

pub(super) fn need_eps(name: &str, eps: Option<f64>) -> Result<f64> {
    eps.filter(|e| e.is_finite() && *e > 0.0)
        .ok_or_else(|| Error::param("epsilon", format!("release `{name}` needs an epsilon > 0")))
}

thread_local! {
    /// Each worker thread's two column buffers, reused across trials (issue 52): the clamped
    /// column (sorted in place by the releases that read order statistics) and a spare (the
    /// exponential median's interval weights, the unclamped copy a quantile selects in). A
    /// reusable allocation, not cross-trial state: each is cleared before it is written, so
    /// only their capacity outlives a trial and no result depends on what an earlier trial
    /// left there.
    static BUFFERS: std::cell::RefCell<[Vec<f64>; 2]> =
        const { std::cell::RefCell::new([Vec::new(), Vec::new()]) };
}

/// Runs `f` on this thread's buffers, taken out for the call and put back after (a nested
/// call would find them empty and allocate its own: never a borrow panic).
fn with_buffers<T>(f: impl FnOnce(&mut [Vec<f64>; 2]) -> T) -> T {
    let mut buffers = BUFFERS.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let out = f(&mut buffers);
    BUFFERS.with(|b| *b.borrow_mut() = buffers);
    out
}

/// Runs `f` on the column clamped to `bounds` in this thread's reused buffer (ascending when
/// `sort`), with the spare buffer; the clamping goes in the metrics. Nothing proportional to n
/// is allocated once the buffers have grown (issue 52).
pub(super) fn with_clamped<T>(
    input: &ReleaseInput,
    bounds: [f64; 2],
    sort: bool,
    log: &mut TrialLog,
    f: impl FnOnce(&Clamped, &mut Vec<f64>, &mut TrialLog) -> Result<T>,
) -> Result<T> {
    with_buffers(|[column, spare]| {
        let bounds = Bounds::new(bounds[0], bounds[1])?;
        let mut data = Clamped::new_in(input.values, bounds, column)?;
        log.metrics.insert("clamped".into(), data.clamped as f64);
        if sort {
            data.sort();
        }
        let out = f(&data, spare, log);
        *column = data.values;
        out
    })
}

/// The query's answer on the raw `values` (the truth a user sees when the public `bounds`
/// clip the data), `None` when undefined. Count, sum and mean read the column in place
/// ([`Query::answer_streaming`]: the same bits as the streaming cell's); the direct average is
/// the raw mean; a quantile selects in a copy in `spare` (the sorted copy's value: issue 52).
fn unclamped_answer(
    query: Query,
    values: &[f64],
    bounds: Bounds,
    spare: &mut Vec<f64>,
) -> Option<f64> {
    if let Some(seen) = query.answer_streaming(values, bounds) {
        return seen.ok().map(|s| s.unclamped);
    }
    match query {
        _ if values.is_empty() => {
            let none = Clamped {
                values: Vec::new(),
                bounds,
                clamped: 0,
            };
            query.answer(&none).ok()
        }
        Query::Quantile(p) => {
            spare.clear();
            spare.extend_from_slice(values);
            Some(release::query::quantile_select(spare, p))
        }
        Query::DirectAverage => Some(release::query::mean(values)),
        _ => unreachable!("the other queries stream on a non-empty column"),
    }
}

/// The composed average (a noisy sum over a noisy count, `release::composed_average`) streamed
/// over the column, no copy of it (issue 52): records `clamped`, the release's metrics and
/// `abs_error_unclamped` (against the raw column's mean).
fn composed_mean(
    input: &ReleaseInput,
    bounds: [f64; 2],
    shares: (f64, f64),
    ratio: release::Ratio,
    log: &mut TrialLog,
) -> Result<Release> {
    let bounds = Bounds::new(bounds[0], bounds[1])?;
    let (streams, ledger) = (&mut log.streams, &mut log.ledger);
    let (r, clamped) =
        release::composed_average_streaming(input.values, bounds, shares, ratio, streams, ledger)?;
    log.metrics.insert("clamped".into(), clamped as f64);
    record(r, log);
    let mean = Query::Mean {
        n: input.values.len(),
    };
    if let Some(truth) = unclamped_answer(mean, input.values, bounds, &mut Vec::new()) {
        log.metrics
            .insert("abs_error_unclamped".into(), (r.value - truth).abs());
    }
    Ok(r)
}

/// Records `release`, `truth`, `abs_error` and the signed `error`.
pub(super) fn record(r: Release, log: &mut TrialLog) {
    log.metrics.insert("error".into(), r.value - r.truth);
    log.metrics.insert("release".into(), r.value);
    log.metrics.insert("truth".into(), r.truth);
    log.metrics.insert("abs_error".into(), r.abs_error());
}

/// The predicate `at_least` <= x < `below` (an absent end is unbounded).
pub(super) fn predicate(at_least: Option<f64>, below: Option<f64>) -> Predicate {
    match (at_least, below) {
        (Some(a), Some(b)) => Predicate::InRange(a, b),
        (Some(a), None) => Predicate::AtLeast(a),
        (None, Some(b)) => Predicate::Below(b),
        (None, None) => Predicate::AtLeast(f64::NEG_INFINITY),
    }
}

/// Refuses a predicate range with `below` <= `at_least`.
pub(super) fn check_range(
    at_least: Option<f64>,
    below: Option<f64>,
) -> std::result::Result<(), Refusal> {
    match (at_least, below) {
        (Some(a), Some(b)) if a >= b => Err(refuse(
            "below",
            format!("must exceed `at_least` ({a}), got {b}"),
        )),
        _ => Ok(()),
    }
}

/// An additive-noise release of a scalar query: `laplace` (`GAUSSIAN = false`) or `gaussian`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Additive<const GAUSSIAN: bool> {
    query: QueryName,
    /// Public bounds [lo, hi] every value is clamped to.
    bounds: [f64; 2],
    /// Count: lower end of the predicate (inclusive).
    at_least: Option<f64>,
    /// Count: upper end of the predicate (exclusive).
    below: Option<f64>,
    /// Quantile: which one.
    p: Option<f64>,
    /// Laplace mean only: estimate n privately instead of reading a public n, as a noisy sum
    /// (this share of eps) over a noisy row count (the rest): the composed average.
    sum_share: Option<f64>,
    /// Also record `within` (1 when |release - truth| <= tolerance |truth|) and its analytic
    /// probability `within_analytic`.
    tolerance: Option<f64>,
    /// As `tolerance`, absolute: |release - truth| <= within.
    within: Option<f64>,
    /// Gaussian: delta.
    delta: Option<f64>,
    /// Gaussian: `analytic` (Balle & Wang 2018, the default), `classic` (eps < 1) or
    /// `classic_below_1` (classic below eps = 1, analytic from there).
    #[serde(default)]
    calibration: GaussCalibration,
}

/// The fields both additive releases read.
macro_rules! additive_fields {
    ($($extra:literal),*) => {
        &["query", "bounds", "at_least", "below", "p", "tolerance", "within" $(, $extra)*]
    };
}

impl Described for Additive<false> {
    const NAME: &'static str = "laplace";
    const ABOUT: &'static str = "count / sum / mean / direct average / quantile of a bounded column + Lap(Delta/eps); Delta per relation (release::query), the mean's (hi - lo)/n over the run's public n, or with sum_share a noisy sum over a noisy count; pure eps-DP";
    const FIELDS: &'static [&'static str] = additive_fields!("sum_share");
}

impl Described for Additive<true> {
    const NAME: &'static str = "gaussian";
    const ABOUT: &'static str = "the same queries + N(0, sigma^2), sigma from (Delta, eps, delta), analytic (Balle & Wang 2018; default), classic (eps < 1) or classic_below_1; the mean over the run's public n; (eps, delta)-DP";
    const FIELDS: &'static [&'static str] = additive_fields!("delta", "calibration");
}

impl<const GAUSSIAN: bool> Additive<GAUSSIAN> {
    /// The query; the mean reads the run's public n from `ledger` (recorded there).
    fn query(&self, ledger: &mut Ledger) -> Result<Query> {
        Ok(match self.query {
            QueryName::Count => Query::Count(predicate(self.at_least, self.below)),
            QueryName::Sum => Query::Sum,
            QueryName::Mean => Query::Mean {
                n: ledger.public_size("the mean's sensitivity (hi - lo)/N")?,
            },
            QueryName::DirectAverage => Query::DirectAverage,
            QueryName::Median => Query::Quantile(0.5),
            QueryName::Quantile => Query::Quantile(self.p.unwrap_or(0.5)),
        })
    }

    /// The Laplace mean with n private: a noisy sum over a noisy count
    /// ([`composed_mean`]); `tolerance` / `within` recorded without an analytic probability.
    fn noisy_count_mean(
        &self,
        input: &ReleaseInput,
        eps: f64,
        share: f64,
        log: &mut TrialLog,
    ) -> Result<ReleaseOutput> {
        let r = composed_mean(
            input,
            self.bounds,
            (eps, share),
            release::Ratio::Clamped,
            log,
        )?;
        if let Some(t) = self
            .tolerance
            .map(|tol| tol * r.truth.abs())
            .or(self.within)
        {
            log.metrics
                .insert("within".into(), f64::from(u8::from(r.abs_error() <= t)));
        }
        Ok(ReleaseOutput::default())
    }

    /// P(|noise| <= t) of the mechanism.
    fn within_probability(&self, t: f64, laplace_scale: f64, sigma: f64) -> f64 {
        if GAUSSIAN {
            let z = Normal::new(0.0, 1.0).expect("standard normal");
            2.0 * z.cdf(t / sigma) - 1.0
        } else {
            1.0 - (-t / laplace_scale).exp()
        }
    }
}

impl<const GAUSSIAN: bool> ReleaseKind for Additive<GAUSSIAN> {
    fn estimates_location(&self) -> bool {
        match self.query {
            QueryName::Mean | QueryName::DirectAverage | QueryName::Median => true,
            QueryName::Quantile => self.p == Some(0.5),
            QueryName::Count | QueryName::Sum => false,
        }
    }

    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        bounds_of(self.bounds)?;
        check_p(self.p)?;
        if self.p.is_some() != (self.query == QueryName::Quantile) {
            return Err(refuse("p", "give `p` exactly when query = \"quantile\""));
        }
        if self.query != QueryName::Count {
            for (field, v) in [("at_least", self.at_least), ("below", self.below)] {
                if v.is_some() {
                    return Err(refuse(field, "applies only to query = \"count\""));
                }
            }
        }
        check_range(self.at_least, self.below)?;
        for (field, v) in [("tolerance", self.tolerance), ("within", self.within)] {
            if let Some(t) = v
                && !(t.is_finite() && t > 0.0)
            {
                return Err(refuse(field, format!("must be > 0, got {t}")));
            }
        }
        if self.tolerance.is_some() && self.within.is_some() {
            return Err(refuse(
                "within",
                "give `tolerance` (relative) or `within` (absolute), not both",
            ));
        }
        if let Some(s) = self.sum_share {
            if GAUSSIAN {
                return Err(refuse(
                    "sum_share",
                    "the Gaussian mean reads a public n; a noisy count is the Laplace mean's",
                ));
            }
            if self.query != QueryName::Mean {
                return Err(refuse("sum_share", "applies only to query = \"mean\""));
            }
            if !(s > 0.0 && s < 1.0) {
                return Err(refuse(
                    "sum_share",
                    format!("the sum's share of the budget must be in (0, 1), got {s}"),
                ));
            }
        }
        if GAUSSIAN {
            match self.delta {
                Some(d) => check_open_unit("delta", d)?,
                None => return Err(refuse("delta", "the Gaussian mechanism needs a delta")),
            }
        }
        Ok(())
    }

    /// The mean reads the public n unless it is a noisy sum over a noisy count (`sum_share`).
    fn check_run(&self, ledger: &mut Ledger) -> Result<()> {
        if self.sum_share.is_none() {
            self.query(ledger)?;
        }
        Ok(())
    }

    /// Count, sum, mean ([`Self::run_streaming`]) and the composed mean stream the column; the
    /// other queries clamp it into this thread's reused buffer (sorted for a quantile).
    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let name = if GAUSSIAN { "gaussian" } else { "laplace" };
        let eps = need_eps(name, input.epsilon)?;
        if let Some(out) = self.run_streaming(input, eps, log)? {
            return Ok(out);
        }
        if let Some(share) = self.sum_share {
            return self.noisy_count_mean(input, eps, share, log);
        }
        let sort = matches!(self.query, QueryName::Median | QueryName::Quantile);
        with_clamped(input, self.bounds, sort, log, |data, spare, log| {
            self.run_clamped(input, data, eps, spare, log)
        })
    }
}

impl<const GAUSSIAN: bool> Additive<GAUSSIAN> {
    /// The Gaussian mechanism for `sensitivity` at (eps, delta) under `relation`.
    fn gaussian(&self, sensitivity: f64, eps: f64, relation: Relation) -> Result<Gaussian> {
        let delta = self.delta.unwrap_or(f64::NAN);
        self.calibration
            .gaussian(sensitivity, (eps, delta), relation)
    }

    /// The release of `query` on the clamped `data` (Laplace or Gaussian) and the noise's
    /// (Laplace scale, sigma), the other NaN.
    fn release(
        &self,
        query: Query,
        data: &Clamped,
        eps: f64,
        log: &mut TrialLog,
    ) -> Result<(Release, (f64, f64))> {
        let relation = log.ledger.relation();
        let sensitivity = query.sensitivity(relation, data.bounds);
        let (streams, ledger) = (&mut log.streams, &mut log.ledger);
        Ok(if GAUSSIAN {
            let g = self.gaussian(sensitivity, eps, relation)?;
            let r = release::gaussian("release", query, data, g, streams, ledger)?;
            (r, (f64::NAN, g.sigma()))
        } else {
            let r = release::laplace("release", query, data, eps, streams, ledger)?;
            (r, (sensitivity / eps, f64::NAN))
        })
    }

    /// A quantile, the direct average or an empty column, on the clamped `data`.
    fn run_clamped(
        &self,
        input: &ReleaseInput,
        data: &Clamped,
        eps: f64,
        spare: &mut Vec<f64>,
        log: &mut TrialLog,
    ) -> Result<ReleaseOutput> {
        let query = self.query(&mut log.ledger)?;
        let (r, noise) = self.release(query, data, eps, log)?;
        let unclamped = unclamped_answer(query, input.values, data.bounds, spare);
        self.record_all(r, unclamped, noise, log);
        Ok(ReleaseOutput::default())
    }

    /// Records `release`, `truth`, the errors (`abs_error_unclamped` when `unclamped` is
    /// known), the Gaussian's `sigma` and expected error, and `within`.
    fn record_all(
        &self,
        r: Release,
        unclamped: Option<f64>,
        (scale, sigma): (f64, f64),
        log: &mut TrialLog,
    ) {
        record(r, log);
        if let Some(u) = unclamped {
            log.metrics
                .insert("abs_error_unclamped".into(), (r.value - u).abs());
        }
        if GAUSSIAN {
            // E|N(0, sigma^2)| = sigma sqrt(2 / pi), beside the observed abs_error.
            log.metrics.insert("sigma".into(), sigma);
            log.metrics.insert(
                "abs_error_analytic".into(),
                sigma * (2.0 / std::f64::consts::PI).sqrt(),
            );
        }
        self.record_within(r, scale, sigma, log);
    }

    /// `within` and `within_analytic` when a tolerance is given.
    fn record_within(&self, r: Release, scale: f64, sigma: f64, log: &mut TrialLog) {
        let t = self
            .tolerance
            .map(|tol| tol * r.truth.abs())
            .or(self.within);
        if let Some(t) = t {
            log.metrics
                .insert("within".into(), f64::from(u8::from(r.abs_error() <= t)));
            log.metrics.insert(
                "within_analytic".into(),
                self.within_probability(t, scale, sigma),
            );
        }
    }

    /// The count, sum or mean (Laplace or Gaussian) in one pass over the raw column, with no
    /// copy of it (issue 52; [`release::streaming`]): the
    /// same metrics, ledger and bits as the clamped path. `None` for the other queries, the
    /// composed mean and an empty column, which take the clamped path.
    fn run_streaming(
        &self,
        input: &ReleaseInput,
        eps: f64,
        log: &mut TrialLog,
    ) -> Result<Option<ReleaseOutput>> {
        let streamable = matches!(
            self.query,
            QueryName::Count | QueryName::Sum | QueryName::Mean
        );
        if self.sum_share.is_some() || !streamable || input.values.is_empty() {
            return Ok(None);
        }
        let bounds = Bounds::new(self.bounds[0], self.bounds[1])?;
        let query = self.query(&mut log.ledger)?;
        let relation = log.ledger.relation();
        let sensitivity = query.sensitivity(relation, bounds);
        let (noise, scales) = if GAUSSIAN {
            let g = self.gaussian(sensitivity, eps, relation)?;
            (Noise::Gaussian(g), (f64::NAN, g.sigma()))
        } else {
            (
                Noise::Laplace { epsilon: eps },
                (sensitivity / eps, f64::NAN),
            )
        };
        let (streams, ledger) = (&mut log.streams, &mut log.ledger);
        let done = release::streaming(
            "release",
            query,
            input.values,
            bounds,
            noise,
            streams,
            ledger,
        );
        let Some(done) = done else {
            unreachable!("count, sum and mean on a non-empty column stream");
        };
        let (r, seen) = done?;
        log.metrics.insert("clamped".into(), seen.clamped as f64);
        self.record_all(r, Some(seen.unclamped), scales, log);
        Ok(Some(ReleaseOutput::default()))
    }
}

/// A kind whose fields are the public bounds and those given: the medians and the composed
/// average share it.
macro_rules! bounded_release {
    ($ty:ident { $($field:ident: $t:ty),* }, $name:literal, $about:literal) => {
        kind! {
            $ty = $name {
                /// Public bounds [lo, hi] every value is clamped to.
                bounds: [f64; 2],
                $($field: $t,)*
            }
            about: $about,
        }
    };
}

bounded_release!(
    ExponentialMedian { p: Option<f64> },
    "exponential_median",
    "the p-quantile (default the median) by the exponential mechanism, quality -|k - p n| (sensitivity 1, i.e. |1/2 - F_n(y)| with 1/n), exact sampling over the intervals between sorted points; pure eps-DP"
);

bounded_release!(
    SmoothMedian {},
    "smooth_median",
    "the median + (S*/alpha) Cauchy noise, S* the eps/6-smooth sensitivity (Nissim, Raskhodnikova & Smith 2007), clamped to the bounds; pure eps-DP under replace-one"
);

bounded_release!(
    GlobalMedian {},
    "global_median",
    "the median + Lap((hi - lo)/eps), clamped to the bounds: global sensitivity hi - lo under both relations; pure eps-DP"
);

kind! {
    ComposedAverage = "composed_average" {
        /// Public bounds [lo, hi] every value is clamped to.
        bounds: [f64; 2],
        /// The sum's share of epsilon; the row count gets the rest.
        sum_share: f64,
        /// Floor the noisy count at 1 and clamp the ratio to the bounds (default true); false
        /// releases the tutorial's M_sum / M_count as written (`release::Ratio::Literal`).
        ratio_clamp: Option<bool>,
    }
    about: "noisy sum (sum_share eps) / noisy row count (the rest), by default floored at 1 and clamped to the bounds (ratio_clamp = false: the tutorial's ratio as written); sequential composition, pure eps-DP",
}

impl ReleaseKind for ExponentialMedian {
    fn estimates_location(&self) -> bool {
        self.p.unwrap_or(0.5) == 0.5
    }

    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        bounds_of(self.bounds)?;
        check_p(self.p)
    }

    /// The column is clamped and sorted in this thread's reused buffers (issue 52).
    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let bounds = Bounds::new(self.bounds[0], self.bounds[1])?;
        let p = self.p.unwrap_or(0.5);
        let (r, clamped) = with_buffers(|[sorted, work]| {
            release::exponential_quantile_in(
                "release",
                p,
                input.values,
                bounds,
                eps,
                &mut log.streams,
                &mut log.ledger,
                [sorted, work],
            )
        })?;
        log.metrics.insert("clamped".into(), clamped as f64);
        record(r, log);
        Ok(ReleaseOutput::default())
    }
}

/// The medians whose kernel reads (data, eps, streams, ledger) and nothing else; the column is
/// clamped and sorted in this thread's reused buffer, so the kernel's `sorted()` borrows it.
macro_rules! median_release {
    ($($ty:ident => $kernel:path),*) => {$(
        impl ReleaseKind for $ty {
            fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
                bounds_of(self.bounds).map(|_| ())
            }

            fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
                let eps = need_eps(Self::NAME, input.epsilon)?;
                with_clamped(input, self.bounds, true, log, |data, _, log| {
                    record($kernel(data, eps, &mut log.streams, &mut log.ledger)?, log);
                    Ok(ReleaseOutput::default())
                })
            }
        }
    )*};
}

median_release!(SmoothMedian => release::smooth_median, GlobalMedian => release::global_median);

impl ReleaseKind for ComposedAverage {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        bounds_of(self.bounds)?;
        if !(self.sum_share > 0.0 && self.sum_share < 1.0) {
            return Err(refuse(
                "sum_share",
                format!(
                    "the sum's share of the budget must be in (0, 1), got {}",
                    self.sum_share
                ),
            ));
        }
        Ok(())
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let ratio = match self.ratio_clamp {
            Some(false) => release::Ratio::Literal,
            _ => release::Ratio::Clamped,
        };
        composed_mean(input, self.bounds, (eps, self.sum_share), ratio, log)?;
        Ok(ReleaseOutput::default())
    }
}

kind! {
    /// A histogram over public bins with Laplace noise on every count.
    Histogram = "histogram" {
        bounds: [f64; 2],
        /// Public bin edges, ascending (k + 1 edges for k bins).
        bins: Vec<f64>,
    }
    about: "counts over public bins + Lap(Delta/eps) each, Delta = 1 (add/remove) or 2 (replace-one); pure eps-DP. Vectors per bin; release/truth are the totals, abs_error the mean per-bin error",
}

impl ReleaseKind for Histogram {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        bounds_of(self.bounds)?;
        if self.bins.len() < 2 || !self.bins.windows(2).all(|w| w[0] < w[1]) {
            return Err(refuse("bins", "need at least two strictly ascending edges"));
        }
        Ok(())
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let (noisy, exact) = with_clamped(input, self.bounds, false, log, |data, _, log| {
            release::histogram(data, &self.bins, eps, &mut log.streams, &mut log.ledger)
        })?;
        let err = noisy
            .iter()
            .zip(&exact)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>();
        log.metrics.insert("release".into(), noisy.iter().sum());
        log.metrics.insert("truth".into(), exact.iter().sum());
        log.metrics
            .insert("abs_error".into(), err / exact.len() as f64);
        let mut out = ReleaseOutput::default();
        out.vectors
            .insert("bin_lo".into(), self.bins[..self.bins.len() - 1].to_vec());
        out.vectors.insert("release".into(), noisy);
        out.vectors.insert("truth".into(), exact);
        Ok(out)
    }
}

kind! {
    /// Figure 2.1: draws of the p-norm mechanisms' noise in D dimensions at scale 1/eps (no data).
    PNormSamples = "pnorm_noise" {
        /// The norms p (vectors `x_l{p}`, `y_l{p}`, ... per norm).
        norms: Vec<f64>,
        samples: usize,
        /// D (2 for the figure): the first two coordinates are recorded.
        dimension: usize,
    }
    about: "draws of density ∝ exp(-eps ||b||_p) in D dimensions, per norm p (F2.1; the noise alone: no data is read, nothing is spent)",
}

impl ReleaseKind for PNormSamples {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        if let Some(p) = self.norms.iter().find(|p| !(p.is_finite() && **p >= 1.0)) {
            return Err(refuse("norms", format!("each p must be >= 1, got {p}")));
        }
        if self.samples == 0 || self.dimension < 2 {
            return Err(refuse("samples", "need samples >= 1 and dimension >= 2"));
        }
        Ok(())
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let mut out = ReleaseOutput::default();
        for &p in &self.norms {
            let mech = PNormNoise::with_scale(p, 1.0 / eps)?;
            let mut rng = log.streams.stream(&format!("analysis/l{p}"));
            let draws: Vec<Vec<f64>> = (0..self.samples)
                .map(|_| mech.sample(self.dimension, &mut rng))
                .collect();
            out.vectors
                .insert(format!("x_l{p}"), draws.iter().map(|v| v[0]).collect());
            out.vectors
                .insert(format!("y_l{p}"), draws.iter().map(|v| v[1]).collect());
        }
        log.ledger.public(
            "noise",
            "none (noise only)",
            "no data is read: the draws do not depend on any dataset",
        );
        Ok(out)
    }
}

kind! {
    /// Basic vs advanced composition of k eps-DP mechanisms (an analytic series).
    Composition = "composition" {
        /// The numbers of mechanisms k.
        ks: Vec<u64>,
        /// Advanced composition's slack delta'.
        delta: f64,
    }
    about: "total eps of k eps-DP mechanisms: basic k eps vs advanced sqrt(2k ln(1/delta')) eps + k eps (e^eps - 1) (Dwork, Rothblum & Vadhan 2010; analytic, nothing is released)",
}

impl ReleaseKind for Composition {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        if self.ks.is_empty() || self.ks.contains(&0) {
            return Err(refuse("ks", "give at least one k, each >= 1"));
        }
        check_open_unit("delta", self.delta)
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let series = composition::series(eps, &self.ks, self.delta)?;
        let mut out = ReleaseOutput::default();
        if let Some(last) = series.last() {
            log.metrics.insert("basic_max_k".into(), last.basic);
            log.metrics.insert("advanced_max_k".into(), last.advanced);
        }
        out.vectors
            .insert("k".into(), series.iter().map(|c| c.k as f64).collect());
        out.vectors
            .insert("basic".into(), series.iter().map(|c| c.basic).collect());
        out.vectors.insert(
            "advanced".into(),
            series.iter().map(|c| c.advanced).collect(),
        );
        out.vectors
            .insert("best".into(), series.iter().map(|c| c.best()).collect());
        if let Some(k) = composition::crossover(eps, self.delta) {
            log.metrics.insert("crossover_k".into(), k as f64);
        }
        log.ledger.non_private(
            "composition",
            "none (analytic)",
            "a function of eps, k and delta' only",
        );
        Ok(out)
    }
}
