//! Robust statistics under differential privacy (issue 50; Sarwate & Chaudhuri 2013's
//! "connection to robust statistics"):
//!
//! * [`ptr_release`] of a [`Robust`] statistic: the alpha-trimmed mean or the interquartile
//!   range by propose-test-release (Dwork & Lei 2009), replace-one neighbours (n public).
//! * [`m_estimator_histogram`]: Lei (2011)'s M-estimator on a perturbed histogram: Laplace
//!   counts over public bins of width h, then Huber's location estimate computed from the noisy
//!   counts alone (post-processing).
//!
//! **PTR, what is implemented.** Dwork & Lei's framework: propose a bound b on the local
//! sensitivity, test privately how far X is from a dataset whose local sensitivity exceeds b,
//! release f(X) + Lap(b/eps') only when the test passes, "no answer" (⊥) otherwise
//! (`privacy::ptr` has the proof). The distance is computed from order statistics (x_(0) = lo,
//! x_(n+1) = hi, indices clamped), with A(k) an upper bound on the local sensitivity of every
//! dataset within k replacements of X:
//!
//! * trimmed mean, a = floor(alpha n) values trimmed at each end, m = n - 2a kept:
//!   A(k) = (x_(n-a+1+k) - x_(a-k)) / m. Why: replacing one value moves every order statistic
//!   the same way, each by at most one rank, so m |T(X) - T(X')| <= sum of the gaps from x_(a)
//!   to x_(n-a+1) (telescoping); a dataset k replacements away has y_(j) in
//!   [x_(j-k), x_(j+k)].
//! * IQR = x_(u) - x_(l), l = ceil(n/4), u = ceil(3n/4): both quantiles move the same way by at
//!   most one rank, so the IQR moves by at most the largest gap beside x_(l) or x_(u):
//!   A(k) = max over q in {l, u} of x_(q+k+1) - x_(q-k-1).
//!
//! d(X) = min {k : A(k) > b}. It is a lower bound on the true distance to instability
//! (A(k - 1) <= b means every dataset within k - 1 has local sensitivity <= b), and it has
//! sensitivity 1: for neighbours, x'_(j) lies in [x_(j-1), x_(j+1)], so A'(k) <= A(k + 1).
//! Dwork & Lei's own IQR algorithm works on a logarithmic grid of bins (a multiplicative
//! accuracy guarantee) and their trimmed mean takes its scale from that IQR; neither
//! construction is implemented here: the PTR step is theirs, the sensitivity bounds are the
//! order-statistic ones above.
//!
//! **Budget.** The test spends `test_share` of eps with the delta (the only source of delta);
//! the answer spends the rest. The answer's step is charged even when the test fails: whether
//! it runs depends on the data, so the guarantee covers both.

use super::query::{Bounds, Clamped, quantile_sorted};
use super::{Release, record_clamp};
use crate::error::{Error, Result};
use crate::privacy::ptr::PtrTest;
use crate::privacy::{Laplace, Ledger, Relation};
use crate::rng::Streams;

/// x_(i) of `sorted` (1-based), with x_(i <= 0) = lo and x_(i > n) = hi.
fn order(sorted: &[f64], bounds: Bounds, i: i64) -> f64 {
    if i <= 0 {
        bounds.lo
    } else if i as usize > sorted.len() {
        bounds.hi
    } else {
        sorted[i as usize - 1]
    }
}

/// The mean of x_(a+1), ..., x_(n-a) (the alpha-trimmed mean with a = floor(alpha n)).
pub fn trimmed_mean(sorted: &[f64], trim: usize) -> f64 {
    let kept = &sorted[trim..sorted.len() - trim];
    super::query::mean(kept)
}

/// x_(ceil(3n/4)) - x_(ceil(n/4)).
pub fn iqr(sorted: &[f64]) -> f64 {
    quantile_sorted(sorted, 0.75) - quantile_sorted(sorted, 0.25)
}

/// Which robust statistic a PTR release answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Robust {
    /// The alpha-trimmed mean, alpha in [0, 1/2).
    TrimmedMean {
        alpha: f64,
    },
    Iqr,
}

impl Robust {
    /// a = floor(alpha n) for the trimmed mean (0 for the IQR).
    fn trim(self, n: usize) -> usize {
        match self {
            Robust::TrimmedMean { alpha } => (alpha * n as f64).floor() as usize,
            Robust::Iqr => 0,
        }
    }

    /// The statistic on sorted data.
    pub fn answer(self, sorted: &[f64]) -> f64 {
        match self {
            Robust::TrimmedMean { .. } => trimmed_mean(sorted, self.trim(sorted.len())),
            Robust::Iqr => iqr(sorted),
        }
    }

    /// A(k): an upper bound on the local sensitivity of every dataset within k replacements
    /// of the sorted data (module docs).
    pub fn sensitivity_bound(self, sorted: &[f64], bounds: Bounds, k: usize) -> f64 {
        let n = sorted.len() as i64;
        let k = k as i64;
        let x = |i: i64| order(sorted, bounds, i);
        match self {
            Robust::TrimmedMean { .. } => {
                let a = self.trim(sorted.len()) as i64;
                let m = (n - 2 * a) as f64;
                (x(n - a + 1 + k) - x(a - k)) / m
            }
            Robust::Iqr => {
                let rank = |p: f64| ((p * n as f64).ceil() as i64).clamp(1, n);
                let (l, u) = (rank(0.25), rank(0.75));
                (x(u + k + 1) - x(u - k - 1)).max(x(l + k + 1) - x(l - k - 1))
            }
        }
    }

    /// d(X) = min {k : A(k) > b}; n + 2 when no k <= n + 1 exceeds b (A(n + 1) reads only the
    /// bounds, so then no dataset of n rows ever exceeds it: the distance is the same constant
    /// for all of them).
    pub fn distance_to_instability(self, sorted: &[f64], bounds: Bounds, b: f64) -> usize {
        let n = sorted.len();
        (0..=n + 1)
            .find(|&k| self.sensitivity_bound(sorted, bounds, k) > b)
            .unwrap_or(n + 2)
    }
}

/// What a PTR release asks for: the statistic, the proposed bound as a multiple of
/// (hi - lo)/n, the test's share of eps and the delta.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PtrParams {
    pub statistic: Robust,
    /// b = propose (hi - lo) / n, n the run's public size.
    pub propose: f64,
    pub test_share: f64,
    pub delta: f64,
    /// What ⊥ is reported as (a public constant: post-processing).
    pub fallback: f64,
}

/// A PTR release: the value (the fallback on ⊥), whether the test passed, the distance and
/// its noisy version, the proposed bound b.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PtrOutcome {
    pub release: Release,
    pub answered: bool,
    pub distance: usize,
    pub noisy_distance: f64,
    pub bound: f64,
}

/// Refuses add/remove (the bounds above are for replace-one) and a column whose length is not
/// the public n; returns n.
fn ptr_size(data: &Clamped, ledger: &mut Ledger) -> Result<usize> {
    let n = ptr_public_size(ledger)?;
    if n != data.len() {
        return Err(Error::param(
            "data",
            format!("PTR reads {} rows but the public n is {n}", data.len()),
        ));
    }
    Ok(n)
}

/// What PTR needs of the run before it sees a row: replace-one neighbours and a public n of at
/// least 4 (read from `ledger`); returns n. The preflight checks it for every cell.
pub fn ptr_public_size(ledger: &mut Ledger) -> Result<usize> {
    if ledger.relation() != Relation::ReplaceOne {
        return Err(Error::param(
            "neighbours",
            "the PTR releases are proven under replace-one (n public): set [experiment] \
             neighbours = \"replace_one\"",
        ));
    }
    let n = ledger.public_size("PTR's proposed bound b = propose (hi - lo)/N and the trim")?;
    if n < 4 {
        return Err(Error::param(
            "n",
            format!("PTR needs a public n of at least 4 rows, got {n}"),
        ));
    }
    Ok(n)
}

/// Propose-test-release of a robust statistic at `epsilon` (module docs; proof in
/// `privacy::ptr`), steps `test` (the delta) and `release`, streams of the same names.
pub fn ptr_release(
    params: PtrParams,
    data: &Clamped,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<PtrOutcome> {
    let valid = params.test_share > 0.0 && params.test_share < 1.0 && params.propose > 0.0;
    if !valid {
        return Err(Error::param(
            "test_share",
            "PTR needs test_share in (0, 1) and propose > 0",
        ));
    }
    let n = ptr_size(data, ledger)?;
    let relation = ledger.relation();
    let b = params.propose * data.bounds.width() / n as f64;
    let test = PtrTest::new(epsilon * params.test_share, params.delta, relation)?;
    let answer = Laplace::new(b, epsilon * (1.0 - params.test_share), relation)?;
    let sorted = data.sorted();
    let truth = params.statistic.answer(&sorted);
    let distance = params
        .statistic
        .distance_to_instability(&sorted, data.bounds, b);
    record_clamp(data.bounds, ledger);
    let label = "PTR test: Lap(1/eps) on the distance to instability, threshold ln(1/delta)/eps";
    let (noisy_distance, answered) = ledger
        .charge("test", label, test)?
        .test(distance as f64, &mut streams.stream("test"));
    let mut charge = ledger.charge("release", "laplace (proposed bound b)", answer)?;
    let value = if answered {
        truth + charge.sample(&mut streams.stream("release"))
    } else {
        charge.note(
            "no answer: the test failed; charged all the same (running it is data-dependent)",
        );
        params.fallback
    };
    Ok(PtrOutcome {
        release: Release { value, truth },
        answered,
        distance,
        noisy_distance,
        bound: b,
    })
}

/// Huber's psi: r clipped to [-c, c].
fn huber_psi(r: f64, c: f64) -> f64 {
    r.clamp(-c, c)
}

/// The root in [lo, hi] of the nonincreasing g(theta) = sum_i w_i psi(x_i - theta), by
/// bisection (to 1e-12 of the width); the midpoint when every weight is 0.
pub fn huber_location(points: &[f64], weights: Option<&[f64]>, c: f64, bounds: Bounds) -> f64 {
    let w = |i: usize| weights.map_or(1.0, |w| w[i]);
    if (0..points.len()).all(|i| w(i) <= 0.0) {
        return 0.5 * (bounds.lo + bounds.hi);
    }
    let g = |theta: f64| -> f64 {
        points
            .iter()
            .enumerate()
            .map(|(i, &x)| w(i) * huber_psi(x - theta, c))
            .sum()
    };
    let (mut lo, mut hi) = (bounds.lo, bounds.hi);
    while hi - lo > 1e-12 * bounds.width() {
        let mid = 0.5 * (lo + hi);
        if g(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Lei (2011)'s perturbed-histogram M-estimator of location: Laplace counts over `bins` equal
/// public bins of [lo, hi] (sensitivity 1 add/remove, 2 replace-one: `release::histogram`),
/// negative counts set to 0, then Huber's estimate (tuning `c`) with each bin's noisy count
/// as the weight of its centre. Everything after the counts is post-processing, so the
/// release is eps-DP under either relation. Its truth is Huber's estimate on the clamped
/// column itself; binning moves every point by at most h/2, so (psi monotone) the noiseless
/// binned estimate is within h/2 = (hi - lo)/(2 bins) of it.
pub fn m_estimator_histogram(
    data: &Clamped,
    bins: usize,
    c: f64,
    epsilon: f64,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<Release> {
    if bins == 0 || !(c > 0.0 && c.is_finite()) {
        return Err(Error::param("bins", "need bins >= 1 and huber > 0"));
    }
    // No refusal of the empty column (add/remove's neighbour of every one-row column): its
    // counts are noise alone, and Huber's estimate of no weight is the midpoint.
    let h = data.bounds.width() / bins as f64;
    let edges: Vec<f64> = (0..=bins).map(|i| data.bounds.lo + h * i as f64).collect();
    let (noisy, _) = super::histogram(data, &edges, epsilon, streams, ledger)?;
    let weights: Vec<f64> = noisy.iter().map(|w| w.max(0.0)).collect();
    let centres: Vec<f64> = edges.windows(2).map(|e| 0.5 * (e[0] + e[1])).collect();
    let value = huber_location(&centres, Some(&weights), c, data.bounds);
    let truth = huber_location(&data.values, None, c, data.bounds);
    Ok(Release { value, truth })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::PublicSize;

    fn unit() -> Bounds {
        Bounds { lo: 0.0, hi: 1.0 }
    }

    fn ledger(n: usize) -> Ledger {
        Ledger::new(Relation::ReplaceOne).with_public_size(Some(PublicSize::new(n, "test")))
    }

    /// `data` sorted.
    fn sorted(data: &[f64]) -> Vec<f64> {
        let mut s = data.to_vec();
        s.sort_by(f64::total_cmp);
        s
    }

    /// Every replace-one neighbour of `data` with the new value on `grid`, sorted.
    fn replacements<'a>(data: &'a [f64], grid: &'a [f64]) -> impl Iterator<Item = Vec<f64>> + 'a {
        (0..data.len()).flat_map(move |i| {
            grid.iter().map(move |&v| {
                let mut y = data.to_vec();
                y[i] = v;
                sorted(&y)
            })
        })
    }

    /// The values 0, 1/8, ..., 1.
    fn eighths() -> Vec<f64> {
        (0..=8).map(|i| i as f64 / 8.0).collect()
    }

    /// A(0) bounds the change of the statistic under every single replacement, checked
    /// exhaustively on small grids (values and replacements on a 1/8 grid), and A(k) is
    /// nondecreasing in k.
    #[test]
    fn sensitivity_bound_covers_every_replacement() {
        let grid = eighths();
        let data = [0.0, 0.125, 0.25, 0.25, 0.5, 0.625, 0.75, 1.0, 1.0];
        for stat in [Robust::TrimmedMean { alpha: 0.2 }, Robust::Iqr] {
            let s = sorted(&data);
            let a0 = stat.sensitivity_bound(&s, unit(), 0);
            let t = stat.answer(&s);
            let worst = replacements(&data, &grid)
                .map(|y| (stat.answer(&y) - t).abs())
                .fold(0.0, f64::max);
            assert!(worst <= a0 + 1e-12, "{stat:?}: {worst} > {a0}");
            assert!(worst > 0.0, "{stat:?}");
            let a: Vec<f64> = (0..12)
                .map(|k| stat.sensitivity_bound(&s, unit(), k))
                .collect();
            assert!(a.windows(2).all(|w| w[0] <= w[1]), "{a:?}");
        }
    }

    /// The distance moves by at most 1 between replace-one neighbours (exhaustive on a grid).
    #[test]
    fn distance_has_sensitivity_one() {
        let data = [0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0];
        let grid = eighths();
        for stat in [Robust::TrimmedMean { alpha: 0.25 }, Robust::Iqr] {
            let b = 0.05;
            let d = stat.distance_to_instability(&sorted(&data), unit(), b) as i64;
            assert!(d >= 1, "{stat:?}");
            for y in replacements(&data, &grid) {
                let dy = stat.distance_to_instability(&y, unit(), b) as i64;
                assert!((d - dy).abs() <= 1, "{stat:?} {d} {dy}");
            }
        }
    }

    /// PTR of the IQR, proposing b = (hi - lo)/n, half the budget to the test.
    fn iqr_params() -> PtrParams {
        PtrParams {
            statistic: Robust::Iqr,
            propose: 1.0,
            test_share: 0.5,
            delta: 1e-6,
            fallback: 0.5,
        }
    }

    /// Concentrated data passes the test and is answered within a few b; spread data with a
    /// tiny proposal is refused (⊥ reported as the fallback), and both record the delta.
    #[test]
    fn ptr_answers_stable_data_and_refuses_unstable_data() {
        let n = 1000;
        let stable: Vec<f64> = (0..n)
            .map(|i| if i % 10 == 0 { 0.9 } else { 0.5 })
            .collect();
        let data = Clamped::new(&stable, unit()).unwrap();
        let mut l = ledger(n);
        let out = ptr_release(iqr_params(), &data, 1.0, &mut Streams::new(1), &mut l).unwrap();
        assert!(out.answered && out.release.truth == 0.0, "{out:?}");
        assert!(out.release.abs_error() < 30.0 * out.bound, "{out:?}");
        assert_eq!(l.total_delta(), 1e-6);
        assert!((l.total_epsilon() - 1.0).abs() < 1e-12);
        let spread: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
        let data = Clamped::new(&spread, unit()).unwrap();
        let params = PtrParams {
            statistic: Robust::TrimmedMean { alpha: 0.1 },
            propose: 0.01,
            ..iqr_params()
        };
        let mut l = ledger(n);
        let out = ptr_release(params, &data, 1.0, &mut Streams::new(1), &mut l).unwrap();
        assert!(!out.answered && out.distance == 0, "{out:?}");
        assert_eq!(out.release.value, 0.5);
        assert!((l.total_epsilon() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn ptr_refuses_add_remove_and_a_wrong_size() {
        let data = Clamped::new(&[0.1, 0.2, 0.3, 0.4], unit()).unwrap();
        let release = |ledger: &mut Ledger| {
            ptr_release(iqr_params(), &data, 1.0, &mut Streams::new(1), ledger)
        };
        let mut ar =
            Ledger::new(Relation::AddRemove).with_public_size(Some(PublicSize::new(4, "test")));
        assert!(release(&mut ar).is_err());
        assert!(release(&mut ledger(5)).is_err());
        assert!(release(&mut ledger(4)).is_ok());
    }

    /// Huber's estimate: the mean when c covers the data, the median-like centre when c is
    /// small; the histogram version lands within h/2 + noise of it at a large eps.
    #[test]
    fn huber_location_and_the_histogram_estimate() {
        let xs = [0.1, 0.2, 0.3, 0.4, 1.0];
        let mean = xs.iter().sum::<f64>() / 5.0;
        assert!((huber_location(&xs, None, 10.0, unit()) - mean).abs() < 1e-9);
        assert!((huber_location(&xs, None, 1e-6, unit()) - 0.3).abs() < 1e-5);
        let n = 5000;
        let col: Vec<f64> = (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect();
        let data = Clamped::new(&col, unit()).unwrap();
        let mut l = Ledger::new(Relation::AddRemove);
        let r = m_estimator_histogram(&data, 20, 0.1, 100.0, &mut Streams::new(3), &mut l).unwrap();
        assert!((r.truth - 0.5).abs() < 1e-9);
        assert!(r.abs_error() < 0.5 / 20.0 + 0.01, "{r:?}");
        assert_eq!(l.total_epsilon(), 100.0);
    }
}
