//! The regularised empirical risk F(θ) = (1/N) Σ ℓ(y_i θ·x_i) + (reg/2)‖θ‖² + lin·θ for any
//! [`Loss`]: the logistic loss goes to the tuned solvers of [`super::solver`] (unchanged), the
//! Huber SVM loss to the damped Newton method below. Output and objective perturbation call
//! [`minimise`], so both mechanisms serve both losses with one proof each.

use super::loss::Loss;
use super::solver::{Convergence, Objective, Solver, SolverSettings, norm};
use crate::learners::logistic::linalg::solve_spd;

/// argmin of `objective`'s F with the per-example loss `loss` (the objective's design, labels,
/// regulariser and linear term).
pub fn minimise(
    loss: Loss,
    objective: &Objective,
    settings: &SolverSettings,
) -> (Vec<f64>, Convergence) {
    minimise_from(loss, objective, settings, None)
}

/// [`minimise`] from a warm start: the logistic solvers take it (the tolerance is relative to
/// grad F(0), so the minimiser is the cold start's to the tolerance); the Huber SVM's damped
/// Newton method starts from 0 regardless.
pub fn minimise_from(
    loss: Loss,
    objective: &Objective,
    settings: &SolverSettings,
    start: Option<&[f64]>,
) -> (Vec<f64>, Convergence) {
    match loss {
        Loss::Logistic => objective.minimise_from(settings, start),
        Loss::Huber { .. } => newton(loss, objective, settings),
    }
}

/// F, its gradient and the per-row curvatures ℓ''(m_i)/N at θ.
fn derivatives(loss: Loss, o: &Objective, theta: &[f64], g: &mut [f64], w: &mut [f64]) -> f64 {
    let mut z = vec![0.0; o.design.n_rows()];
    let f = value(loss, o, theta, &mut z);
    gradient_from_margins(loss, o, theta, &z, g, w);
    f
}

/// F at θ, leaving θ's margins in `z` (one pass over the rows: what a backtracking step needs
/// to be accepted or refused).
fn value(loss: Loss, o: &Objective, theta: &[f64], z: &mut [f64]) -> f64 {
    let n = o.design.n_rows().max(1) as f64;
    o.design.margins(theta, z);
    let mut f = 0.0;
    for (&y, &zi) in o.y.iter().zip(z.iter()) {
        f += loss.value(y * zi);
    }
    let mut sq = 0.0;
    let mut lin = 0.0;
    for (k, &t) in theta.iter().enumerate() {
        let l = o.lin.get(k).copied().unwrap_or(0.0);
        sq += t * t;
        lin += l * t;
    }
    f / n + 0.5 * o.reg * sq + lin
}

/// grad F and the per-row curvatures ℓ''(m_i)/N at θ from its margins `z` (the second pass).
fn gradient_from_margins(
    loss: Loss,
    o: &Objective,
    theta: &[f64],
    z: &[f64],
    g: &mut [f64],
    w: &mut [f64],
) {
    let n = o.design.n_rows().max(1) as f64;
    let mut c = vec![0.0; z.len()];
    for i in 0..z.len() {
        let m = o.y[i] * z[i];
        c[i] = o.y[i] * loss.derivative(m) / n;
        w[i] = loss.second_derivative(m) / n;
    }
    o.design.weighted_sum(&c, g);
    for k in 0..g.len() {
        let l = o.lin.get(k).copied().unwrap_or(0.0);
        g[k] += o.reg * theta[k] + l;
    }
}

/// Steps in a row without progress after which [`newton`] stops.
const STALLED_STEPS: usize = 2;

/// Newton's method with Armijo backtracking on the generalised Hessian X^T W X + reg I (the
/// Huber loss is C¹ with a piecewise-constant ℓ'', so Newton reaches the exact minimiser of a
/// strongly convex F in few steps). Same stopping rule as [`SolverSettings`], and it stops
/// after [`STALLED_STEPS`] steps in a row that lower neither F nor ||grad F|| (recorded as not
/// converged when ||grad F|| is still above the tolerance).
fn newton(loss: Loss, o: &Objective, settings: &SolverSettings) -> (Vec<f64>, Convergence) {
    let d = o.design.dim();
    let mut theta = vec![0.0; d];
    let (mut g, mut w) = (vec![0.0; d], vec![0.0; o.design.n_rows()]);
    let mut f = derivatives(loss, o, &theta, &mut g, &mut w);
    let g0 = norm(&g);
    let target = settings.tol * g0.max(1e-300);
    let (mut gn, mut it) = (g0, 0);
    let (mut gt, mut wt) = (g.clone(), w.clone());
    let mut zt = vec![0.0; o.design.n_rows()];
    let mut stalled = 0;
    while gn > target && it < settings.max_iter {
        it += 1;
        let mut h = o.design.weighted_gram(&w);
        for k in 0..d {
            h[k * d + k] += o.reg;
        }
        let neg: Vec<f64> = g.iter().map(|v| -v).collect();
        let p = solve_spd(&h, d, &neg).unwrap_or(neg);
        let slope: f64 = g.iter().zip(&p).map(|(a, b)| a * b).sum();
        let mut t = 1.0;
        // A refused step costs one pass (F alone); the gradient, the second pass, only at the
        // step taken: the same values as computing both at every trial point.
        let accepted = loop {
            let trial: Vec<f64> = theta.iter().zip(&p).map(|(a, b)| a + t * b).collect();
            let ft = value(loss, o, &trial, &mut zt);
            if ft <= f + 1e-4 * t * slope || t < 1e-12 {
                break (ft <= f).then_some((trial, ft));
            }
            t *= 0.5;
        };
        let Some((trial, ft)) = accepted else { break };
        gradient_from_margins(loss, o, &trial, &zt, &mut gt, &mut wt);
        let progress = ft < f || norm(&gt) < gn;
        (theta, f) = (trial, ft);
        std::mem::swap(&mut g, &mut gt);
        std::mem::swap(&mut w, &mut wt);
        gn = norm(&g);
        // A step that lowers neither F nor ||grad F|| means F is stationary to rounding (the
        // kinks of ℓ'' can hold ||grad F|| just above the tolerance): the next ones would
        // repeat it at up to 40 passes each (issue 52).
        stalled = if progress { 0 } else { stalled + 1 };
        if stalled == STALLED_STEPS {
            break;
        }
    }
    let conv = Convergence {
        solver: Solver::Newton,
        iterations: it,
        grad_norm: gn,
        initial_grad_norm: g0,
        objective: f,
        converged: gn <= target.max(1e-12 * g0.max(1.0)),
    };
    (theta, conv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::logistic::Design;
    use ndarray::Array2;

    /// The Huber SVM minimiser is stationary (central-difference gradient of F is 0) and the
    /// logistic path is the solver's own.
    #[test]
    fn huber_minimiser_is_stationary_and_logistic_is_the_solvers() {
        let x = Array2::from_shape_fn((60, 3), |(i, j)| {
            (((i * 7 + j * 3) % 11) as f64 - 5.0) / 12.0
        });
        let y: Vec<f64> = (0..60)
            .map(|i| if (i * 5) % 7 < 3 { 1.0 } else { -1.0 })
            .collect();
        let design = Design::dense(x.view());
        let o = Objective {
            design: &design,
            y: &y,
            reg: 0.05,
            lin: vec![0.01, -0.02, 0.0],
            weights: Default::default(),
        };
        let s = SolverSettings::default();
        let (theta, conv) = minimise(Loss::HUBER_SVM, &o, &s);
        assert!(conv.converged, "{conv:?}");
        let f = |t: &[f64]| {
            let (mut g, mut w) = (vec![0.0; 3], vec![0.0; 60]);
            derivatives(Loss::HUBER_SVM, &o, t, &mut g, &mut w)
        };
        for k in 0..3 {
            let (mut a, mut b) = (theta.clone(), theta.clone());
            a[k] += 1e-6;
            b[k] -= 1e-6;
            assert!(((f(&a) - f(&b)) / 2e-6).abs() < 1e-6, "coordinate {k}");
        }
        assert_eq!(minimise(Loss::Logistic, &o, &s).0, o.minimise(&s).0);
    }
}
