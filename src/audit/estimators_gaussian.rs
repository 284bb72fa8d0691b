//! Audits of issue 49's (ε, δ) releases (δ = 1e-5, ε = 1, add/remove), each beside a planted
//! mutant it must catch. Each row runs the learner's own release function (the one its fit
//! calls) on X and X' = X plus one example, and reports the Gaussian log-likelihood ratio of the
//! releases, Σ_i (f(X')_i − f(X)_i) (o_i − (f(X)_i + f(X')_i) / 2) (up to the common 1/σ², which
//! changes no threshold event): the Neyman–Pearson statistic of the pair.
//!
//! The mutant of each is the same realistic bug: the rows fed to the release are the features
//! in `[-1, 1]^d` without the 1/√D that puts them in the unit ball, while σ stays calibrated
//! for ||z||₂ ≤ 1 (diffprivlib asks for a `data_norm` for this reason). Its mean shift on the
//! pair is D times (second moments) or √D times (Zᵀt) the correct one, and an (ε, δ) claim
//! is only auditable with 10^4 held-out runs when the real loss is several times the claim, so
//! the dimensions below are chosen for that.
//!
//! * `linreg_ssp` (AdaSSP, three releases at (ε/3, δ/3)): d = 15, D = 16, rows z = [u, 1] / 4;
//!   X = {(u = (−1, 1, −1, …), t = 0)}, X' adds (u = (1, …, 1), t = 1). Mutant
//!   `linreg_ssp_unscaled`: z = [u, 1].
//! * `pca_analyze_gauss`: d = 8, z = u / √8; X = {(−1, 1, −1, …)}, X' adds (1, …, 1), which
//!   moves the released upper triangle by 0.75 in L2, the most a row of the learner's domain can
//!   (σ is calibrated for the whole matrix's 1, so the correct row stays below its claim). Mutant
//!   `pca_analyze_gauss_unscaled`: z = u. `pca_analyze_gauss_classic` (and its `_unscaled`
//!   mutant): the same pair at ε = 0.5 with the classic σ (`calibration = "classic_below_1"`).
//! * `pca_power_method` (T = 2 releases at (ε/2, δ/2), k = d = 8, so every iterate's shift
//!   ||z zᵀ X||_F = ||z||₂² attains the sensitivity): the same pair; the statistic sums each
//!   step's ratio at that step's (public) iterate X. Mutant `pca_power_method_unscaled`.

use super::{Auditable, Claim, Side, with_mutant};
use crate::learners::estimators::linalg::symmetric_eigen;
use crate::learners::estimators::{linreg, pca};
use crate::privacy::{Ledger, Relation};
use crate::rng::Rng;
use ndarray::{Array1, Array2};

/// The (ε, δ) estimator audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let ssp = "d = 15: X = {(u = (-1, 1, -1, ...), t = 0)}, X' adds (u = (1, ..., 1), t = 1), \
               delta = 1e-5; statistic: Gaussian log-likelihood ratio of the three releases";
    let gauss = "d = 8: X = {(-1, 1, -1, ...)}, X' adds (1, ..., 1), delta = 1e-5; statistic: \
                 Gaussian log-likelihood ratio of the noisy upper triangle";
    let power = "d = k = 8, T = 2: X = {(-1, 1, -1, ...)}, X' adds (1, ..., 1), delta = 1e-5; \
                 statistic: Gaussian log-likelihood ratio of the T releases A X + G";
    let claim = |name, neighbours, kind| {
        Claim::new(name, EPS, neighbours)
            .with_delta(DELTA)
            .covers(kind)
    };
    let ssp = claim("linreg_ssp", ssp, &["learner:linreg_ssp"]);
    let ssp: [Box<dyn Auditable>; 2] = [
        Box::new(Ssp::new(ssp)),
        Box::new(Ssp::new(ssp.or_mutant(true, "linreg_ssp_unscaled"))),
    ];
    [
        ssp,
        with_mutant(
            claim("pca_analyze_gauss", gauss, ANALYZE_GAUSS),
            "pca_analyze_gauss_unscaled",
            AnalyzeGauss::run,
        ),
        with_mutant(
            Claim::new("pca_analyze_gauss_classic", CLASSIC_EPS, gauss)
                .with_delta(DELTA)
                .covers(ANALYZE_GAUSS),
            "pca_analyze_gauss_classic_unscaled",
            AnalyzeGauss::run_classic,
        ),
        with_mutant(
            claim("pca_power_method", power, &["learner:pca_power_method"]),
            "pca_power_method_unscaled",
            Power::run,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

const EPS: f64 = 1.0;
const DELTA: f64 = 1e-5;
/// The classic calibration is proven only below ε = 1.
const CLASSIC_EPS: f64 = 0.5;
/// Both calibrations' rows run `pca_analyze_gauss`.
const ANALYZE_GAUSS: &[&str] = &["learner:pca_analyze_gauss"];

/// Σ (b − a)(o − (a + b)/2): the Gaussian log-likelihood ratio of X' over X, times σ².
pub fn gauss_ratio(o: &[f64], a: &[f64], b: &[f64]) -> f64 {
    o.iter()
        .zip(a)
        .zip(b)
        .map(|((o, a), b)| (b - a) * (o - (a + b) / 2.0))
        .sum()
}

/// The pair's rows in `[-1, 1]^d`: X = {(−1, 1, −1, …)}, X' adds (1, …, 1); each row divided
/// by `scale` (√d for the correct rows, 1 for the unscaled mutant).
pub fn pair_rows(side: Side, d: usize, scale: f64) -> Array2<f64> {
    let alternating = Array1::from_shape_fn(d, |j| if j % 2 == 0 { -1.0 } else { 1.0 });
    let rows = match side {
        Side::X => 1,
        Side::XPrime => 2,
    };
    let mut u = Array2::ones((rows, d));
    u.row_mut(0).assign(&alternating);
    u / scale
}

/// The upper triangle of `a`, row by row.
fn upper(a: &Array2<f64>) -> Vec<f64> {
    (0..a.nrows())
        .flat_map(|i| (i..a.ncols()).map(move |j| a[[i, j]]))
        .collect()
}

fn ledger() -> Ledger {
    Ledger::new(Relation::AddRemove)
}

/// The scale the rows of a row are divided by: `correct` for the correct row, 1 for its
/// unscaled mutant.
fn scale(claim: &Claim, correct: f64) -> f64 {
    if claim.mutant { 1.0 } else { correct }
}

/// AdaSSP's three releases on the pair (the mutant: the design not divided by √D), with the
/// exact releases of X and X' (computed once: each needs an eigensolve).
pub struct Ssp(Claim, [Vec<f64>; 2]);

impl Ssp {
    const D: usize = 16;

    fn new(claim: Claim) -> Self {
        let exact = |side| {
            let (z, t) = Self::data(&claim, side);
            let gram = z.t().dot(&z);
            let min = symmetric_eigen(&gram)
                .0
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            Self::flat(min, &gram, &z.t().dot(&t))
        };
        Ssp(claim, [exact(Side::X), exact(Side::XPrime)])
    }

    fn data(claim: &Claim, side: Side) -> (Array2<f64>, Array1<f64>) {
        let u = pair_rows(side, Self::D - 1, 1.0);
        let mut z = Array2::ones((u.nrows(), Self::D));
        z.slice_mut(ndarray::s![.., ..Self::D - 1]).assign(&u);
        let t = match side {
            Side::X => Array1::from(vec![0.0]),
            Side::XPrime => Array1::from(vec![0.0, 1.0]),
        };
        (z / scale(claim, (Self::D as f64).sqrt()), t)
    }

    /// λ_min, the upper triangle and Zᵀt, as one vector.
    fn flat(min: f64, gram: &Array2<f64>, zt: &Array1<f64>) -> Vec<f64> {
        let mut out = vec![min];
        out.extend(upper(gram));
        out.extend(zt.iter());
        out
    }
}

impl Auditable for Ssp {
    fn claim(&self) -> Claim {
        self.0
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let (z, t) = Self::data(&self.0, side);
        let each = (EPS / 3.0, DELTA / 3.0);
        let r = linreg::ssp_release(&z, &t, each, &mut ledger(), rng).expect("valid");
        let o = Self::flat(r.min_eigenvalue, &r.gram, &r.zt);
        gauss_ratio(&o, &self.1[0], &self.1[1])
    }
}

/// The pair's second-moment matrix Σ z zᵀ for a PCA row (the mutant: z = u).
fn moment(claim: &Claim, side: Side) -> Array2<f64> {
    let z = pair_rows(side, PCA_D, scale(claim, (PCA_D as f64).sqrt()));
    z.t().dot(&z)
}

const PCA_D: usize = 8;

/// Analyze Gauss's release on the pair (the mutant: z = u).
struct AnalyzeGauss;

impl AnalyzeGauss {
    /// One run's statistic, σ by the analytic calibration.
    fn run(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
        Self::calibrated(claim, side, rng, crate::privacy::GaussCalibration::Analytic)
    }

    /// One run's statistic, σ by the classic calibration (the claim's ε is below 1).
    fn run_classic(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
        Self::calibrated(
            claim,
            side,
            rng,
            crate::privacy::GaussCalibration::ClassicBelowOne,
        )
    }

    fn calibrated(
        claim: &Claim,
        side: Side,
        rng: &mut Rng,
        calibration: crate::privacy::GaussCalibration,
    ) -> f64 {
        let a = moment(claim, side);
        let noise = pca::MomentNoise::AnalyzeGauss {
            epsilon: claim.epsilon,
            delta: DELTA,
            calibration,
        };
        let o = noise.release(a, &mut ledger(), rng).expect("valid");
        let (a, b) = (moment(claim, Side::X), moment(claim, Side::XPrime));
        gauss_ratio(&upper(&o), &upper(&a), &upper(&b))
    }
}

/// The noisy power method's T = 2 releases on the pair (the mutant: z = u).
struct Power;

impl Power {
    /// One run's statistic.
    fn run(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
        let (a, b) = (moment(claim, Side::X), moment(claim, Side::XPrime));
        let own = side.pick(&a, &b);
        let mut statistic = 0.0;
        let mut observe = |x: &Array2<f64>, y: &Array2<f64>| {
            let (ax, bx) = (a.dot(x), b.dot(x));
            let flat = |m: &Array2<f64>| m.iter().copied().collect::<Vec<f64>>();
            statistic += gauss_ratio(&flat(y), &flat(&ax), &flat(&bx));
        };
        let mut start = crate::rng::rng_from(&["audit", "power start"]);
        let budget = (EPS, DELTA, 2);
        let streams = (&mut start, rng);
        pca::noisy_power_observed(own, PCA_D, budget, &mut ledger(), streams, &mut observe)
            .expect("valid");
        statistic
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::testing::audited;

    /// At 20,000 runs per side (level: each correct row exceeds its claim with probability at
    /// most 5%; at this fixed seed none does): every correct row passes and every unscaled
    /// mutant is caught.
    #[test]
    fn gaussian_estimator_audits_pass_and_their_mutants_are_caught() {
        audited(&all(), 8, Relation::AddRemove);
    }

    #[test]
    fn the_pairs_attain_the_claimed_shifts() {
        // Correct Analyze Gauss: X' adds z z^T with ||z|| = 1, so ||Δ||_F = 1.
        let c = Claim::new("x", 1.0, "");
        let d = moment(&c, Side::XPrime) - moment(&c, Side::X);
        let frobenius = d.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((frobenius - 1.0).abs() < 1e-12, "{frobenius}");
        // The release is the upper triangle: its shift is √((1 + Σ z_i⁴) / 2) = √((1 + 1/8) / 2)
        // = 0.75, the most any row of the learner's domain (u / √8, u in [-1, 1]^8) gives, so
        // the correct row stays below its claim by that factor (σ is calibrated for 1).
        let upper_shift = upper(&d).iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((upper_shift - 0.75).abs() < 1e-12, "{upper_shift}");
        // The mutant's is D = 8 times that.
        let m = c.mutant(true);
        let d = moment(&m, Side::XPrime) - moment(&m, Side::X);
        let frobenius = d.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((frobenius - 8.0).abs() < 1e-12, "{frobenius}");
    }
}
