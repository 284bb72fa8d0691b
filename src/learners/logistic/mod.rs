//! Logistic regression, non-private and private (thesis chapter 4, appendix B; SPEC 5).
//!
//! Objective (y in {-1, +1}, no intercept):
//! J(theta) = (1/N) sum_n log(1 + exp(-y_n theta.x_n)) + (lambda/(2N)) ||theta||^2,
//! with the thesis's lambda = N * Lambda of Chaudhuri et al. 2011. Class 1 is y = +1, class 0
//! is y = -1; a row is predicted class 1 iff theta.x > 0.
//!
//! * [`dense`]: dense training rows scaled once and shared by content key.
//! * [`design`]: sparse/dense design matrices over shared data (no dense copies).
//! * [`solver`]: Newton (default) and L-BFGS to the exact minimiser, with [`Convergence`].
//! * [`mechanisms`]: output perturbation, objective perturbation, functional mechanism.
//! * [`preprocess`]: scaling rows into the unit ball (private and non-private variants).
//! * [`select`]: lambda by cross-validation (non-private) or the exponential mechanism.
//! * [`dp_sgd`]: noisy gradient descent and DP-SGD (logistic or Huber SVM loss), (ε, δ) from
//!   the RDP accountant.
//!
//! linfa shape: [`LogisticParams`] / [`PrivateLogisticParams`] → `ParamGuard` → `Fit` on
//! `Array2<f64>` with `usize` targets in {0, 1} → [`LogisticModel`] → `PredictInplace`.
//! Harness fast paths: `fit_design` on a [`Design`] with an `&mut Rng` and `&mut Ledger`.

mod csr;
pub mod dense;
pub mod design;
pub mod dp_sgd;
pub mod eigenspace;
pub mod ensemble;
pub mod erm;
mod gram;
pub mod harness;
pub mod input;
pub mod linalg;
pub mod lockstep;
pub mod loss;
mod mapped;
pub mod mechanisms;
pub mod preprocess;
pub mod row_caches;
pub mod schedule;
pub mod select;
pub mod solver;

pub use design::{ColumnMap, Design, Encoding, Grouped, Splitting, labels_pm1};
pub use harness::{LambdaRule, LrConfig, LrKind, Scaling, per_example_lambda};
pub use loss::Loss;
pub use mechanisms::{FmInfo, FmSensitivity, ObjectiveBranch};
pub use preprocess::{Preprocessing, RowScaling};
pub use select::{LAMBDA_GRID, LambdaChoice};
pub use solver::{Convergence, DEFAULT_TOL, Objective, RowWeights, Solver, SolverSettings};

use super::Accounted;
use super::Classifier;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::privacy::Ledger;
use crate::rng::Rng;
use linfa::dataset::AsSingleTargets;
use linfa::traits::PredictInplace;
use ndarray::{Array1, ArrayBase, Data, Ix2};
use serde::{Deserialize, Serialize};

/// A fitted linear classifier theta over a design's columns.
#[derive(Debug, Clone, PartialEq)]
pub struct LogisticModel {
    pub theta: Array1<f64>,
    /// Solver record (`None` for the closed-form functional mechanism).
    pub convergence: Option<Convergence>,
    /// Source columns theta refers to, in order (harness predictions).
    pub cols: Vec<usize>,
    /// Encoding of binary features the model was fitted with.
    pub encoding: Encoding,
    /// Intercept added to theta.x at prediction: nonzero only when a data-derived column
    /// transform (min-max centring) was folded into theta.
    pub offset: f64,
}

impl LogisticModel {
    fn new(theta: Vec<f64>, convergence: Option<Convergence>, design: &Design) -> Self {
        LogisticModel {
            theta: Array1::from(theta),
            convergence,
            cols: design.cols().to_vec(),
            encoding: design.encoding().unwrap_or_default(),
            offset: 0.0,
        }
    }
}

impl Classifier for LogisticModel {
    /// Row scaling is positive, so it never changes the sign: predictions need no scales. In
    /// a lockstep group the group's models predict together ([`lockstep::predictions`]).
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        let design = Design::new(data, rows, Some(&self.cols), self.encoding)?;
        let key = || {
            crate::memo::KeyBuilder::new("lr prediction rows")
                .str(&data.name)
                .u32s(rows)
                .usizes(&self.cols)
                .u64(matches!(self.encoding, Encoding::PlusMinus).into())
                .finish()
        };
        let mut z = vec![0.0; design.n_rows()];
        let theta = self.theta.as_slice().expect("contiguous");
        lockstep::predictions(&design, key, theta, &mut z);
        Ok(z.into_iter()
            .map(|z| u16::from(z + self.offset > 0.0))
            .collect())
    }
}

impl<D: Data<Elem = f64>> PredictInplace<ArrayBase<D, Ix2>, Array1<usize>> for LogisticModel {
    fn predict_inplace(&self, x: &ArrayBase<D, Ix2>, y: &mut Array1<usize>) {
        assert_eq!(x.nrows(), y.len(), "one target slot per record");
        assert_eq!(x.ncols(), self.theta.len(), "one column per coefficient");
        for (row, out) in x.rows().into_iter().zip(y.iter_mut()) {
            *out = usize::from(row.dot(&self.theta) > 0.0);
        }
    }

    fn default_target(&self, x: &ArrayBase<D, Ix2>) -> Array1<usize> {
        Array1::zeros(x.nrows())
    }
}

fn check_lambda(lambda: f64) -> Result<()> {
    crate::privacy::check_positive("lambda", lambda)
}

fn check_loss(loss: Loss) -> Result<()> {
    match loss {
        Loss::Huber { h } => crate::privacy::check_positive("h", h),
        Loss::Logistic => Ok(()),
    }
}

fn check_settings(s: &SolverSettings) -> Result<()> {
    if !(s.tol.is_finite() && s.tol > 0.0) || s.max_iter == 0 {
        return Err(Error::param(
            "solver",
            "tol must be finite and > 0, max_iter >= 1",
        ));
    }
    Ok(())
}

/// Labels {0, 1} -> {-1, +1} (anything else is refused).
fn targets_pm1<T: AsSingleTargets<Elem = usize>>(t: &T) -> Result<Vec<f64>> {
    t.as_single_targets()
        .iter()
        .map(|&c| match c {
            0 => Ok(-1.0),
            1 => Ok(1.0),
            other => Err(Error::param(
                "targets",
                format!("logistic regression needs classes 0 and 1, got {other}"),
            )),
        })
        .collect()
}

/// Validated parameters of non-private LR.
#[derive(Debug, Clone, PartialEq)]
pub struct LogisticValidParams {
    lambda: f64,
    settings: SolverSettings,
    loss: Loss,
}

/// Non-private L2-regularised LR (the thesis's lambda; default solver settings).
#[derive(Debug, Clone, PartialEq)]
pub struct LogisticParams(LogisticValidParams);

impl LogisticParams {
    pub fn new(lambda: f64) -> Self {
        LogisticParams(LogisticValidParams {
            lambda,
            settings: SolverSettings::default(),
            loss: Loss::Logistic,
        })
    }

    pub fn solver(mut self, solver: Solver) -> Self {
        self.0.settings.solver = solver;
        self
    }
}

setters!(LogisticParams {
    settings: SolverSettings,
    /// The per-example loss (logistic by default; [`Loss::HUBER_SVM`] for the Huber SVM).
    loss: Loss,
});

param_guard!(LogisticParams => LogisticValidParams, |p| {
    check_lambda(p.lambda)?;
    check_loss(p.loss)?;
    check_settings(&p.settings)?;
    Ok(())
});

impl LogisticValidParams {
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    pub fn settings(&self) -> &SolverSettings {
        &self.settings
    }

    /// Fits on a design with labels in {-1, +1}. Not private: the caller records
    /// `Ledger::non_private`.
    pub fn fit_design(&self, design: &Design, y: &[f64]) -> LogisticModel {
        let objective = Objective::regularised(design, y, self.lambda);
        let (theta, conv) = erm::minimise(self.loss, &objective, &self.settings);
        LogisticModel::new(theta, Some(conv), design)
    }
}

linfa_fit!(LogisticValidParams => LogisticModel, |p, ds| {
    let y = targets_pm1(ds.targets())?;
    let design = Design::dense(ds.records().view());
    Ok(p.fit_design(&design, &y))
});

/// Which private learner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrivateLrMethod {
    /// Algorithm 6.
    Output,
    /// Ablation variant of Algorithm 6 with sensitivity 1/(N lambda): NOT eps-DP, its real
    /// epsilon is N times the claim (recorded so in the ledger).
    OutputLambdaTwice,
    /// Algorithm 7.
    Objective,
    /// Ablation variant of Algorithm 7 that takes the branch with the larger eps'
    /// ([`mechanisms::BranchRule::LargerEpsPrime`]): still eps-DP, a deviation from the
    /// published branch rule.
    ObjectiveLargerEpsPrime,
    /// Functional mechanism (appendix B) with a sensitivity bound; ignores lambda.
    Functional(FmSensitivity),
}

/// Validated parameters of a private LR.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivateLogisticValidParams {
    method: PrivateLrMethod,
    epsilon: f64,
    lambda: f64,
    settings: SolverSettings,
    seed: u64,
    loss: Loss,
}

/// A private LR: method, eps, thesis lambda (unused by the functional mechanism), solver.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivateLogisticParams(PrivateLogisticValidParams);

impl PrivateLogisticParams {
    pub fn new(method: PrivateLrMethod, epsilon: f64, lambda: f64) -> Self {
        PrivateLogisticParams(PrivateLogisticValidParams {
            method,
            epsilon,
            lambda,
            settings: SolverSettings::default(),
            seed: 0,
            loss: Loss::Logistic,
        })
    }
}

setters!(PrivateLogisticParams {
    settings: SolverSettings,
    /// Seed of the noise stream used by linfa's `Fit` (the harness passes its own streams).
    seed: u64,
    /// The per-example loss: logistic (default) or the Huber SVM's (output and objective
    /// perturbation only; the functional mechanism is for the logistic loss).
    loss: Loss,
});

param_guard!(PrivateLogisticParams => PrivateLogisticValidParams, |p| {
    crate::privacy::check_epsilon(p.epsilon)?;
    if !matches!(p.method, PrivateLrMethod::Functional(_)) {
        check_lambda(p.lambda)?;
    }
    check_settings(&p.settings)?;
    check_loss(p.loss)?;
    if matches!(p.method, PrivateLrMethod::Functional(_)) && p.loss != Loss::Logistic {
        return Err(Error::param("loss", "the functional mechanism approximates the logistic loss only"));
    }
    Ok(())
});

/// A private fit and what the mechanism did.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivateLogisticFit {
    pub model: LogisticModel,
    /// Algorithm 7's branch (objective perturbation only).
    pub branch: Option<ObjectiveBranch>,
    /// Functional-mechanism details.
    pub fm: Option<FmInfo>,
}

impl PrivateLogisticValidParams {
    pub fn method(&self) -> PrivateLrMethod {
        self.method
    }

    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// The same parameters with another lambda (for lambda search).
    pub fn with_lambda(&self, lambda: f64) -> Self {
        PrivateLogisticValidParams {
            lambda,
            ..self.clone()
        }
    }

    /// Runs the mechanism on a design (rows must have norm <= 1) with labels in {-1, +1},
    /// drawing noise from `rng` and recording the spend (with its sensitivity) in `ledger`.
    pub fn fit_design(
        &self,
        design: &Design,
        y: &[f64],
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<PrivateLogisticFit> {
        let e = self.epsilon;
        let problem = mechanisms::Problem {
            loss: self.loss,
            design,
            y,
            lambda: self.lambda,
            settings: &self.settings,
        };
        Ok(match self.method {
            PrivateLrMethod::Output | PrivateLrMethod::OutputLambdaTwice => {
                let twice = self.method == PrivateLrMethod::OutputLambdaTwice;
                let (t, c) = mechanisms::output_perturbation_as(problem, e, twice, rng, ledger)?;
                PrivateLogisticFit {
                    model: LogisticModel::new(t, Some(c), design),
                    branch: None,
                    fm: None,
                }
            }
            PrivateLrMethod::Objective | PrivateLrMethod::ObjectiveLargerEpsPrime => {
                let rule = self.method.branch_rule();
                let (t, c, b) =
                    mechanisms::objective_perturbation_by(rule, problem, e, rng, ledger)?;
                PrivateLogisticFit {
                    model: LogisticModel::new(t, Some(c), design),
                    branch: Some(b),
                    fm: None,
                }
            }
            PrivateLrMethod::Functional(sens) => {
                let (t, info) = mechanisms::functional_mechanism(design, y, e, sens, rng, ledger)?;
                PrivateLogisticFit {
                    model: LogisticModel::new(t, None, design),
                    branch: None,
                    fm: Some(info),
                }
            }
        })
    }
}

/// A private fit's noise, drawn before its fit ([`PrivateLogisticValidParams::draw`]).
#[derive(Debug, Clone, PartialEq)]
pub enum DrawnNoise {
    /// Output perturbation's vector, added to the minimiser.
    Output(Vec<f64>),
    /// Objective perturbation's vector b and extra regulariser Delta.
    Objective(Vec<f64>, f64),
}

impl PrivateLrMethod {
    /// How objective perturbation picks its branch (the published rule for every other method).
    pub fn branch_rule(self) -> mechanisms::BranchRule {
        match self {
            PrivateLrMethod::ObjectiveLargerEpsPrime => mechanisms::BranchRule::LargerEpsPrime,
            _ => mechanisms::BranchRule::Published,
        }
    }

    /// Whether it is Algorithm 7 (under either branch rule).
    pub fn is_objective(self) -> bool {
        matches!(
            self,
            PrivateLrMethod::Objective | PrivateLrMethod::ObjectiveLargerEpsPrime
        )
    }

    /// Whether the noise can be drawn before the fit (it depends on lambda, N and eps only):
    /// output and objective perturbation, not the functional mechanism.
    pub fn draws_before_fit(self) -> bool {
        !matches!(self, PrivateLrMethod::Functional(_))
    }

    /// Whether cross-validation pays for warm starts along the lambda path: output
    /// perturbation, whose fold fits are exact minimisers (Adult, one fold, 9 lambdas: 215 ms
    /// warm against 270 ms cold). Objective perturbation's noise differs from lambda to lambda,
    /// and a start from the larger lambda's noisy minimiser measured no faster (190 against
    /// 188 ms), so its fits stay cold and keep today's iterates.
    pub fn warm_cv_pays(self) -> bool {
        matches!(
            self,
            PrivateLrMethod::Output | PrivateLrMethod::OutputLambdaTwice
        )
    }
}

impl PrivateLogisticValidParams {
    /// The noise [`Self::fit_design`] would draw from `rng` and charge to `ledger`, without
    /// the fit (the same draws, the same charge); [`Self::fit_drawn`] then fits with it.
    pub fn draw(
        &self,
        design: &Design,
        y: &[f64],
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<DrawnNoise> {
        let problem = mechanisms::Problem {
            loss: self.loss,
            design,
            y,
            lambda: self.lambda,
            settings: &self.settings,
        };
        match self.method {
            PrivateLrMethod::Output | PrivateLrMethod::OutputLambdaTwice => {
                let twice = self.method == PrivateLrMethod::OutputLambdaTwice;
                mechanisms::output_noise(&problem, self.epsilon, twice, rng, ledger)
                    .map(DrawnNoise::Output)
            }
            PrivateLrMethod::Objective | PrivateLrMethod::ObjectiveLargerEpsPrime => {
                let rule = self.method.branch_rule();
                let (b, branch) =
                    mechanisms::objective_noise_by(rule, &problem, self.epsilon, rng, ledger)?;
                Ok(DrawnNoise::Objective(b, branch.delta))
            }
            PrivateLrMethod::Functional(_) => Err(Error::param(
                "method",
                "the functional mechanism's noise enters a closed form: fit it with fit_design",
            )),
        }
    }

    /// The fit of [`Self::fit_design`] with noise from [`Self::draw`], from `start` (a warm
    /// start: the same minimiser to the solver tolerance). Returns the minimiser (to start a
    /// neighbouring lambda from) and the released theta.
    pub fn fit_drawn(
        &self,
        design: &Design,
        y: &[f64],
        noise: &DrawnNoise,
        start: Option<&[f64]>,
    ) -> (Vec<f64>, Vec<f64>) {
        let problem = mechanisms::Problem {
            loss: self.loss,
            design,
            y,
            lambda: self.lambda,
            settings: &self.settings,
        };
        match noise {
            DrawnNoise::Output(b) => {
                let objective = Objective::regularised(design, y, self.lambda);
                let (theta, _) = problem.solve_from(&objective, start);
                let released = theta.iter().zip(b).map(|(t, n)| t + n).collect();
                (theta, released)
            }
            DrawnNoise::Objective(b, delta) => {
                let (theta, _) = mechanisms::objective_perturbation_from(problem, b, *delta, start);
                (theta.clone(), theta)
            }
        }
    }
}

linfa_fit!(PrivateLogisticValidParams => Accounted<LogisticModel>, |p, ds| {
    let y = targets_pm1(ds.targets())?;
    let design = Design::dense(ds.records().view());
    Accounted::fit("private_lr", p.seed, |rng, ledger| {
        Ok(p.fit_design(&design, &y, rng, ledger)?.model)
    })
});
