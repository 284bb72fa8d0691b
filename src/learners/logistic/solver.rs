//! Exact minimisation of the (possibly perturbed) regularised logistic objective
//!
//! F(theta) = (1/N) sum_n log(1 + exp(-y_n theta.x_n)) + (reg/2) ||theta||^2 + lin.theta,
//!
//! which covers SPEC 5's J (reg = lambda/N, lin = 0) and objective perturbation
//! (reg = lambda/N + Delta, lin = b/N). F is strictly convex for reg > 0, so Newton's method
//! with a backtracking line search converges to the unique minimiser. Three methods: dense
//! Newton (small D), truncated Newton-CG on Hessian-vector products (large D; no D x D
//! matrix) and L-BFGS (an independent cross-check); `Auto` picks by a cost model.
//!
//! Every method gets one saving: a binary design with repeated examples is solved on its
//! distinct rows, each weighted by its copies ([`Design::grouped`]; the same F, so the same
//! minimiser to the tolerance: Adult keeps 80% of its rows, a 10-feature selection of it under
//! 200).

use super::design::{Design, Grouped, split_passes};
use super::linalg::{cholesky, cholesky_solve};
use super::lockstep;
use crate::memo::{Footprint, Key, KeyBuilder};
use serde::{Deserialize, Serialize};

/// A minimiser theta and how the run that found it ended.
pub type Solution = (Vec<f64>, Convergence);

/// `$cold(settings)`: `$from(settings, None)`, a solver's run from theta = 0.
macro_rules! from_zero {
    ($($(#[$doc:meta])* $cold:ident => $from:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $cold(&self, settings: &SolverSettings) -> Solution {
                self.$from(settings, None)
            }
        )*
    };
}

/// An exact minimiser of a noise-free objective, shared across a dataset's cells in
/// [`super::row_caches::SharedWork::fits`].
pub(super) struct SharedFit(Solution);

impl Footprint for SharedFit {
    fn bytes(&self) -> usize {
        self.0.0.len() * 8
    }
}

/// log(1 + exp(x)) without overflow or loss of precision.
#[inline]
pub fn log1pexp(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// 1 / (1 + exp(-x)) without overflow.
#[inline]
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// Which minimiser to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Solver {
    /// L-BFGS on dense data with D > 16, else the cheaper of Newton and Newton-CG per
    /// iteration ([`Objective::choose`]'s cost model).
    #[default]
    Auto,
    /// Newton with the dense D x D Hessian and a Cholesky solve: for small D.
    Newton,
    /// Truncated Newton (TRON-style, as LIBLINEAR): preconditioned conjugate gradients on
    /// Hessian-vector products X^T (w (X v)), two data passes each; no D x D matrix.
    NewtonCg,
    /// L-BFGS (memory 10).
    Lbfgs,
}

impl Solver {
    /// The code recorded in a trial's `solver` metric (metrics are numbers).
    pub fn code(self) -> f64 {
        match self {
            Solver::Auto => 0.0,
            Solver::Newton => 1.0,
            Solver::NewtonCg => 2.0,
            Solver::Lbfgs => 3.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Solver::Auto => "auto",
            Solver::Newton => "newton",
            Solver::NewtonCg => "newton_cg",
            Solver::Lbfgs => "lbfgs",
        }
    }
}

/// Dense designs with more columns than this go to L-BFGS under `Auto` (see
/// [`Objective::choose`]).
pub const LBFGS_MIN_DENSE_D: usize = 16;

/// Default relative gradient tolerance (see [`SolverSettings`]).
pub const DEFAULT_TOL: f64 = 1e-10;

/// Solver settings: stop when ||grad F|| <= tol * max(||grad F(0)||, 1e-300). The reference
/// point is always theta = 0, so warm-started fits stop at the same accuracy as cold ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SolverSettings {
    pub solver: Solver,
    pub tol: f64,
    pub max_iter: usize,
}

impl Default for SolverSettings {
    fn default() -> Self {
        SolverSettings {
            solver: Solver::Auto,
            tol: DEFAULT_TOL,
            max_iter: 200,
        }
    }
}

/// How a fit ended (recorded for every fit: the privacy proofs assume the exact minimiser).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Convergence {
    pub solver: Solver,
    pub iterations: usize,
    /// Final ||grad F||_2.
    pub grad_norm: f64,
    /// ||grad F|| at the starting point (the tolerance is relative to it).
    pub initial_grad_norm: f64,
    pub objective: f64,
    pub converged: bool,
}

/// The objective F on a design with labels y in {-1, +1}.
#[derive(Debug, Clone)]
pub struct Objective<'d, 'a> {
    pub design: &'d Design<'a>,
    pub y: &'d [f64],
    /// Coefficient of (1/2)||theta||^2.
    pub reg: f64,
    /// Linear term (empty = zero).
    pub lin: Vec<f64>,
    /// Per-row loss weights (default: every row is one example).
    pub weights: RowWeights,
}

/// How many examples each design row stands for: rows of a grouped design
/// ([`Design::grouped`]) stand for their identical copies. Empty: one each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowWeights {
    count: Vec<f64>,
    total: f64,
}

impl RowWeights {
    pub fn new(count: Vec<f64>) -> Self {
        let total = count.iter().sum();
        RowWeights { count, total }
    }

    pub fn is_empty(&self) -> bool {
        self.count.is_empty()
    }
}

impl<'d, 'a> Objective<'d, 'a> {
    /// SPEC 5's J with the thesis's lambda.
    pub fn regularised(design: &'d Design<'a>, y: &'d [f64], lambda: f64) -> Self {
        let n = design.n_rows().max(1) as f64;
        Objective {
            design,
            y,
            reg: lambda / n,
            lin: Vec::new(),
            weights: RowWeights::default(),
        }
    }

    /// The number of examples N (the loss is their mean).
    fn n(&self) -> f64 {
        if self.weights.is_empty() {
            self.design.n_rows().max(1) as f64
        } else {
            self.weights.total.max(1.0)
        }
    }

    /// The weight of row i (1 unless the design is grouped; a product with 1 is exact, so an
    /// ungrouped objective computes the same bits as without weights).
    #[inline]
    fn weight(&self, i: usize) -> f64 {
        self.weights.count.get(i).copied().unwrap_or(1.0)
    }

    /// F from the margins z = X theta.
    fn value_from_margins(&self, theta: &[f64], z: &[f64]) -> f64 {
        let loss: f64 = z
            .iter()
            .zip(self.y)
            .enumerate()
            .map(|(i, (&zi, &yi))| log1pexp(-yi * zi) * self.weight(i))
            .sum();
        self.finish_value(theta, loss)
    }

    fn finish_value(&self, theta: &[f64], loss: f64) -> f64 {
        let sq: f64 = theta.iter().map(|t| t * t).sum();
        let lin: f64 = self.lin.iter().zip(theta).map(|(b, t)| b * t).sum();
        loss / self.n() + 0.5 * self.reg * sq + lin
    }

    /// F from the margins, storing e_i = exp(-|y_i z_i|) for [`Self::derivatives_from_e`].
    fn value_storing_e(&self, theta: &[f64], z: &[f64], e: &mut [f64]) -> f64 {
        let mut loss = 0.0;
        for (i, ((ei, &zi), &yi)) in e.iter_mut().zip(z).zip(self.y).enumerate() {
            let m = yi * zi;
            let x = (-m.abs()).exp();
            *ei = x;
            loss += loss_term(m, x) * self.weight(i);
        }
        self.finish_value(theta, loss)
    }

    /// F from the margins and their stored e_i = exp(-|y_i z_i|) (no exponentials).
    fn value_from_e(&self, theta: &[f64], z: &[f64], e: &[f64]) -> f64 {
        let mut loss = 0.0;
        for (i, ((&x, &zi), &yi)) in e.iter().zip(z).zip(self.y).enumerate() {
            loss += loss_term(yi * zi, x) * self.weight(i);
        }
        self.finish_value(theta, loss)
    }

    /// Gradient coefficients c_i = -y_i sigma(-m_i)/N and Hessian weights
    /// w_i = sigma(m_i) sigma(-m_i)/N from e_i = exp(-|m_i|), m_i = y_i z_i.
    fn derivatives_from_e(&self, z: &[f64], e: &[f64], c: &mut [f64], w: &mut [f64]) {
        let inv_n = 1.0 / self.n();
        for i in 0..z.len() {
            let yi = self.y[i];
            (c[i], w[i]) = row_derivatives(yi, yi * z[i], e[i], inv_n, self.weight(i));
        }
    }

    /// F(theta).
    pub fn value(&self, theta: &[f64]) -> f64 {
        let mut z = vec![0.0; self.design.n_rows()];
        self.design.margins(theta, &mut z);
        self.value_from_margins(theta, &z)
    }

    /// grad F(theta) from the margins; `c` is scratch of length N.
    fn gradient_from_margins(&self, theta: &[f64], z: &[f64], c: &mut [f64], g: &mut [f64]) {
        let inv_n = 1.0 / self.n();
        for (i, ((ci, &zi), &yi)) in c.iter_mut().zip(z).zip(self.y).enumerate() {
            *ci = -yi * sigmoid(-yi * zi) * inv_n * self.weight(i);
        }
        self.design.weighted_sum(c, g);
        for (k, gk) in g.iter_mut().enumerate() {
            *gk += self.reg * theta[k] + self.lin.get(k).copied().unwrap_or(0.0);
        }
    }

    /// grad F(theta).
    pub fn gradient(&self, theta: &[f64]) -> Vec<f64> {
        let n = self.design.n_rows();
        let mut z = vec![0.0; n];
        let mut c = vec![0.0; n];
        let mut g = vec![0.0; theta.len()];
        self.design.margins(theta, &mut z);
        self.gradient_from_margins(theta, &z, &mut c, &mut g);
        g
    }

    from_zero! {
        /// Minimises F from theta = 0.
        minimise => minimise_from;
        /// Newton's method from theta = 0.
        newton => newton_from;
        /// L-BFGS from theta = 0.
        lbfgs => lbfgs_from;
        /// Newton-CG from theta = 0.
        newton_cg => newton_cg_from;
    }

    /// Minimises F from `start` (a warm start, e.g. the fit at a neighbouring lambda) or 0.
    /// A cold start of a noise-free objective (no linear term) on a memoised design is
    /// computed once per [`Self::memo_key`] and shared (see [`crate::memo`]).
    pub fn minimise_from(&self, settings: &SolverSettings, start: Option<&[f64]>) -> Solution {
        if start.is_none()
            && let Some(key) = self.memo_key(settings)
            && let Some((_, work)) = self.design.memo()
        {
            // Waiting on a fit another thread computes, this thread stands aside from its
            // lockstep group (if any); computing it, it is back in (see `lockstep`).
            let fit = lockstep::aside(|| {
                work.fits.get_or_compute(key, || {
                    lockstep::within(|| SharedFit(self.solve(settings, None)))
                })
            });
            return fit.0.clone();
        }
        self.solve(settings, start)
    }

    /// The key of a shareable fit: the design's memo key (rows' content, columns, encoding,
    /// scales), the labels, the regularisation and the solver settings. `None` when F has a
    /// linear term (objective perturbation's noise) or the design is not memoised.
    pub fn memo_key(&self, settings: &SolverSettings) -> Option<Key> {
        if !self.lin.is_empty() {
            return None;
        }
        let design = self.design.key()?;
        Some(
            KeyBuilder::new("lr-fit")
                .key(design)
                .f64s(self.y)
                .f64(self.reg)
                .str(settings.solver.name())
                .f64(settings.tol)
                .u64(settings.max_iter as u64)
                .finish(),
        )
    }

    /// Minimises on the grouped rows when identical examples make that pay (the same F: a
    /// row of weight k is k examples), else on the rows as they are.
    fn solve(&self, settings: &SolverSettings, start: Option<&[f64]>) -> Solution {
        // A fit called from outside any pool (a library user's single fit, the benches) has the
        // pool's threads to itself: its passes split across them ([`split_passes`]). Designs
        // that would not split stay on the caller's thread.
        if rayon::current_thread_index().is_none() && self.design.splittable() {
            return split_passes(self.design, |design| {
                let split = Objective {
                    design,
                    lin: self.lin.clone(),
                    weights: self.weights.clone(),
                    ..*self
                };
                split.solve(settings, start)
            });
        }
        if self.weights.is_empty()
            && let Some(g) = self.design.grouped_cached(self.y)
        {
            return self.on_grouped(&g).solve_rows(settings, start);
        }
        self.solve_rows(settings, start)
    }

    /// The same F on the grouped rows `g` of this objective's design and labels.
    pub fn on_grouped<'g>(&self, g: &'g Grouped<'a>) -> Objective<'g, 'a> {
        Objective {
            design: &g.design,
            y: &g.y,
            reg: self.reg,
            lin: self.lin.clone(),
            weights: RowWeights::new(g.count.clone()),
        }
    }

    fn solve_rows(&self, settings: &SolverSettings, start: Option<&[f64]>) -> Solution {
        match self.choose(settings.solver) {
            Solver::Lbfgs => self.lbfgs_from(settings, start),
            Solver::NewtonCg => self.newton_cg_from(settings, start),
            _ => self.newton_from(settings, start),
        }
    }

    /// The solver `Auto` resolves to. Dense designs with D > [`LBFGS_MIN_DENSE_D`] take
    /// L-BFGS: on well-scaled dense data it needs about as many iterations as Newton-CG's outer
    /// loop at two passes each (measured on the toy Gaussian, N = 65536, lambda 0.01 to 1000:
    /// 2-3x faster than Newton-CG and 3x faster than Newton at D = 50 and 100, level at D = 10).
    /// Sparse binary designs have rare columns (Adult: 103 L-BFGS iterations against Newton's
    /// 12), so they choose between the Newton methods by flops per iteration: Newton pays one
    /// weighted Gram matrix ([`Design::gram_cost`]) and a Cholesky (D^3/6); Newton-CG about 12
    /// Hessian-vector products of two passes over the non-zeros each. Both converge in a
    /// similar number of outer iterations, so the cheaper iteration wins; Newton is also capped
    /// at D <= 4000 (the D x D matrix).
    pub fn choose(&self, solver: Solver) -> Solver {
        if solver != Solver::Auto {
            return solver;
        }
        let d = self.design.dim() as f64;
        if self.design.encoding().is_none() && self.design.dim() > LBFGS_MIN_DENSE_D {
            return Solver::Lbfgs;
        }
        let pass = (self.design.nnz() + self.design.n_rows()) as f64;
        let newton = self.design.gram_cost() + d * d * d / 6.0;
        let cg = 12.0 * 2.0 * pass;
        if d <= 4000.0 && newton <= cg {
            Solver::Newton
        } else {
            Solver::NewtonCg
        }
    }

    /// z = X theta for L-BFGS and the gradient, shared with the other fits of this thread's
    /// [`lockstep`] group, if it is in one; the same bits either way.
    fn pass_margins(&self, theta: &[f64], z: &mut Vec<f64>) {
        lockstep::margins(self.design, theta, z);
    }

    /// g = X^T c, shared as [`Self::pass_margins`].
    fn pass_weighted_sum(&self, c: &[f64], g: &mut [f64]) {
        lockstep::weighted_sum(self.design, c, g);
    }

    /// ||grad F(0)||: the reference of the relative tolerance.
    fn initial_grad_norm(&self, c: &mut [f64], g: &mut [f64]) -> f64 {
        let inv_n = 1.0 / self.n();
        // At theta = 0 every margin is 0: c_i = -y_i sigma(0) / N.
        for (i, (ci, &yi)) in c.iter_mut().zip(self.y).enumerate() {
            *ci = -yi * 0.5 * inv_n * self.weight(i);
        }
        self.pass_weighted_sum(c, g);
        for (k, gk) in g.iter_mut().enumerate() {
            *gk += self.lin.get(k).copied().unwrap_or(0.0);
        }
        norm(g)
    }

    /// Truncated Newton with a line search (LIBLINEAR's Newton method since 2.20): each step
    /// solves H p = -g by diagonally preconditioned CG to a relative residual
    /// min(0.5, sqrt(||g|| / ||g(0)||)) (superlinear convergence), then backtracks on F.
    /// Allocation-free inside the loop; H is never formed.
    pub fn newton_cg_from(&self, settings: &SolverSettings, start: Option<&[f64]>) -> Solution {
        let (n, d) = (self.design.n_rows(), self.design.dim());
        let (mut x, mut scratch) = self.iterates(start);
        let mut u = vec![0.0; n];
        let (mut g, mut p, mut r, mut q) = (vec![0.0; d], vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        let (mut hq, mut m, mut sd) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        let (mut gn, g0) = self.start_at(start, &mut x, &mut g);
        let target = settings.tol * g0.max(1e-300);
        let mut it = 0;
        let max_cg = d.max(10) * 2;
        while gn > target && it < settings.max_iter {
            it += 1;
            self.design.weighted_sq_sum(&x.w, &mut m);
            m.iter_mut().for_each(|v| *v += self.reg);
            // PCG on H p = -g from p = 0.
            let eta = (gn / g0.max(1e-300)).sqrt().min(0.5);
            p.iter_mut().for_each(|v| *v = 0.0);
            for k in 0..d {
                r[k] = -g[k];
                q[k] = r[k] / m[k];
            }
            let mut rz = dot(&r, &q);
            sd.copy_from_slice(&q);
            for _ in 0..max_cg {
                self.design.margins(&sd, &mut u);
                for (ui, &wi) in u.iter_mut().zip(&x.w) {
                    *ui *= wi;
                }
                self.design.weighted_sum(&u, &mut hq);
                axpy(self.reg, &sd, &mut hq);
                let shs = dot(&sd, &hq);
                if shs <= 0.0 {
                    break;
                }
                let alpha = rz / shs;
                axpy(alpha, &sd, &mut p);
                axpy(-alpha, &hq, &mut r);
                if norm(&r) <= eta * gn {
                    break;
                }
                for k in 0..d {
                    q[k] = r[k] / m[k];
                }
                let rz_new = dot(&r, &q);
                let beta = rz_new / rz;
                rz = rz_new;
                for k in 0..d {
                    sd[k] = q[k] + beta * sd[k];
                }
            }
            let mut gp = dot(&g, &p);
            if gp.is_nan() || gp >= 0.0 {
                p.iter_mut().zip(&g).for_each(|(pk, gk)| *pk = -gk);
                gp = -gn * gn;
            }
            self.design.margins(&p, &mut u);
            if !self.backtrack(&mut x, &p, &u, gp, &mut scratch) {
                break;
            }
            gn = self.gradient_at(&x, &mut g);
        }
        x.finish(self, Solver::NewtonCg, it, gn, g0, target)
    }

    /// The Newton methods' line search: halves t from 1 until F(theta + t p) satisfies
    /// Armijo's condition F + 1e-4 t g.p, or accepts a full step whose predicted change is at
    /// rounding level. `u` = X p, so a trial point costs O(N), not a pass over the data. Each
    /// trial first takes the slope phi'(t) of phi(t) = F(theta + t p) with the derivatives
    /// there (exponentials only): F is convex, so phi(t) <= phi(0) + t phi'(t), and
    /// phi'(t) <= 1e-4 g.p proves Armijo's condition without F's logarithms; only otherwise is
    /// F evaluated. On success `x` holds the new point with its derivatives (`scratch` is
    /// workspace); false after 60 halvings.
    fn backtrack(
        &self,
        x: &mut Iterate,
        p: &[f64],
        u: &[f64],
        gp: f64,
        scratch: &mut Iterate,
    ) -> bool {
        let (tp, pp) = (dot(&x.theta, p), dot(p, p));
        let lp: f64 = self.lin.iter().zip(p).map(|(b, v)| b * v).sum();
        let mut t = 1.0;
        for _ in 0..60 {
            for ((a, &b), &v) in scratch.z.iter_mut().zip(&x.z).zip(u) {
                *a = b + t * v;
            }
            for ((a, &b), &v) in scratch.theta.iter_mut().zip(&x.theta).zip(p) {
                *a = b + t * v;
            }
            let slope = self.derivatives_at(scratch, u) + self.reg * (tp + t * pp) + lp;
            let accept = if slope <= 1e-4 * gp {
                scratch.f = f64::NAN;
                true
            } else {
                let f = self.value_of(x);
                scratch.f = self.value_from_e(&scratch.theta, &scratch.z, &scratch.e);
                scratch.f <= f + 1e-4 * t * gp || (t == 1.0 && gp.abs() <= 1e-13 * (1.0 + f.abs()))
            };
            if accept {
                std::mem::swap(x, scratch);
                return true;
            }
            t *= 0.5;
        }
        false
    }

    /// F at `x`, evaluated from its stored e when a line search accepted x by its slope alone.
    fn value_of(&self, x: &mut Iterate) -> f64 {
        if x.f.is_nan() {
            x.f = self.value_from_e(&x.theta, &x.z, &x.e);
        }
        x.f
    }

    /// Sets e_i = exp(-|m_i|), c_i and w_i (see [`Self::derivatives_from_e`]) at `x`'s margins
    /// in one O(N) pass; returns sum_i c_i u_i, the loss part of the slope along u.
    /// The exponentials are per row, so the rows split across threads ([`Design::halves`]);
    /// the slope is then summed in row order, bit for bit the one-thread sum.
    fn derivatives_at(&self, x: &mut Iterate, u: &[f64]) -> f64 {
        let n = u.len();
        let (z, e, c, w) = (&x.z[..n], &mut x.e[..n], &mut x.c[..n], &mut x.w[..n]);
        match self.design.halves().filter(|_| n == self.design.n_rows()) {
            Some(h) => {
                let (z0, z1) = z.split_at(h.row);
                let (e0, e1) = e.split_at_mut(h.row);
                let (c0, c1) = c.split_at_mut(h.row);
                let (w0, w1) = w.split_at_mut(h.row);
                rayon::join(
                    || self.derivatives_of(0, z0, e0, c0, w0),
                    || self.derivatives_of(h.row, z1, e1, c1, w1),
                );
            }
            None => self.derivatives_of(0, z, e, c, w),
        }
        let mut slope = 0.0;
        for (&ci, &ui) in c.iter().zip(u) {
            slope += ci * ui;
        }
        slope
    }

    /// e_i = exp(-|m_i|), c_i and w_i for the rows `first..first + z.len()` at margins `z`.
    fn derivatives_of(&self, first: usize, z: &[f64], e: &mut [f64], c: &mut [f64], w: &mut [f64]) {
        let inv_n = 1.0 / self.n();
        for (k, &zk) in z.iter().enumerate() {
            let i = first + k;
            let yi = self.y[i];
            let m = yi * zk;
            e[k] = (-m.abs()).exp();
            (c[k], w[k]) = row_derivatives(yi, m, e[k], inv_n, self.weight(i));
        }
    }

    /// Newton's method with an Armijo backtracking line search, from `start` or 0.
    pub fn newton_from(&self, settings: &SolverSettings, start: Option<&[f64]>) -> Solution {
        let (n, d) = (self.design.n_rows(), self.design.dim());
        let (mut x, mut scratch) = self.iterates(start);
        let mut xp = vec![0.0; n];
        let mut g = vec![0.0; d];
        let mut p = vec![0.0; d];
        let (mut gn, g0) = self.start_at(start, &mut x, &mut g);
        let target = settings.tol * g0.max(1e-300);
        let mut it = 0;
        // Cholesky factor of the last Hessian; reused once the gradient is small (the
        // Hessian then barely changes, so the step is still near-Newton: fast linear
        // convergence to the same exact minimiser, since the gradient is always exact).
        // Each factor also serves two consecutive steps (Shamanskii's variant of Newton:
        // order-3 convergence per Hessian at half the Hessian cost).
        // `factor` is one buffer, refilled in place (no allocation per Hessian).
        let mut factor = Vec::with_capacity(d * d);
        let (mut have_factor, mut computed) = (false, false);
        let mut fresh = false;
        let mut uses = 0;
        while gn > target && it < settings.max_iter {
            it += 1;
            let reuse = computed && (gn <= 1e-4 * g0 || uses < 2) && !fresh;
            uses = if reuse { uses + 1 } else { 1 };
            if !reuse {
                self.design.weighted_gram_into(&x.w, &mut factor);
                for k in 0..d {
                    factor[k * d + k] += self.reg;
                }
                have_factor = cholesky(&mut factor, d);
                computed = true;
            }
            fresh = false;
            p.iter_mut().zip(&g).for_each(|(pk, gk)| *pk = -gk);
            if have_factor {
                cholesky_solve(&factor, d, &mut p);
            }
            // else: numerically singular Hessian (reg ~ 0): steepest descent.
            let gp: f64 = g.iter().zip(&p).map(|(a, b)| a * b).sum();
            self.design.margins(&p, &mut xp);
            if !self.backtrack(&mut x, &p, &xp, gp, &mut scratch) {
                if reuse {
                    fresh = true;
                    continue;
                }
                break;
            }
            gn = self.gradient_at(&x, &mut g);
        }
        x.finish(self, Solver::Newton, it, gn, g0, target)
    }

    /// The gradient g at `x` from its stored c; returns ||g||.
    fn gradient_at(&self, x: &Iterate, g: &mut [f64]) -> f64 {
        self.finish_gradient(&x.theta, &x.c, g);
        norm(g)
    }

    /// The iterate at `start` (or 0) and a scratch one, for a solver's run.
    fn iterates(&self, start: Option<&[f64]>) -> (Iterate, Iterate) {
        let (n, d) = (self.design.n_rows(), self.design.dim());
        (Iterate::new(start, n, d), Iterate::new(None, n, d))
    }

    /// Sets up `x` (from `start` or 0): F, e and the gradient; returns (||g||, g0), g0 being
    /// the gradient norm at 0 the tolerance is relative to.
    fn start_at(&self, start: Option<&[f64]>, x: &mut Iterate, g: &mut [f64]) -> (f64, f64) {
        let g0 = match start {
            Some(_) => {
                let g0 = self.initial_grad_norm(&mut x.c, g);
                self.pass_margins(&x.theta, &mut x.z);
                Some(g0)
            }
            None => None,
        };
        x.f = self.value_storing_e(&x.theta, &x.z, &mut x.e);
        self.derivatives_from_e(&x.z, &x.e, &mut x.c, &mut x.w);
        let gn = self.gradient_at(x, g);
        (gn, g0.unwrap_or(gn))
    }

    /// g = X^T c + reg theta + lin.
    fn finish_gradient(&self, theta: &[f64], c: &[f64], g: &mut [f64]) {
        self.pass_weighted_sum(c, g);
        for (k, gk) in g.iter_mut().enumerate() {
            *gk += self.reg * theta[k] + self.lin.get(k).copied().unwrap_or(0.0);
        }
    }

    /// phi(t) = F(theta + t p) and its first two derivatives along `line`: O(N), no pass over
    /// the data. Stores the trial margins z + t u and e_i = exp(-|m_i|) in `zt`, `et`.
    fn along(&self, t: f64, line: &Line, zt: &mut [f64], et: &mut [f64]) -> (f64, f64, f64) {
        let (z, u) = (line.z, line.u);
        let (mut loss, mut d1, mut d2) = (0.0, 0.0, 0.0);
        for i in 0..z.len() {
            let (yi, ui) = (self.y[i], u[i]);
            let zi = z[i] + t * ui;
            let m = yi * zi;
            let x = (-m.abs()).exp();
            zt[i] = zi;
            et[i] = x;
            let wi = self.weight(i);
            loss += loss_term(m, x) * wi;
            let r = 1.0 / (1.0 + x);
            let sig_neg = if m >= 0.0 { x * r } else { r };
            d1 -= yi * sig_neg * ui * wi;
            d2 += x * r * r * ui * ui * wi;
        }
        let inv_n = 1.0 / self.n();
        let (tt, tp, pp) = line.sq;
        let norm2 = tt + 2.0 * t * tp + t * t * pp;
        let f = loss * inv_n + 0.5 * self.reg * norm2 + line.lin.0 + t * line.lin.1;
        let df = d1 * inv_n + self.reg * (tp + t * pp) + line.lin.1;
        let ddf = d2 * inv_n + self.reg * pp;
        (f, df, ddf)
    }

    /// L-BFGS (memory 10, as scipy's L-BFGS-B in scikit-learn) with a near-exact line search,
    /// from `start` or 0. Along a direction p every trial point costs O(N) given u = X p (the
    /// margins are z + t u), so the line search runs safeguarded 1-D Newton on phi(t) =
    /// F(theta + t p) to the strong Wolfe conditions with c1 = 1e-4, c2 = 0.1 (tighter than
    /// scipy's More-Thuente c2 = 0.9, at no extra pass). One iteration is exactly two passes
    /// over the data (X p and X^T c); the loop allocates nothing.
    pub fn lbfgs_from(&self, settings: &SolverSettings, start: Option<&[f64]>) -> Solution {
        const M: usize = 10;
        let (n, d) = (self.design.n_rows(), self.design.dim());
        let max_iter = settings.max_iter.max(50) * 50;
        let (mut x, mut scratch) = self.iterates(start);
        let mut u = vec![0.0; n];
        let (mut g, mut gt, mut p) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        // History ring: pairs (s, y) in slots (first + j) % M, j < len, oldest first.
        let (mut s_hist, mut y_hist) = (vec![0.0; M * d], vec![0.0; M * d]);
        let (mut rho, mut alpha) = ([0.0f64; M], [0.0f64; M]);
        let (mut first, mut len) = (0usize, 0usize);
        let (mut gn, g0) = self.start_at(start, &mut x, &mut g);
        let target = settings.tol * g0.max(1e-300);
        let lin_of = |v: &[f64]| -> f64 { self.lin.iter().zip(v).map(|(b, t)| b * t).sum() };
        let mut it = 0;
        while gn > target && it < max_iter {
            it += 1;
            let history = History {
                s: &s_hist,
                y: &y_hist,
                rho: &rho,
                first,
                len,
            };
            history.direction(&g, &mut p, &mut alpha);
            let mut gp = dot(&g, &p);
            if gp.is_nan() || gp >= 0.0 {
                p.iter_mut().zip(&g).for_each(|(pk, gk)| *pk = -gk);
                gp = -gn * gn;
                len = 0;
            }
            self.pass_margins(&p, &mut u);
            let line = Line {
                z: &x.z,
                u: &u,
                sq: (dot(&x.theta, &x.theta), dot(&x.theta, &p), dot(&p, &p)),
                lin: (lin_of(&x.theta), lin_of(&p)),
            };
            let Some((t, ft)) = self.strong_wolfe(&line, &x.w, x.f, gp, &mut scratch) else {
                break;
            };
            for ((a, &b), &v) in scratch.theta.iter_mut().zip(&x.theta).zip(&p) {
                *a = b + t * v;
            }
            scratch.f = ft;
            let s = &mut scratch;
            self.derivatives_from_e(&s.z, &s.e, &mut s.c, &mut s.w);
            self.finish_gradient(&s.theta, &s.c, &mut gt);
            // New pair s = theta' - theta, y = g' - g (convexity: s.y > 0 unless rounding).
            let k = next_slot(&mut first, &mut len, M);
            let (s, yv) = (
                &mut s_hist[k * d..(k + 1) * d],
                &mut y_hist[k * d..(k + 1) * d],
            );
            for j in 0..d {
                s[j] = scratch.theta[j] - x.theta[j];
                yv[j] = gt[j] - g[j];
            }
            let sy = dot(s, yv);
            if sy > 1e-16 * norm(s) * norm(yv) && sy > 0.0 {
                rho[k] = 1.0 / sy;
            } else {
                // Rounding-level curvature: drop the pair (slot k is the newest position).
                len -= 1;
            }
            std::mem::swap(&mut x, &mut scratch);
            std::mem::swap(&mut g, &mut gt);
            gn = norm(&g);
        }
        x.finish(self, Solver::Lbfgs, it, gn, g0, target)
    }

    /// L-BFGS's line search along `line` from F = `f` with slope `gp` < 0: a safeguarded 1-D
    /// Newton search on the convex phi(t) = F(theta + t p) to the strong Wolfe conditions
    /// (c1 = 1e-4, c2 = 0.1), each trial O(N) on the margins. Returns (t, F(theta + t p)) and
    /// leaves that point's margins in `scratch`; `None` when no step decreases F.
    fn strong_wolfe(
        &self,
        line: &Line,
        w: &[f64],
        f: f64,
        gp: f64,
        scratch: &mut Iterate,
    ) -> Option<(f64, f64)> {
        // Safeguarded 1-D Newton on the convex phi, from the Newton step at t = 0.
        let h0: f64 = line
            .u
            .iter()
            .zip(w)
            .map(|(ui, wi)| wi * ui * ui)
            .sum::<f64>()
            + self.reg * line.sq.2;
        let mut t = -gp / h0;
        if !t.is_finite() || t <= 0.0 {
            t = 1.0;
        }
        let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
        let tiny = gp.abs() <= 1e-13 * (1.0 + f.abs());
        let mut accepted = None;
        for _ in 0..40 {
            let (ft, dt, ht) = self.along(t, line, &mut scratch.z, &mut scratch.e);
            let armijo = ft <= f + 1e-4 * t * gp;
            if tiny || (armijo && dt.abs() <= 0.1 * gp.abs()) {
                accepted = Some((t, ft));
                break;
            }
            if !ft.is_finite() || dt > 0.0 || !armijo {
                hi = hi.min(t);
            } else {
                lo = t;
            }
            let next = t - dt / ht;
            t = if next > lo && next < hi && next.is_finite() {
                next
            } else if hi.is_finite() {
                0.5 * (lo + hi)
            } else {
                2.0 * t
            };
            if hi - lo <= 1e-15 * hi {
                break;
            }
        }
        if accepted.is_none() && lo > 0.0 {
            // Rounding stalled the curvature condition: take the best sufficient decrease.
            let (ft, _, _) = self.along(lo, line, &mut scratch.z, &mut scratch.e);
            accepted = Some((lo, ft));
        }
        accepted
    }
}

/// A row's gradient coefficient c = -y sigma(-m) wi/N and Hessian weight
/// w = sigma(m) sigma(-m) wi/N from its label y, m = y z and e = exp(-|m|).
#[inline]
fn row_derivatives(y: f64, m: f64, e: f64, inv_n: f64, wi: f64) -> (f64, f64) {
    let r = 1.0 / (1.0 + e);
    let sig_neg = if m >= 0.0 { e * r } else { r };
    (-y * sig_neg * inv_n * wi, e * r * r * inv_n * wi)
}

/// log(1 + exp(-m)) = max(-m, 0) + log(1 + x) given x = exp(-|m|); ln(1 + x) is exact enough
/// for x >= 1e-4 and cheaper than ln_1p.
#[inline]
fn loss_term(m: f64, x: f64) -> f64 {
    (-m).max(0.0) + if x < 1e-4 { x.ln_1p() } else { (1.0 + x).ln() }
}

/// A line theta + t p for [`Objective::along`]: margins z = X theta and u = X p,
/// (theta.theta, theta.p, p.p) and (lin.theta, lin.p).
struct Line<'v> {
    z: &'v [f64],
    u: &'v [f64],
    sq: (f64, f64, f64),
    lin: (f64, f64),
}

/// A point of a minimisation: theta, its margins z = X theta, e_i = exp(-|y_i z_i|), the
/// derivatives c (gradient coefficients) and w (Hessian weights) there, and F (NaN while a
/// line search that accepted the point by its slope has not needed it).
#[derive(Clone)]
struct Iterate {
    theta: Vec<f64>,
    z: Vec<f64>,
    e: Vec<f64>,
    c: Vec<f64>,
    w: Vec<f64>,
    f: f64,
}

impl Iterate {
    /// The minimiser and how the run from gradient norm `g0` to `gn` ended (F evaluated
    /// from the stored e if a line search left it pending).
    fn finish(
        mut self,
        obj: &Objective,
        solver: Solver,
        iterations: usize,
        gn: f64,
        g0: f64,
        target: f64,
    ) -> Solution {
        obj.value_of(&mut self);
        let conv = Convergence {
            solver,
            iterations,
            grad_norm: gn,
            initial_grad_norm: g0,
            objective: self.f,
            converged: gn <= target,
        };
        (self.theta, conv)
    }

    fn new(start: Option<&[f64]>, n: usize, d: usize) -> Self {
        Iterate {
            theta: start.map_or_else(|| vec![0.0; d], <[f64]>::to_vec),
            z: vec![0.0; n],
            e: vec![0.0; n],
            c: vec![0.0; n],
            w: vec![0.0; n],
            f: 0.0,
        }
    }
}

pub(crate) fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// The slot of a new pair in a ring of `m` slots holding `len` pairs from `first`: the next
/// free one, else the oldest (which the new pair replaces).
fn next_slot(first: &mut usize, len: &mut usize, m: usize) -> usize {
    if *len < m {
        *len += 1;
        (*first + *len - 1) % m
    } else {
        let k = *first;
        *first = (*first + 1) % m;
        k
    }
}

/// L-BFGS's history ring: pairs (s, y) of `d` values each in slots (first + j) % M, j < len,
/// oldest first, and rho = 1 / s.y of each slot.
struct History<'a> {
    s: &'a [f64],
    y: &'a [f64],
    rho: &'a [f64],
    first: usize,
    len: usize,
}

impl History<'_> {
    /// The two-loop recursion: p = -H g (`alpha`: one scratch value per slot).
    fn direction(&self, g: &[f64], p: &mut [f64], alpha: &mut [f64]) {
        let (d, m, rho) = (g.len(), self.rho.len(), self.rho);
        let pair = |k: usize| (&self.s[k * d..(k + 1) * d], &self.y[k * d..(k + 1) * d]);
        p.copy_from_slice(g);
        for j in (0..self.len).rev() {
            let k = (self.first + j) % m;
            let (s, yv) = pair(k);
            alpha[k] = rho[k] * dot(s, p);
            axpy(-alpha[k], yv, p);
        }
        if self.len > 0 {
            let k = (self.first + self.len - 1) % m;
            let (_, yv) = pair(k);
            let gamma = 1.0 / (rho[k] * dot(yv, yv));
            p.iter_mut().for_each(|v| *v *= gamma);
        }
        for j in 0..self.len {
            let k = (self.first + j) % m;
            let (s, yv) = pair(k);
            let b = rho[k] * dot(yv, p);
            axpy(alpha[k] - b, s, p);
        }
        p.iter_mut().for_each(|v| *v = -*v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::logistic::design::Splitting;

    /// The slope test only shortcuts Armijo's condition: along steepest-descent directions
    /// of every length (full steps accepted by slope, by value, and after halvings), the
    /// Newton line search accepts exactly the step a value-only Armijo search takes.
    #[test]
    fn slope_acceptance_takes_the_step_armijo_takes() {
        use crate::rng::rng_from;
        use rand::Rng as _;
        let (n, d) = (300, 4);
        let mut rng = rng_from(&["backtrack-test"]);
        let x = ndarray::Array2::from_shape_fn((n, d), |_| rng.r#gen::<f64>() * 2.0 - 1.0);
        let y: Vec<f64> = (0..n)
            .map(|i| {
                if x[[i, 0]] + 0.3 * rng.r#gen::<f64>() > 0.1 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let design = Design::dense(x.view());
        let obj = Objective::regularised(&design, &y, 0.5);
        let mut it = Iterate::new(Some(&[0.2, -0.1, 0.4, 0.0]), n, d);
        let mut g = vec![0.0; d];
        obj.start_at(Some(&[0.2, -0.1, 0.4, 0.0]), &mut it, &mut g);
        let (mut by_slope, mut halved) = (0, 0);
        for scale in [0.05, 0.5, 2.0, 8.0, 40.0, 400.0] {
            let p: Vec<f64> = g.iter().map(|v| -scale * v).collect();
            let gp = dot(&g, &p);
            let mut u = vec![0.0; n];
            design.margins(&p, &mut u);
            let f0 = obj.value(&it.theta);
            let mut t_ref = 1.0;
            loop {
                let th: Vec<f64> = it
                    .theta
                    .iter()
                    .zip(&p)
                    .map(|(a, b)| a + t_ref * b)
                    .collect();
                if obj.value(&th) <= f0 + 1e-4 * t_ref * gp {
                    break;
                }
                t_ref *= 0.5;
            }
            let (mut x1, mut scratch) = (it.clone(), it.clone());
            assert!(obj.backtrack(&mut x1, &p, &u, gp, &mut scratch));
            let t = (x1.theta[0] - it.theta[0]) / p[0];
            assert!(
                (t - t_ref).abs() <= 1e-12 * t_ref,
                "scale {scale}: {t} vs {t_ref}"
            );
            by_slope += usize::from(x1.f.is_nan());
            halved += usize::from(t_ref < 1.0);
            // The derivatives carried with the point are those of a fresh evaluation.
            let grad = obj.gradient(&x1.theta);
            let mut g1 = vec![0.0; d];
            obj.gradient_at(&x1, &mut g1);
            assert!(dist(&grad, &g1) <= 1e-14, "scale {scale}");
        }
        assert!(by_slope > 0 && halved > 0, "{by_slope} {halved}");
    }

    /// A binary design with many repeated rows is solved on its grouped rows: the grouped
    /// objective is F itself (value and gradient at any theta), and the minimiser agrees with
    /// Newton on the rows as they are to 1e-9, for both encodings and a linear term.
    #[test]
    fn grouped_rows_give_the_same_objective_and_minimiser() {
        use crate::data::BinaryMatrix;
        use crate::rng::rng_from;
        use rand::Rng as _;
        let (n, d) = (600, 5);
        let mut rng = rng_from(&["group-test"]);
        let mut m = BinaryMatrix::new(d);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let ones: Vec<u32> = (0..d as u32).filter(|_| rng.r#gen::<f64>() < 0.4).collect();
            y.push(if ones.len() % 2 == 1 || rng.r#gen::<f64>() < 0.3 {
                1.0
            } else {
                -1.0
            });
            m.push_row(&ones);
        }
        let rows: Vec<u32> = (0..n as u32).collect();
        for enc in [
            super::super::Encoding::Indicator,
            super::super::Encoding::PlusMinus,
        ] {
            let mut design = Design::binary(&m, &rows, Some(&[4, 0, 2, 1]), enc).unwrap();
            design.scale_all(0.4);
            let g = design
                .grouped(&y, super::super::design::GROUP_MAX_FRACTION)
                .expect("at most 32 distinct rows");
            assert!(g.design.n_rows() <= 32, "{}", g.design.n_rows());
            assert_eq!(g.count.iter().sum::<f64>(), n as f64);
            let mut obj = Objective::regularised(&design, &y, 0.3);
            obj.lin = vec![0.01, -0.02, 0.0, 0.03];
            let grouped = obj.on_grouped(&g);
            let theta = [0.7, -1.2, 0.3, 2.0];
            let (f, fg) = (obj.value(&theta), grouped.value(&theta));
            assert!((f - fg).abs() <= 1e-12 * f.abs(), "{f} vs {fg}");
            assert!(dist(&obj.gradient(&theta), &grouped.gradient(&theta)) <= 1e-13);
            // Unweighted grouped rows are another objective: the test can tell them apart.
            let unweighted = Objective {
                weights: RowWeights::default(),
                ..grouped.clone()
            };
            assert!((unweighted.value(&theta) - f).abs() > 1e-3);
            let s = SolverSettings::default();
            let (t_rows, c_rows) = obj.newton(&s);
            let (t_grouped, c_grouped) = obj.minimise(&s);
            assert!(c_rows.converged && c_grouped.converged);
            assert!(
                dist(&t_rows, &t_grouped) <= 1e-9,
                "{t_rows:?} {t_grouped:?}"
            );
        }
    }

    /// A fit whose passes split across two threads ([`Splitting::passes`]) ends bit for bit
    /// where the one-thread fit ends, with every solver and objective perturbation's linear
    /// term, also when called from outside any pool (then solved, split, on the global pool).
    #[test]
    fn two_thread_fits_equal_one_thread_fits_bit_for_bit() {
        use crate::data::BinaryMatrix;
        use crate::rng::rng_from;
        use rand::Rng as _;
        let (n, d) = (super::super::design::PAR_MIN_ROWS * 2, 30);
        let mut rng = rng_from(&["halves-fit"]);
        let mut m = BinaryMatrix::new(d);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let ones: Vec<u32> = (0..d as u32)
                .filter(|_| rng.r#gen::<f64>() < 0.25)
                .collect();
            let s = ones
                .iter()
                .map(|&j| if j % 3 == 0 { 1.0 } else { -0.4 })
                .sum::<f64>();
            y.push(if s + rng.r#gen::<f64>() > 0.5 {
                1.0
            } else {
                -1.0
            });
            m.push_row(&ones);
        }
        let rows: Vec<u32> = (0..n as u32).collect();
        let mut design =
            Design::binary(&m, &rows, None, super::super::Encoding::Indicator).unwrap();
        design.scale_all(0.3);
        let split = design.clone().with_splitting(Splitting {
            passes: true,
            ..Splitting::default()
        });
        let lin: Vec<f64> = (0..d).map(|k| 1e-3 * (k as f64 - 15.0)).collect();
        let mut obj = Objective::regularised(&design, &y, 0.5);
        obj.lin = lin.clone();
        let mut split_obj = Objective::regularised(&split, &y, 0.5);
        split_obj.lin = lin;
        let (one, two) = super::super::design::one_and_two_thread_pools();
        assert!(two.install(|| split.halves().is_some()));
        for solver in [Solver::Newton, Solver::NewtonCg, Solver::Lbfgs] {
            let s = SolverSettings {
                solver,
                tol: 1e-10,
                ..SolverSettings::default()
            };
            let fit = |obj: &Objective| {
                let (theta, c) = obj.minimise(&s);
                let bits: Vec<u64> = theta.iter().map(|t| t.to_bits()).collect();
                (
                    bits,
                    c.iterations,
                    c.grad_norm.to_bits(),
                    c.objective.to_bits(),
                )
            };
            let single = one.install(|| fit(&obj));
            assert!(single.1 > 2, "{solver:?} took {} iterations", single.1);
            assert_eq!(single, two.install(|| fit(&split_obj)), "{solver:?}");
            if rayon::current_num_threads() > 1 {
                assert_eq!(single, fit(&obj), "{solver:?} from outside a pool");
            }
        }
    }

    fn dist(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn stable_scalar_functions() {
        assert_eq!(log1pexp(1000.0), 1000.0);
        assert!(log1pexp(-1000.0) >= 0.0 && log1pexp(-1000.0) < 1e-300);
        assert!((log1pexp(0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((log1pexp(-40.0) - (-40f64).exp()).abs() < 1e-30);
        assert_eq!(sigmoid(-1000.0), 0.0);
        assert_eq!(sigmoid(1000.0), 1.0);
        assert!((sigmoid(0.3) + sigmoid(-0.3) - 1.0).abs() < 1e-15);
    }
}
