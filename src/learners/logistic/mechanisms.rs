//! Private logistic regression: output perturbation (Algorithm 6), objective perturbation
//! (Algorithm 7) and the functional mechanism (appendix B), on data with ||x_n||_2 <= 1 and
//! y_n in {-1, +1}. Each calibrates for the relation of the ledger it records into.
//!
//! Notation: the thesis's lambda = N Lambda of Chaudhuri et al. (2011), so the minimiser of
//! J(theta) = (1/N) sum loss + (lambda/(2N)) ||theta||^2 is that of the *summed* objective
//! F(theta) = sum_n loss_n(theta) + (lambda/2) ||theta||^2, whose regulariser lambda is a
//! public constant that does not change with N. |l'| <= 1 and 0 <= l'' <= c = 1/4 for the
//! logistic loss, so one example's loss has a gradient of norm <= ||x|| <= 1 and a Hessian
//! l'' x x^T of rank one and norm <= c.

use super::design::Design;
use super::eigenspace::solve_on_positive_eigenspace;
use super::erm::minimise_from;
use super::linalg::{solve_on_eigenpairs, solve_spd, symmetric_eigen};
use super::loss::Loss;
use super::solver::{Convergence, Objective, SolverSettings};
use crate::error::{Error, Result};
use crate::memo::{Footprint, KeyBuilder};
use crate::privacy::{L2Mechanism, Laplace, Ledger, PrivacyMap, Relation};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Nothing for the logistic loss (the thesis's labels), else `"; <loss>, c = <c>"`.
fn loss_note(loss: Loss) -> String {
    match loss {
        Loss::Logistic => String::new(),
        _ => format!("; {}, c = {}", loss.describe(), loss.curvature()),
    }
}

/// The constant c bounding |l''| for the logistic loss (Chaudhuri et al. 2011).
pub const LOGISTIC_C: f64 = 0.25;

/// Refuses designs whose rows leave the unit ball (the sensitivity proofs need ||x|| <= 1).
pub fn check_unit_rows(design: &Design) -> Result<()> {
    let m = design.max_row_norm();
    if m > 1.0 + 1e-9 {
        return Err(Error::param(
            "design",
            format!(
                "private logistic regression needs ||x_n||_2 <= 1, found a row of norm {m}; scale the rows first (see logistic::preprocess)"
            ),
        ));
    }
    Ok(())
}

/// L2 sensitivity of the minimiser of F (output perturbation) for thesis `lambda`:
/// 1/lambda under add/remove, 2/lambda under replace-one.
///
/// *Proof (add/remove).* Let G = F + l_x (one added example), theta_F, theta_G the minimisers.
/// F is lambda-strongly convex and grad F(theta_F) = 0, grad F(theta_G) = -grad l_x(theta_G), so
/// lambda ||theta_G - theta_F||^2 <= <grad F(theta_G) - grad F(theta_F), theta_G - theta_F>
/// = <-grad l_x(theta_G), theta_G - theta_F> <= ||theta_G - theta_F|| (||grad l_x|| <= 1):
/// ||theta_G - theta_F|| <= 1/lambda. *Replace-one:* 2/lambda (Chaudhuri et al. 2011, Cor. 8
/// with n Lambda = lambda; also remove then add).
pub fn output_sensitivity(lambda: f64, relation: Relation) -> f64 {
    relation.doubled_for_replace(1.0 / lambda)
}

/// One regularised ERM problem a mechanism perturbs: minimise
/// (1/N) sum_n l(y_n x_n.theta) + (lambda/2) ||theta||^2 over the rows of `design` (norm <= 1)
/// with labels `y` in {-1, +1}, solved to `settings`.
#[derive(Clone, Copy)]
pub struct Problem<'a, 'd> {
    pub loss: Loss,
    pub design: &'a Design<'d>,
    pub y: &'a [f64],
    pub lambda: f64,
    pub settings: &'a SolverSettings,
}

impl Problem<'_, '_> {
    /// Refuses what the sensitivity proofs exclude: a row outside the unit ball, lambda <= 0.
    fn check(&self) -> Result<()> {
        check_unit_rows(self.design)?;
        crate::privacy::check_positive("lambda", self.lambda)
    }

    /// Minimises `objective` for this problem's loss, to its settings, from `start` or 0
    /// (see [`minimise_from`]).
    pub fn solve_from(
        &self,
        objective: &Objective,
        start: Option<&[f64]>,
    ) -> (Vec<f64>, Convergence) {
        minimise_from(self.loss, objective, self.settings, start)
    }
}

/// Output perturbation (Algorithm 6, Chaudhuri et al. 2011 Alg. 1).
///
/// * Domain: training sets of rows with ||x|| <= 1, labels in {-1, +1}; released: theta in R^D.
/// * Relation: the ledger's; sensitivity [`output_sensitivity`] (1/lambda add/remove,
///   2/lambda replace-one, the thesis's value).
/// * Mechanism: theta* + b with the L2 mechanism, beta = sensitivity / eps; measure: pure
///   eps-DP.
/// * Proof sketch: L2 mechanism with that L2 sensitivity (privacy::l2); the solver must reach
///   the exact minimiser: a fit that stops short of it withdraws the step's guarantee.
///
/// Any loss with |l'| <= 1 (the Huber SVM loss too): the proof uses only that bound and lambda-strong convexity, so the sensitivity is the same.
pub fn output_perturbation(
    problem: Problem,
    epsilon: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, Convergence)> {
    output_perturbation_as(problem, epsilon, false, rng, ledger)
}

/// [`output_perturbation`], or with `lambda_twice` its ablation variant calibrated for the
/// sensitivity divided by N (the lambda = N Lambda convention applied twice): N times less
/// noise, so (N eps)-DP, not eps-DP; the ledger records N eps spent against the eps claimed.
pub fn output_perturbation_as(
    problem: Problem,
    epsilon: f64,
    lambda_twice: bool,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, Convergence)> {
    let b = output_noise(&problem, epsilon, lambda_twice, rng, ledger)?;
    let (design, lambda) = (problem.design, problem.lambda);
    let (mut theta, conv) =
        problem.solve_from(&Objective::regularised(design, problem.y, lambda), None);
    theta.iter_mut().zip(&b).for_each(|(t, n)| *t += n);
    void_unless_converged(&conv, ledger);
    Ok((theta, conv))
}

/// Withdraws the guarantee of the step just charged when the solver stopped short of the
/// exact minimiser: output and objective perturbation's proofs hold for the minimiser only.
fn void_unless_converged(conv: &Convergence, ledger: &mut Ledger) {
    if !conv.converged {
        ledger.void_last(&format!(
            "NOT private as proven: the proof needs the exact minimiser, and the solver stopped \
             at gradient norm {:.3e} after {} iterations",
            conv.grad_norm, conv.iterations
        ));
    }
}

/// The noise vector [`output_perturbation_as`] adds to the minimiser, charged to `ledger`. It
/// depends on lambda, N and eps only, so a caller may draw it before the fit (cross-validation
/// draws every fold's first, then fits along the lambda path).
pub fn output_noise(
    problem: &Problem,
    epsilon: f64,
    lambda_twice: bool,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<Vec<f64>> {
    problem.check()?;
    let (design, lambda) = (problem.design, problem.lambda);
    let relation = ledger.relation();
    let n = design.n_rows().max(1) as f64;
    let shrink = if lambda_twice { n } else { 1.0 };
    let sens = output_sensitivity(lambda, relation) / shrink;
    let mech = L2Mechanism::new(sens, epsilon, relation)?;
    // The logistic loss keeps the thesis's label (committed ledgers carry it).
    let label = format!(
        "l2 vector mechanism (output perturbation, Algorithm 6{}{})",
        loss_note(problem.loss),
        if lambda_twice {
            ", variant lambda_twice"
        } else {
            ""
        }
    );
    let b = ledger
        .charge("train", &label, mech)?
        .sample(design.dim(), rng);
    if lambda_twice && n > 1.0 {
        ledger.understate_last(
            n,
            "variant lambda_twice: noise for sensitivity 1/(N lambda), the minimiser moves by 1/lambda",
        );
    }
    Ok(b)
}

/// Which branch of Algorithm 7 applies and its constants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveBranch {
    /// True if eps' = eps - k ln(1 + c/lambda) > 0 (no extra regulariser); k = 1 under
    /// add/remove, 2 under replace-one (the thesis's ln(1 + 2c/lambda + c^2/lambda^2)).
    pub direct: bool,
    /// The eps' used for the noise (eps/2 on the other branch).
    pub eps_prime: f64,
    /// Extra regularisation Delta (0 on the direct branch).
    pub delta: f64,
    /// beta = Delta_b / eps' of the L2 noise b (Delta_b = 1 add/remove, 2 replace-one).
    pub noise_scale: f64,
}

/// L2 sensitivity of the noise vector b that maps a minimiser to itself in Algorithm 7:
/// one example's loss gradient (norm <= 1) under add/remove, two under replace-one.
pub fn objective_noise_sensitivity(relation: Relation) -> f64 {
    relation.doubled_for_replace(1.0)
}

/// Algorithm 7's branch for thesis lambda, eps and N (c = 1/4) under `relation`.
///
/// Replace-one is the thesis/Chaudhuri et al. form: eps' = eps - ln(1 + 2c/lambda +
/// c^2/lambda^2); else Delta = c/(N (e^(eps/4) - 1)) - lambda/N, eps' = eps/2; beta = 2/eps'.
/// Add/remove (derived in [`objective_perturbation`]): eps' = eps - ln(1 + c/lambda); else
/// Delta = c/(N (e^(eps/2) - 1)) - lambda/N, eps' = eps/2; beta = 1/eps'.
pub fn objective_branch(
    lambda: f64,
    epsilon: f64,
    n: usize,
    relation: Relation,
) -> ObjectiveBranch {
    objective_branch_by(
        BranchRule::Published,
        LOGISTIC_C,
        lambda,
        epsilon,
        n,
        relation,
    )
}

/// How Algorithm 7 chooses between its two branches. Both rules read only lambda, eps and the
/// relation (public), and each branch is eps-DP on its own, so either rule is eps-DP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchRule {
    /// Chaudhuri et al.'s and the thesis's: direct whenever eps' = eps - k ln(1 + c/lambda) > 0.
    /// Just above the threshold eps' is near 0, so the noise jumps there (the discontinuity of
    /// the surveys' ERM sweep at eps = 0.05, lambda = 10).
    Published,
    /// Ablation variant: the branch with the larger eps', i.e. direct only when
    /// eps - k ln(1 + c/lambda) >= eps/2; the noise scale is then monotone in eps.
    LargerEpsPrime,
}

/// [`objective_branch`] under `rule`, for a loss with l'' <= c (c = 1/(2h) for the Huber SVM
/// loss).
pub fn objective_branch_by(
    rule: BranchRule,
    c: f64,
    lambda: f64,
    epsilon: f64,
    n: usize,
    relation: Relation,
) -> ObjectiveBranch {
    // Number of rank-one Hessian terms that differ between neighbours.
    let k = relation.doubled_for_replace(1.0);
    let sens = objective_noise_sensitivity(relation);
    let eps1 = epsilon - k * (1.0 + c / lambda).ln();
    let direct = match rule {
        BranchRule::Published => eps1 > 0.0,
        BranchRule::LargerEpsPrime => eps1 >= epsilon / 2.0,
    };
    if direct {
        ObjectiveBranch {
            direct: true,
            eps_prime: eps1,
            delta: 0.0,
            noise_scale: sens / eps1,
        }
    } else {
        let n = n.max(1) as f64;
        let eps_prime = epsilon / 2.0;
        // Total regulariser lambda + N Delta with k ln(1 + c/(lambda + N Delta)) = eps/2.
        let total = c / ((epsilon / (2.0 * k)).exp() - 1.0);
        ObjectiveBranch {
            direct: false,
            eps_prime,
            delta: total / n - lambda / n,
            noise_scale: sens / eps_prime,
        }
    }
}

/// The lambda above which Algorithm 7 takes the direct branch: eps' > 0 iff
/// lambda > c / (e^(eps/k) - 1), k = 1 (add/remove) or 2 (replace-one).
pub fn objective_lambda_threshold(epsilon: f64, relation: Relation) -> f64 {
    let k = relation.doubled_for_replace(1.0);
    LOGISTIC_C / ((epsilon / k).exp() - 1.0)
}

/// Table 4.1: for every (lambda, eps), whether Algorithm 7 takes the direct branch, and eps'.
pub fn objective_branch_table(
    lambdas: &[f64],
    epsilons: &[f64],
    relation: Relation,
) -> Vec<(f64, f64, bool, f64)> {
    let mut out = Vec::new();
    for &l in lambdas {
        for &e in epsilons {
            // N only enters Delta, not the branch or eps'.
            let b = objective_branch(l, e, 1, relation);
            out.push((l, e, b.direct, b.eps_prime));
        }
    }
    out
}

/// Objective perturbation (Algorithm 7, Chaudhuri et al. 2011 Alg. 2), c = 1/4.
///
/// * Domain: training sets with ||x|| <= 1, y in {-1, +1}; released: theta in R^D.
/// * Relation: the ledger's; constants from [`objective_branch`]. Replace-one is Chaudhuri et
///   al.'s Theorem 9 (the thesis's Algorithm 7); add/remove is proved below.
/// * Mechanism: minimise J(theta) + b.theta/N + (Delta/2)||theta||^2, i.e. the summed
///   F(theta) + b.theta + (N Delta/2)||theta||^2, with b from the L2 mechanism of
///   beta = Delta_b/eps'. Measure: pure eps-DP. Requires the exact minimiser (a fit that
///   stops short of it withdraws the step's guarantee).
/// * Proof sketch (add/remove, X' = X plus x). Write L = lambda + N Delta for the total
///   regulariser: L = lambda on the direct branch and L = c/(e^(eps/2) - 1) on the other, the
///   same for X and X' (N Delta absorbs the change of N). Stationarity gives the bijection
///   b(theta) = -sum_n grad l_n(theta) - L theta, so b_X'(theta) = b_X(theta) - grad l_x(theta),
///   and ||b_X - b_X'|| <= 1 = Delta_b: the noise densities at the two preimages differ by at
///   most exp(eps'). The Jacobians are A and A + l''(.) x x^T with A >= L I, a rank-one PSD
///   update, so their determinants differ by the factor 1 + l'' x^T A^-1 x in [1, 1 + c/L].
///   The density of theta therefore changes by at most exp(eps') (1 + c/L), which is exp(eps)
///   on both branches (direct: eps' = eps - ln(1 + c/lambda); else eps' = eps/2 and
///   ln(1 + c/L) = eps/2). Under replace-one two rank-one terms and two gradients differ,
///   hence k = 2 and Delta_b = 2 (Chaudhuri et al.).
///
/// Any loss with |l'| <= 1 and 0 <= l'' <= c = `loss.curvature()`
/// (Chaudhuri et al. 2011, Theorem 9 with their c; the Huber SVM loss has c = 1/(2h), and its
/// l'' is defined everywhere but at the two kinks, a null set of theta, which the density
/// argument ignores). The proof above holds with 1/4 replaced by c.
pub fn objective_perturbation(
    problem: Problem,
    epsilon: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, Convergence, ObjectiveBranch)> {
    objective_perturbation_by(BranchRule::Published, problem, epsilon, rng, ledger)
}

/// [`objective_perturbation`] with the branch chosen by `rule`.
pub fn objective_perturbation_by(
    rule: BranchRule,
    problem: Problem,
    epsilon: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, Convergence, ObjectiveBranch)> {
    let (b, branch) = objective_noise_by(rule, &problem, epsilon, rng, ledger)?;
    let (theta, conv) = objective_perturbation_with_noise_for(problem, &b, branch.delta);
    void_unless_converged(&conv, ledger);
    Ok((theta, conv, branch))
}

/// The noise vector b of [`objective_perturbation`] and its branch, charged to `ledger`: they
/// depend on lambda, N and eps only, so a caller may draw b before the fit.
pub fn objective_noise(
    problem: &Problem,
    epsilon: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, ObjectiveBranch)> {
    objective_noise_by(BranchRule::Published, problem, epsilon, rng, ledger)
}

/// [`objective_noise`] with the branch chosen by `rule` (the ledger label names a variant rule).
pub fn objective_noise_by(
    rule: BranchRule,
    problem: &Problem,
    epsilon: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, ObjectiveBranch)> {
    problem.check()?;
    crate::privacy::check_epsilon(epsilon)?;
    let (loss, design, lambda) = (problem.loss, problem.design, problem.lambda);
    let n = design.n_rows();
    let relation = ledger.relation();
    let branch = objective_branch_by(rule, loss.curvature(), lambda, epsilon, n, relation);
    // The noise enters the objective; the proof above gives eps for beta = Delta_b / eps'.
    let mech = L2Mechanism::with_map(
        PrivacyMap::pure(objective_noise_sensitivity(relation), epsilon, relation)?,
        branch.eps_prime,
    )?;
    let label = format!(
        "l2 vector mechanism (objective perturbation, Algorithm 7{}{}; eps' = {:.6}, Delta = {:.3e})",
        loss_note(loss),
        match rule {
            BranchRule::Published => "",
            BranchRule::LargerEpsPrime => ", variant larger_eps_prime",
        },
        branch.eps_prime,
        branch.delta
    );
    let b = ledger
        .charge("train", &label, mech)?
        .sample(design.dim(), rng);
    Ok((b, branch))
}

/// argmin J(theta) + b.theta/N + (Delta/2)||theta||^2 for a given noise vector b.
pub fn objective_perturbation_with_noise(
    design: &Design,
    y: &[f64],
    lambda: f64,
    b: &[f64],
    delta: f64,
    settings: &SolverSettings,
) -> (Vec<f64>, Convergence) {
    let problem = Problem {
        loss: Loss::Logistic,
        design,
        y,
        lambda,
        settings,
    };
    objective_perturbation_with_noise_for(problem, b, delta)
}

/// [`objective_perturbation_with_noise`] for any loss.
pub fn objective_perturbation_with_noise_for(
    problem: Problem,
    b: &[f64],
    delta: f64,
) -> (Vec<f64>, Convergence) {
    objective_perturbation_from(problem, b, delta, None)
}

/// [`objective_perturbation_with_noise_for`] from a warm start (e.g. the minimiser at a larger
/// lambda): the same minimiser to the solver tolerance, which is relative to grad F(0).
pub fn objective_perturbation_from(
    problem: Problem,
    b: &[f64],
    delta: f64,
    start: Option<&[f64]>,
) -> (Vec<f64>, Convergence) {
    let n = problem.design.n_rows().max(1) as f64;
    problem.solve_from(
        &Objective {
            design: problem.design,
            y: problem.y,
            reg: problem.lambda / n + delta,
            lin: b.iter().map(|v| v / n).collect(),
            weights: Default::default(),
        },
        start,
    )
}

/// The two sensitivity bounds of the functional mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FmSensitivity {
    /// Zhang et al.'s bound Delta = D^2/4 + 3D.
    #[default]
    Sens1,
    /// The thesis's bound for unit-norm, non-negative x: Delta = D/4 + 3 sqrt(D).
    Sens2,
}

impl FmSensitivity {
    pub fn value(&self, d: usize) -> f64 {
        let d = d as f64;
        match self {
            FmSensitivity::Sens1 => d * d / 4.0 + 3.0 * d,
            FmSensitivity::Sens2 => d / 4.0 + 3.0 * d.sqrt(),
        }
    }
}

/// What the functional mechanism had to do to get a bounded quadratic.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FmInfo {
    pub sensitivity: f64,
    /// rho added to the diagonal (0 if the noisy matrix was already positive definite).
    pub rho: f64,
    /// Non-positive eigenvalues dropped after adding rho I.
    pub trimmed: usize,
}

/// The coefficients of sum_n [(1/2 - y_n) x_n.theta + (1/8)(x_n.theta)^2] with y_n in {0, 1}
/// (from labels in {-1, +1}): the linear vector a and the symmetric matrix M (row-major), so
/// the polynomial is a.theta + theta^T M theta.
pub fn fm_coefficients(design: &Design, y: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let d = design.dim();
    let c: Vec<f64> = y.iter().map(|&v| 0.5 - (v + 1.0) / 2.0).collect();
    let mut a = vec![0.0; d];
    design.weighted_sum(&c, &mut a);
    let w = vec![0.125; design.n_rows()];
    (a, design.weighted_gram(&w))
}

/// The functional mechanism's coefficients of one design, shared across a dataset's cells
/// ([`super::row_caches::SharedWork::fm`]): they are noise-free sufficient statistics of the
/// rows (X^T X, X^T y), so FMsens1 and FMsens2 on one design, and every trial on the same
/// rows, compute them once.
pub(super) struct FmCoefficients(Vec<f64>, Vec<f64>);

impl Footprint for FmCoefficients {
    fn bytes(&self) -> usize {
        (self.0.len() + self.1.len()) * 8
    }
}

/// [`fm_coefficients`] through the memo when the design carries a memo key (the key and the
/// labels determine them), else computed here; bit for bit the same either way.
pub fn shared_fm_coefficients(design: &Design, y: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let Some((design_key, work)) = design.memo() else {
        return fm_coefficients(design, y);
    };
    let key = KeyBuilder::new("fm-coefficients")
        .key(&design_key)
        .f64s(y)
        .finish();
    let shared = work.fm.get_or_compute(key, || {
        let (a, m) = fm_coefficients(design, y);
        FmCoefficients(a, m)
    });
    (shared.0.clone(), shared.1.clone())
}

/// Largest D whose trimming step uses the Jacobi eigen-solver: every stored functional-mechanism
/// result at D <= 100 was computed with it and stays bit for bit; above it (D = 1000, 1500) the
/// Jacobi sweeps took minutes per fit, and the same sum runs on the Householder reduction
/// without forming an eigenvector ([`solve_on_positive_eigenspace`]).
pub const JACOBI_MAX_D: usize = 100;

/// Eigenvalues at or below this fraction of the largest |eigenvalue| are trimmed.
const TRIM_FLOOR: f64 = 1e-12;

/// Minimises a.theta + theta^T M theta: M PD -> theta = -(1/2) M^-1 a; else add rho I; if
/// still not PD, drop the non-positive eigenvalues (minimise on the positive eigenspace).
pub fn fm_minimise(a: &[f64], m: &[f64], d: usize, rho: f64) -> (Vec<f64>, f64, usize) {
    let half_neg: Vec<f64> = a.iter().map(|v| -0.5 * v).collect();
    if let Some(t) = solve_spd(m, d, &half_neg) {
        return (t, 0.0, 0);
    }
    let mut mr = m.to_vec();
    for k in 0..d {
        mr[k * d + k] += rho;
    }
    if let Some(t) = solve_spd(&mr, d, &half_neg) {
        return (t, rho, 0);
    }
    if d > JACOBI_MAX_D {
        let (theta, trimmed) = solve_on_positive_eigenspace(&mr, d, &half_neg, TRIM_FLOOR);
        return (theta, rho, trimmed);
    }
    let (vals, v) = symmetric_eigen(&mr, d);
    let (theta, trimmed) = solve_on_eigenpairs(&vals, &v, d, &half_neg, TRIM_FLOOR);
    (theta, rho, trimmed)
}

/// The functional mechanism (Zhang et al. 2012; thesis appendix B).
///
/// * Domain: training sets with ||x|| <= 1 (FMsens2 also assumes x >= 0), y in {0, 1}
///   (mapped from {-1, +1}); released: the noisy polynomial coefficients, then theta.
/// * Relation: either; the thesis's bounds (Zhang et al.'s Delta = 2 max per-example L1, a
///   replace-one value) are used for both. One example contributes (1/2 - y) x_j to each
///   linear coefficient and (1/8) x_j x_k to each released quadratic one.
/// * Sensitivity: noise is added to the D linear coefficients and to the D(D+1)/2
///   upper-triangular entries of M incl. the diagonal (the lower triangle mirrored). One
///   example's released coefficients have L1 norm <= (1/2)||x||_1 + (1/8) sum_{j<=k} |x_j x_k|
///   <= sqrt(D)/2 + (D + 1)/16 for ||x||_2 <= 1 (any signs), so the replace-one sensitivity is
///   at most sqrt(D) + (D + 1)/8 <= FMsens2 = D/4 + 3 sqrt(D) <= FMsens1 = D^2/4 + 3D: both
///   thesis bounds hold under both relations (loose; kept as published).
/// * Mechanism: Laplace(Delta/eps) on every released coefficient; measure: pure eps-DP.
/// * Post-processing: if the noisy M is not positive definite add rho I, rho = 4 sqrt(2)
///   Delta/eps (4 noise standard deviations), and trim non-positive eigenvalues if still
///   needed; minimise the quadratic in closed form. None of this reads the data.
pub fn functional_mechanism(
    design: &Design,
    y: &[f64],
    epsilon: f64,
    sens: FmSensitivity,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, FmInfo)> {
    check_unit_rows(design)?;
    let d = design.dim();
    let delta = sens.value(d);
    let lap = Laplace::new(delta, epsilon, ledger.relation())?;
    let label = format!(
        "laplace (functional mechanism, {})",
        match sens {
            FmSensitivity::Sens1 => "FMsens1",
            FmSensitivity::Sens2 => "FMsens2",
        }
    );
    let mut lap = ledger.charge("train", &label, lap)?;
    let (mut a, mut m) = shared_fm_coefficients(design, y);
    for v in a.iter_mut() {
        *v += lap.sample(rng);
    }
    for i in 0..d {
        for j in i..d {
            let e = lap.sample(rng);
            m[i * d + j] += e;
            if j != i {
                m[j * d + i] += e;
            }
        }
    }
    let rho = 4.0 * std::f64::consts::SQRT_2 * delta / epsilon;
    let (theta, rho_used, trimmed) = fm_minimise(&a, &m, d, rho);
    Ok((
        theta,
        FmInfo {
            sensitivity: delta,
            rho: rho_used,
            trimmed,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output and objective perturbation keep their guarantee when the solver reaches the
    /// minimiser and withdraw it, saying why, when it stops after one iteration.
    #[test]
    fn a_fit_short_of_the_minimiser_withdraws_the_guarantee() {
        let (x, y) = super::super::erm::toy_rows(40);
        let design = Design::dense(x.view());
        let run = |settings: &SolverSettings, objective: bool| {
            let problem = Problem {
                loss: Loss::Logistic,
                design: &design,
                y: &y,
                lambda: 0.1,
                settings,
            };
            let mut ledger = Ledger::new(Relation::AddRemove);
            let mut rng = crate::rng::rng_from(&["test", "convergence"]);
            let conv = if objective {
                objective_perturbation(problem, 1.0, &mut rng, &mut ledger)
                    .unwrap()
                    .1
            } else {
                output_perturbation(problem, 1.0, &mut rng, &mut ledger)
                    .unwrap()
                    .1
            };
            (conv.converged, ledger.entries[0].clone())
        };
        let short = SolverSettings {
            tol: 1e-14,
            max_iter: 1,
            ..SolverSettings::default()
        };
        for objective in [false, true] {
            let (converged, entry) = run(&SolverSettings::default(), objective);
            assert!(converged && entry.private, "{entry:?}");
            let (converged, entry) = run(&short, objective);
            assert!(!converged && !entry.private, "{entry:?}");
            let note = entry.note.unwrap_or_default();
            assert!(note.contains("needs the exact minimiser"), "{note}");
        }
    }
}
