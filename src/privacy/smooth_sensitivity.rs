//! The smooth-sensitivity median (Nissim, Raskhodnikova & Smith 2007, "Smooth sensitivity and
//! sampling in private data analysis", sections 2–3), beside the global-sensitivity median.
//!
//! * Domain: n reals clamped to public bounds [lo, hi]; f(X) = x_(m), m = floor((n + 1) / 2)
//!   (the median for odd n, the lower median for even n; n public).
//! * Input metric: replace-one (Hamming distance with n fixed, NRS's setting). Under add/remove
//!   the median's rank moves with n, so this mechanism is refused there ([`SmoothSensitivityMedian::new`]).
//! * Local sensitivity at distance k (NRS Prop. 3.4): A_k(X) = max over t = 0..=k+1 of
//!   x_(m+t) - x_(m+t-k-1), with x_(i) = lo for i < 1 and hi for i > n. The beta-smooth
//!   sensitivity S*(X) = max over k = 0..=n of exp(-k beta) A_k(X) is computed exactly in
//!   O(n^2) worst case, stopping once exp(-k beta) (hi - lo) cannot beat the maximum so far.
//! * Noise: the Cauchy variant (gamma = 2), pure eps-DP, delta = 0: release
//!   f(X) + (S*(X) / alpha) Z with Z standard Cauchy, alpha = beta = eps / (2 (gamma + 1)) = eps / 6
//!   (NRS Lemma 2.6 with the admissibility of h(z) ∝ 1 / (1 + z^2)).
//! * Proof sketch: for neighbours X, Y write the release of Y as a slide by
//!   Delta = alpha (f(X) - f(Y)) / S*(X), |Delta| <= alpha LS(X) / S*(X) <= alpha, and a dilation by
//!   lambda = ln(S*(X) / S*(Y)), |lambda| <= beta (S* is beta-smooth). ln h changes by at most
//!   |Delta| sup |(ln h)'| = |Delta| under the slide, and by at most 3 |lambda| under the dilation
//!   (Jacobian included), so the log density ratio is at most alpha + 3 beta = 2 eps / 3 <= eps.
//!
//! The mechanism value carries its [`PrivacyMap`]; the sensitivity it records is the range
//! hi - lo (the global sensitivity that S* smooths; S* itself depends on the data and is written
//! in the step's note when [`Charge::release`] draws).
//!
//! The global-sensitivity median (`release::global_median`) adds Lap((hi - lo) / eps) through
//! the Laplace mechanism: one point can move the median across the whole range (m zeros and
//! m ones, say), so its error never shrinks with n. On concentrated data S* is tiny and the
//! smooth median is orders of magnitude more accurate.
//!
//! Sampling uses floating point: fine for measuring accuracy, not hardened against the
//! floating-point attacks of Mironov (2012).

use super::Relation;
use super::mechanism::{Charge, Mechanism, PrivacyMap};
use crate::error::{Error, Result};
use rand::Rng;

/// The smooth-sensitivity median with Cauchy noise (pure eps-DP under replace-one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothSensitivityMedian {
    map: PrivacyMap,
    lo: f64,
    hi: f64,
}

impl Mechanism for SmoothSensitivityMedian {
    fn privacy_map(&self) -> &PrivacyMap {
        &self.map
    }
}

impl Charge<'_, SmoothSensitivityMedian> {
    /// One release from data sorted ascending inside the bounds (at least one point); notes
    /// the data's smooth sensitivity S* on the recorded step.
    pub fn release<R: Rng + ?Sized>(&mut self, sorted: &[f64], rng: &mut R) -> Result<f64> {
        let m = self.mechanism;
        let s = m.smooth_sensitivity(sorted);
        self.note(format!(
            "beta-smooth sensitivity S* = {s:e} (beta = {})",
            m.beta()
        ));
        m.release_with_scale(sorted, s / m.alpha(), rng)
    }
}

/// The lower median x_(m), m = floor((n + 1) / 2), of ascending data (1-based rank).
pub fn median_rank(n: usize) -> usize {
    n.div_ceil(2)
}

impl SmoothSensitivityMedian {
    /// Cauchy tail exponent gamma of h(z) ∝ 1 / (1 + |z|^gamma).
    pub const GAMMA: f64 = 2.0;

    /// The mechanism at `epsilon` for data in [lo, hi], under `relation` (replace-one only).
    pub fn new(epsilon: f64, lo: f64, hi: f64, relation: Relation) -> Result<Self> {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::param(
                "bounds",
                format!("need finite lo < hi, got [{lo}, {hi}]"),
            ));
        }
        if relation != Relation::ReplaceOne {
            return Err(Error::param(
                "neighbours",
                "the smooth-sensitivity median is proven for replace_one (n public); \
                 set neighbours = \"replace_one\"",
            ));
        }
        Ok(SmoothSensitivityMedian {
            map: PrivacyMap::pure(hi - lo, epsilon, relation)?,
            lo,
            hi,
        })
    }

    pub fn epsilon(&self) -> f64 {
        self.map.epsilon
    }

    /// beta = eps / (2 (gamma + 1)).
    pub fn beta(&self) -> f64 {
        self.map.epsilon / (2.0 * (Self::GAMMA + 1.0))
    }

    /// alpha = eps / (2 (gamma + 1)): the noise is S* / alpha times a standard Cauchy.
    pub fn alpha(&self) -> f64 {
        self.map.epsilon / (2.0 * (Self::GAMMA + 1.0))
    }

    /// S*(X) at this mechanism's beta, from data sorted ascending inside the bounds.
    pub fn smooth_sensitivity(&self, sorted: &[f64]) -> f64 {
        smooth_sensitivity_median(sorted, self.beta(), self.lo, self.hi)
    }

    /// The Cauchy scale S*(X) / alpha of the release on `sorted`.
    pub fn noise_scale(&self, sorted: &[f64]) -> f64 {
        self.smooth_sensitivity(sorted) / self.alpha()
    }

    /// The median plus `scale` times a standard Cauchy draw (the audit's mutant passes the
    /// local sensitivity's scale).
    pub(crate) fn release_with_scale<R: Rng + ?Sized>(
        &self,
        sorted: &[f64],
        scale: f64,
        rng: &mut R,
    ) -> Result<f64> {
        if sorted.is_empty() {
            return Err(Error::param("data", "the median of no data is undefined"));
        }
        Ok(sorted[median_rank(sorted.len()) - 1] + scale * standard_cauchy(rng))
    }
}

/// x_(i) (1-based) with x_(i) = lo below 1 and hi above n.
#[inline]
fn order_stat(sorted: &[f64], i: isize, lo: f64, hi: f64) -> f64 {
    if i < 1 {
        lo
    } else if i as usize > sorted.len() {
        hi
    } else {
        sorted[i as usize - 1]
    }
}

/// Local sensitivity of the median at distance k, A_k (NRS Prop. 3.4).
pub fn local_sensitivity_at(sorted: &[f64], k: usize, lo: f64, hi: f64) -> f64 {
    let m = median_rank(sorted.len()) as isize;
    let k = k as isize;
    (0..=k + 1)
        .map(|t| order_stat(sorted, m + t, lo, hi) - order_stat(sorted, m + t - k - 1, lo, hi))
        .fold(0.0, f64::max)
}

/// The beta-smooth sensitivity of the median, max over k of exp(-k beta) A_k, exactly
/// (the scan stops once exp(-k beta) (hi - lo) cannot exceed the maximum so far).
pub fn smooth_sensitivity_median(sorted: &[f64], beta: f64, lo: f64, hi: f64) -> f64 {
    let mut best = 0.0f64;
    for k in 0..=sorted.len() {
        let damp = (-(k as f64) * beta).exp();
        if damp * (hi - lo) <= best {
            break;
        }
        best = best.max(damp * local_sensitivity_at(sorted, k, lo, hi));
    }
    best
}

/// A standard Cauchy draw, tan(pi (U - 1/2)), U uniform on (0, 1).
#[inline]
pub fn standard_cauchy<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u: f64 = rng.r#gen();
    (std::f64::consts::PI * (u - 0.5)).tan()
}

/// CDF of the Cauchy law of scale s at x.
pub fn cauchy_cdf(scale: f64, x: f64) -> f64 {
    0.5 + (x / scale).atan() / std::f64::consts::PI
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form against the definition max_Y LS(Y) exp(-beta d(X, Y)), by enumerating
    /// every dataset Y of n <= 3 points on a grid holding X's points and the bounds.
    #[test]
    fn smooth_sensitivity_matches_the_definition() {
        let grid = [0.0, 0.1, 0.35, 0.4, 1.0];
        let ls = |y: &[f64]| local_sensitivity_at(y, 0, 0.0, 1.0);
        for n in 1..=3usize {
            let total = grid.len().pow(n as u32);
            for code in 0..total {
                let mut x: Vec<f64> = (0..n)
                    .map(|i| grid[code / grid.len().pow(i as u32) % grid.len()])
                    .collect();
                x.sort_by(f64::total_cmp);
                for beta in [0.1, 1.0] {
                    let mut brute = 0.0f64;
                    for c2 in 0..total {
                        let mut y: Vec<f64> = (0..n)
                            .map(|i| grid[c2 / grid.len().pow(i as u32) % grid.len()])
                            .collect();
                        y.sort_by(f64::total_cmp);
                        // Hamming distance between multisets: n - |common|.
                        let mut common = 0;
                        let (mut i, mut j) = (0, 0);
                        while i < n && j < n {
                            if x[i] == y[j] {
                                common += 1;
                                i += 1;
                                j += 1;
                            } else if x[i] < y[j] {
                                i += 1;
                            } else {
                                j += 1;
                            }
                        }
                        let d = (n - common) as f64;
                        brute = brute.max(ls(&y) * (-beta * d).exp());
                    }
                    let fast = smooth_sensitivity_median(&x, beta, 0.0, 1.0);
                    assert!(
                        (fast - brute).abs() < 1e-12,
                        "{x:?} beta {beta}: {fast} vs {brute}"
                    );
                }
            }
        }
    }

    #[test]
    fn refuses_add_remove_and_bad_bounds() {
        let e = SmoothSensitivityMedian::new(1.0, 0.0, 1.0, Relation::AddRemove).unwrap_err();
        assert!(e.to_string().contains("replace_one"), "{e}");
        assert!(SmoothSensitivityMedian::new(1.0, 1.0, 0.0, Relation::ReplaceOne).is_err());
        let m = SmoothSensitivityMedian::new(1.0, 0.0, 1.0, Relation::ReplaceOne).unwrap();
        let mut rng = crate::rng::rng_from(&["ss-empty"]);
        let mut ledger = crate::privacy::Ledger::new(Relation::ReplaceOne);
        let mut c = ledger.charge("median", "smooth", m).unwrap();
        assert!(c.release(&[], &mut rng).is_err());
        assert!(c.release(&[0.5], &mut rng).unwrap().is_finite());
        assert!(ledger.entries[0].note.as_ref().unwrap().contains("S* ="));
        assert!((m.alpha() - 1.0 / 6.0).abs() < 1e-15);
    }
}
