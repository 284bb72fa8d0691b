//! Linear regression: ridge (non-private), sufficient-statistics perturbation in its adaptive
//! form (AdaSSP, Wang 2018), the functional mechanism (Zhang et al. 2012) and objective
//! perturbation over a ball (Kifer, Smith & Thakurta 2012).
//!
//! Every model is fitted on the design z = [u, 1] / √D (u: the features in `[-1, 1]` through
//! their public bounds, D = d + 1 with the intercept), so ||z||₂ ≤ 1, and on the target
//! t ∈ `[-1, 1]` through its public bounds. The fitted w predicts y = mid + half · zᵀw.

use super::linalg::{add_to_upper, mirror_upper, symmetric_eigen, symmetric_solve};
use super::{Estimator, Scored, check_target, unit_box, unit_targets};
use crate::data::Dataset;
use crate::error::Result;
use crate::learners::{Classifier, FitInput, Learner, TrialLog};
use crate::privacy::{Charge, Gaussian, L2Mechanism, Laplace, Ledger, PrivacyMap};
use crate::rng::Rng;
use ndarray::{Array1, Array2, Axis, concatenate};
use std::collections::BTreeMap;

/// A fitted linear model on the scaled design, and the map back to target units.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearModel {
    /// Weights on z = [u, 1] / √D.
    pub w: Array1<f64>,
    /// y = mid + half · t.
    pub mid: f64,
    pub half: f64,
    /// Ridge (α = [`REFERENCE_ALPHA`]) on the same training rows, for the `weight_error`
    /// metric only: evaluation, not a release.
    pub reference: Array1<f64>,
}

/// The α of the reference ridge fit that `weight_error` measures against (`linreg`'s default).
pub const REFERENCE_ALPHA: f64 = 1.0;

/// A fitted `w` as the pipeline's model, with its reference ridge fit on the same rows.
fn scored(
    z: &Array2<f64>,
    t: &Array1<f64>,
    w: Array1<f64>,
    (mid, half): (f64, f64),
) -> Box<dyn Classifier> {
    let reference = ridge(z, t, REFERENCE_ALPHA);
    Box::new(Scored(Box::new(LinearModel {
        w,
        mid,
        half,
        reference,
    })))
}

/// [`Learner`] for a linear-regression fit `$fit`: the block computes the weights from the
/// scaled design `$z` and unit targets `$t` of the training rows (reading the fit's own
/// parameters as `$p` and the trial's log as `$log`); the weights are scored against the
/// reference ridge on the same rows. Data without a regression target is refused.
///
/// A private fit names its noise stream `$stream` instead of `$log`: its weights read that
/// stream as `$rng` and the trial's ledger as `$ledger`.
macro_rules! linear_learner {
    (
        $fit:ty,
        $stream:literal,
        |$p:ident, $z:ident, $t:ident, $ledger:ident, $rng:ident| $weights:block
    ) => {
        linear_learner!($fit, |$p, $z, $t, log| {
            let $rng = &mut log.streams.stream($stream);
            let $ledger = &mut log.ledger;
            $weights
        });
    };
    ($fit:ty, |$p:ident, $z:ident, $t:ident, $log:ident| $weights:block) => {
        impl Learner for $fit {
            fn fit(&self, input: &FitInput, $log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
                let $p = self;
                let $z = design(input.data, input.train)?;
                let ($t, map) = unit_targets(input.data, input.train)?;
                let w: Array1<f64> = $weights;
                Ok(scored(&$z, &$t, w, map))
            }

            fn check_data(&self, data: &Dataset) -> Result<()> {
                check_target(data)
            }
        }
    };
}

/// The scaled design z of `rows` (one row per example, ||z||₂ ≤ 1).
pub fn design(data: &Dataset, rows: &[u32]) -> Result<Array2<f64>> {
    let u = unit_box(data, rows)?;
    let ones = Array2::ones((u.nrows(), 1));
    let z = concatenate![Axis(1), u, ones];
    let root = (z.ncols() as f64).sqrt();
    Ok(z / root)
}

impl LinearModel {
    /// Predictions in target units for `rows`.
    pub fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Array1<f64>> {
        let z = design(data, rows)?;
        Ok(z.dot(&self.w).mapv(|t| self.mid + self.half * t))
    }
}

impl Estimator for LinearModel {
    /// `mse` and `r2` against the (clipped) targets of `rows`; `weight_error`, the squared
    /// distance of w to the reference ridge weights (on the scaled design: a positive error
    /// whose fall with N a log-log slope can measure).
    fn score(&self, data: &Dataset, rows: &[u32]) -> Result<BTreeMap<String, f64>> {
        check_target(data)?;
        let t = data.targets.as_ref().expect("checked");
        let pred = self.predict(data, rows)?;
        let y: Vec<f64> = rows.iter().map(|&i| t.values[i as usize]).collect();
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        let sse: f64 = y.iter().zip(&pred).map(|(a, p)| (a - p).powi(2)).sum();
        let sst: f64 = y.iter().map(|a| (a - mean).powi(2)).sum();
        Ok(BTreeMap::from([
            ("mse".to_string(), sse / n),
            ("r2".to_string(), 1.0 - sse / sst),
            (
                "weight_error".to_string(),
                (&self.w - &self.reference).mapv(|v| v * v).sum(),
            ),
        ]))
    }
}

/// Ridge: argmin ||Z w - t||² + α ||w||² = (ZᵀZ + α I)⁻¹ Zᵀt (every weight penalised,
/// the intercept's too; scikit-learn's `Ridge(alpha, fit_intercept=False)` on Z).
pub fn ridge(z: &Array2<f64>, t: &Array1<f64>, alpha: f64) -> Array1<f64> {
    let mut a = z.t().dot(z);
    a.diag_mut().mapv_inplace(|v| v + alpha);
    symmetric_solve(&a, &z.t().dot(t), 0.0)
}

/// `learner = "linreg"`'s fit: ridge with a public α, non-private.
#[derive(Debug, Clone, Copy)]
pub struct RidgeFit {
    pub alpha: f64,
}

linear_learner!(RidgeFit, |fit, z, t, log| {
    log.ledger.non_private(
        "train",
        "none (exact least squares)",
        "non-private ridge regression reference",
    );
    ridge(&z, &t, fit.alpha)
});

/// AdaSSP (Wang 2018, Algorithm 2): three Gaussian releases at (ε/3, δ/3) each, composed
/// sequentially to (ε, δ)-DP.
///
/// * Domain: training sets of (z, t) with ||z||₂ ≤ 1 and |t| ≤ 1 (public bounds, above).
/// * Releases and add/remove L2 sensitivities: λ_min(ZᵀZ) (1, Weyl's inequality: adding zzᵀ
///   moves every eigenvalue by at most ||z||² ≤ 1); the upper triangle of ZᵀZ (Frobenius norm
///   of zzᵀ ≤ ||z||² ≤ 1); Zᵀt (||t z||₂ ≤ 1). Replace-one: twice each (triangle inequality).
/// * Mechanism: each + N(0, σ²) per coordinate, σ by the analytic Gaussian (Balle & Wang 2018).
/// * Post-processing: the ridge λ = max(0, √(D ln(2D²/ρ)) σ − λ̃_min), ρ = 0.05, from the
///   noisy λ_min lowered by σ √(2 ln(6/δ)); w = (noisy ZᵀZ + λ I)⁺ noisy Zᵀt.
#[derive(Debug, Clone, Copy)]
pub struct AdaSspFit {
    pub epsilon: f64,
    pub delta: f64,
}

linear_learner!(AdaSspFit, "adassp", |fit, z, t, ledger, rng| {
    ada_ssp(&z, &t, fit.epsilon, fit.delta, ledger, rng)?
});

/// One of AdaSSP's releases, `what`, charged to `ledger` as step `train`: a Gaussian at
/// (ε, δ) for a quantity of add/remove L2 sensitivity 1.
fn unit_gaussian<'l>(
    what: &str,
    (epsilon, delta): (f64, f64),
    ledger: &'l mut Ledger,
) -> Result<Charge<'l, Gaussian>> {
    let relation = ledger.relation();
    let g = Gaussian::analytic(relation.doubled_for_replace(1.0), epsilon, delta, relation)?;
    ledger.charge("train", &format!("gaussian (AdaSSP: {what})"), g)
}

/// AdaSSP's weights (see [`AdaSspFit`]); every draw goes through `ledger`.
pub fn ada_ssp(
    z: &Array2<f64>,
    t: &Array1<f64>,
    epsilon: f64,
    delta: f64,
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<Array1<f64>> {
    let r = ssp_release(z, t, (epsilon / 3.0, delta / 3.0), ledger, rng)?;
    let dim = z.ncols() as f64;
    let noisy_min = (r.min_eigenvalue - r.sigma * (2.0 * (6.0 / delta).ln()).sqrt()).max(0.0);
    let rho: f64 = 0.05;
    let lambda = ((dim * (2.0 * dim * dim / rho).ln()).sqrt() * r.sigma - noisy_min).max(0.0);
    let mut gram = r.gram;
    mirror_upper(&mut gram);
    gram.diag_mut().mapv_inplace(|v| v + lambda);
    Ok(symmetric_solve(&gram, &r.zt, 0.0))
}

/// AdaSSP's three Gaussian releases, before any post-processing.
#[derive(Debug, Clone)]
pub struct SspRelease {
    /// λ_min(ZᵀZ) + noise.
    pub min_eigenvalue: f64,
    /// ZᵀZ with noise on the upper triangle (the lower triangle is left exact: mirror it).
    pub gram: Array2<f64>,
    /// Zᵀt + noise.
    pub zt: Array1<f64>,
    /// The noise's standard deviation (the same for all three).
    pub sigma: f64,
}

/// AdaSSP's releases, each a Gaussian at (ε, δ) = `each` for a quantity of add/remove L2
/// sensitivity 1 on rows with ||z||₂ ≤ 1 (see [`AdaSspFit`]). The audit calls it on rows of
/// larger norm to plant its mutant.
pub fn ssp_release(
    z: &Array2<f64>,
    t: &Array1<f64>,
    each: (f64, f64),
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<SspRelease> {
    let mut gram = z.t().dot(z);
    let exact_min = symmetric_eigen(&gram)
        .0
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let mut c = unit_gaussian("λ_min of ZᵀZ", each, ledger)?;
    let sigma = c.mechanism().sigma();
    let min_eigenvalue = exact_min + c.sample(rng);
    let mut c = unit_gaussian("ZᵀZ, upper triangle", each, ledger)?;
    add_to_upper(&mut gram, || c.sample(rng));
    let mut c = unit_gaussian("Zᵀt", each, ledger)?;
    let zt = z.t().dot(t).mapv(|v| v + c.sample(rng));
    Ok(SspRelease {
        min_eigenvalue,
        gram,
        zt,
        sigma,
    })
}

/// The functional mechanism (Zhang et al. 2012) for least squares, pure ε-DP.
///
/// * Domain: training sets of (z, t) with ||z||₂ ≤ 1, |t| ≤ 1.
/// * Release: the monomial coefficients of Σ (t - zᵀw)² in w: z_j² and 2 z_j z_l (j < l)
///   summed (the quadratic part) and -2 t z_j summed (the linear part).
/// * Add/remove L1 sensitivity: one row adds ||z||₁² + 2 |t| ||z||₁ ≤ D + 2 √D
///   (||z||₁ ≤ √D ||z||₂ ≤ √D); replace-one twice that.
/// * Mechanism: Laplace(Δ / ε) on each coefficient (Zhang et al., Algorithm 1).
/// * Post-processing: the noisy quadratic form plus the public ridge α I, minimised over the
///   eigen-directions with positive eigenvalue (Zhang et al. §5 drop the others).
#[derive(Debug, Clone, Copy)]
pub struct FunctionalFit {
    pub epsilon: f64,
    pub alpha: f64,
}

linear_learner!(FunctionalFit, "functional", |fit, z, t, ledger, rng| {
    functional(&z, &t, fit.epsilon, fit.alpha, ledger, rng)?
});

/// The functional mechanism's weights (see [`FunctionalFit`]).
pub fn functional(
    z: &Array2<f64>,
    t: &Array1<f64>,
    epsilon: f64,
    alpha: f64,
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<Array1<f64>> {
    let sensitivity = functional_sensitivity(z.ncols());
    let (mut quad, lin) = functional_release(z, t, (epsilon, sensitivity), ledger, rng)?;
    mirror_upper(&mut quad);
    quad.diag_mut().mapv_inplace(|v| v + alpha);
    // argmin wᵀQw + cᵀw: w = -Q⁺c / 2.
    Ok(symmetric_solve(&quad, &lin.mapv(|v| -v / 2.0), 0.0))
}

/// The functional mechanism's add/remove L1 sensitivity on a design of `dim` columns:
/// D + 2 √D (see [`FunctionalFit`]).
pub fn functional_sensitivity(dim: usize) -> f64 {
    let dim = dim as f64;
    dim + 2.0 * dim.sqrt()
}

/// The functional mechanism's release: the noisy coefficients of the quadratic part (upper
/// triangle: z_j² on the diagonal, then z_j z_l = (2 z_j z_l + noise) / 2 above it) and of the
/// linear part (-2 t z_j + noise), Laplace at `sensitivity` (add/remove; doubled for
/// replace-one) and ε. The audit calls it with a wrong sensitivity to plant its mutant.
pub fn functional_release(
    z: &Array2<f64>,
    t: &Array1<f64>,
    (epsilon, sensitivity): (f64, f64),
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<(Array2<f64>, Array1<f64>)> {
    let relation = ledger.relation();
    let lap = Laplace::new(relation.doubled_for_replace(sensitivity), epsilon, relation)?;
    let mut c = ledger.charge("train", "laplace (functional mechanism coefficients)", lap)?;
    let mut quad = z.t().dot(z);
    for i in 0..quad.nrows() {
        quad[[i, i]] += c.sample(rng);
        for j in i + 1..quad.ncols() {
            // The monomial w_i w_j has coefficient 2 M_ij: noise it, then halve.
            quad[[i, j]] = (2.0 * quad[[i, j]] + c.sample(rng)) / 2.0;
        }
    }
    let lin = z.t().dot(t).mapv(|v| -2.0 * v + c.sample(rng));
    Ok((quad, lin))
}

/// Objective perturbation for least squares over a ball (Kifer, Smith & Thakurta 2012, §3:
/// objective perturbation for a convex loss on a closed convex set, with a rank-one Hessian),
/// pure ε-DP.
///
/// * Domain: training sets of (z, t) with ||z||₂ ≤ 1, |t| ≤ 1; parameters w in the public ball
///   C = {||w||₂ ≤ R} (`radius`).
/// * Loss ℓ(w; z, t) = (zᵀw − t)²: on C its gradient 2(zᵀw − t) z has norm at most
///   L = 2(R + 1) (the Lipschitz constant) and its Hessian 2 z zᵀ has rank one and eigenvalue
///   at most β = 2.
/// * Mechanism: w = argmin over C of Σ ℓ(w; zᵢ, tᵢ) + (Λ/2)||w||² + bᵀw, with b of density
///   ∝ exp(−(ε/2) ||b||₂ / Δ_b), Δ_b = L (add/remove; replace-one 2L: the gradient of one row
///   removed and one added), and Λ = max(α, 2β/ε) = max(α, 4/ε).
/// * Proof (the argument of Chaudhuri et al. 2011, Thm. 9, which KST 2012 extend to a closed
///   convex domain for losses with a rank-one Hessian): at an output w the noise that
///   produces it is b = −∇(Σ ℓ + Λ/2 ||·||²)(w); one row moves that b by at most Δ_b (a
///   density ratio of at most e^{ε/2}) and the Jacobian of w ↦ b by a rank-one term 2 z zᵀ
///   (a determinant ratio of at most 1 + β/Λ ≤ 1 + ε/2 ≤ e^{ε/2}, under either relation).
///   Nothing reads N: the objective is the sum, not the mean (KST's mean form times N).
/// * Post-processing: none (the minimiser is the release).
#[derive(Debug, Clone, Copy)]
pub struct ObjectiveFit {
    pub epsilon: f64,
    pub alpha: f64,
    pub radius: f64,
}

linear_learner!(ObjectiveFit, "objective", |fit, z, t, ledger, rng| {
    objective(&z, &t, *fit, objective_lipschitz(fit.radius), ledger, rng)?
});

/// The Lipschitz constant of the squared loss on the ball of radius R: 2(R + 1).
pub fn objective_lipschitz(radius: f64) -> f64 {
    2.0 * (radius + 1.0)
}

/// The regulariser Λ = max(α, 2β/ε) (β = 2) that objective perturbation minimises with.
pub fn objective_lambda(alpha: f64, epsilon: f64) -> f64 {
    alpha.max(4.0 / epsilon)
}

/// Objective perturbation's minimiser (see [`ObjectiveFit`]), its noise calibrated for the
/// Lipschitz constant `lipschitz` (the audit passes a wrong one to plant its mutant).
pub fn objective(
    z: &Array2<f64>,
    t: &Array1<f64>,
    fit: ObjectiveFit,
    lipschitz: f64,
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<Array1<f64>> {
    let relation = ledger.relation();
    let sensitivity = relation.doubled_for_replace(lipschitz);
    // The noise enters the objective; the proof above gives ε for β = Δ_b / (ε/2).
    let mechanism = L2Mechanism::with_map(
        PrivacyMap::pure(sensitivity, fit.epsilon, relation)?,
        fit.epsilon / 2.0,
    )?;
    let b = ledger
        .charge(
            "train",
            "l2 vector mechanism (objective perturbation, KST 2012)",
            mechanism,
        )?
        .sample(z.ncols(), rng);
    let lambda = objective_lambda(fit.alpha, fit.epsilon);
    let mut q = z.t().dot(z) * 2.0;
    q.diag_mut().mapv_inplace(|v| v + lambda);
    let c = Array1::from(b) - z.t().dot(t) * 2.0;
    Ok(ball_quadratic_min(&q, &c, fit.radius))
}

/// argmin over ||w||₂ ≤ R of wᵀQw / 2 + cᵀw for positive definite Q: w(μ) = −(Q + μI)⁻¹c
/// with μ = 0 when that lies in the ball, else the μ > 0 with ||w(μ)|| = R (bisection on the
/// eigen-coordinates, where ||w(μ)|| decreases in μ).
pub fn ball_quadratic_min(q: &Array2<f64>, c: &Array1<f64>, radius: f64) -> Array1<f64> {
    let (values, vectors) = symmetric_eigen(q);
    let proj = vectors.t().dot(c);
    let norm = |mu: f64| {
        proj.iter()
            .zip(&values)
            .map(|(p, l)| (p / (l + mu)).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let mut mu = 0.0;
    if norm(0.0) > radius {
        let (mut lo, mut hi) = (0.0, 1.0);
        while norm(hi) > radius {
            hi *= 2.0;
        }
        for _ in 0..200 {
            mu = 0.5 * (lo + hi);
            if norm(mu) > radius { lo = mu } else { hi = mu }
        }
        mu = hi;
    }
    let coords = Array1::from_iter(proj.iter().zip(&values).map(|(p, l)| -p / (l + mu)));
    vectors.dot(&coords)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Relation;
    use crate::rng::rng_from;
    use ndarray::array;

    #[test]
    fn the_ball_minimiser_is_the_free_one_inside_and_on_the_sphere_outside() {
        let q = array![[4.0, 1.0], [1.0, 3.0]];
        let c = array![-1.0, 0.5];
        // Inside: Q w + c = 0.
        let w = ball_quadratic_min(&q, &c, 10.0);
        assert!((q.dot(&w) + &c).iter().all(|v| v.abs() < 1e-12), "{w}");
        // Outside: ||w|| = R and Q w + c = -μ w with μ > 0 (the KKT condition on the ball).
        let w = ball_quadratic_min(&q, &(c * 100.0), 1.0);
        assert!((w.dot(&w).sqrt() - 1.0).abs() < 1e-9, "{w}");
        let g = q.dot(&w) + &(array![-1.0, 0.5] * 100.0);
        let mu = -g.dot(&w);
        assert!(mu > 0.0);
        assert!((&g + &(&w * mu)).iter().all(|v| v.abs() < 1e-6), "{g}");
    }

    #[test]
    fn objective_perturbation_at_huge_epsilon_is_ridge_and_charges_its_epsilon() {
        let z = array![[0.5, 0.5], [-0.5, 0.5], [0.1, 0.5], [0.3, 0.5]];
        let t = array![0.6, -0.4, 0.0, 0.2];
        let fit = ObjectiveFit {
            epsilon: 1e9,
            alpha: 1.0,
            radius: 10.0,
        };
        let mut ledger = Ledger::new(Relation::AddRemove);
        let mut rng = rng_from(&["test", "objective"]);
        let w = objective(
            &z,
            &t,
            fit,
            objective_lipschitz(10.0),
            &mut ledger,
            &mut rng,
        )
        .unwrap();
        // Σ (zᵀw − t)² + (α/2)||w||²: ridge on Z at α/2 (ridge's penalty is α||w||²).
        let want = ridge(&z, &t, 0.5);
        assert!((&w - &want).iter().all(|v| v.abs() < 1e-6), "{w} vs {want}");
        assert!(ledger.is_private_within(Some(1e9)));
        // Λ = max(α, 4/ε): a small ε raises the regulariser.
        assert_eq!(objective_lambda(1.0, 0.5), 8.0);
        assert_eq!(objective_lambda(1.0, 10.0), 1.0);
    }
}
