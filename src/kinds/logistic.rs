//! `learner = "lr" | "lr_output" | "lr_objective" | "lr_functional"`: L2-regularised logistic
//! regression, exact or under one of three private mechanisms.

use super::{Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use crate::error::Result;
use crate::learners::Learner;
use crate::learners::logistic::solver::DEFAULT_TOL;
use crate::learners::logistic::{
    FmSensitivity, LambdaRule, LrConfig, LrKind, PrivateLrMethod, Scaling, Solver, SolverSettings,
};
use serde::Deserialize;

/// `lr`: the exact minimiser.
pub type Lr = Regularised<0>;
/// `lr_output`: Algorithm 6.
pub type LrOutput = Regularised<1>;
/// `lr_objective`: Algorithm 7.
pub type LrObjective = Regularised<2>;

/// The learners with a lambda and a solver; `M` picks the mechanism (0: none).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regularised<const M: u8> {
    /// A number, `"cv"` (5-fold cross-validation, non-private) or `"private"` (exponential
    /// mechanism, spends `budget.lambda`); or a `lambda` grid axis.
    lambda: Option<LambdaRule>,
    /// How rows are scaled into the unit ball: `thesis`, `public` (default) or `own_norm`.
    scaling: Option<Scaling>,
    /// `auto` (default), `newton`, `newton_cg` or `lbfgs`.
    solver: Option<Solver>,
    /// Stop when ||grad J|| <= tolerance * ||grad J(0)|| (default 1e-10).
    tolerance: Option<f64>,
}

const REGULARISED_FIELDS: &[&str] = &["lambda", "scaling", "solver", "tolerance"];

impl Described for Lr {
    const NAME: &'static str = "lr";
    const ABOUT: &'static str =
        "L2-regularised logistic regression, exact minimiser (non-private reference)";
    const FIELDS: &'static [&'static str] = REGULARISED_FIELDS;
}

impl Described for LrOutput {
    const NAME: &'static str = "lr_output";
    const ABOUT: &'static str =
        "Algorithm 6: output perturbation, L2 noise beta = 2/(lambda eps) (eps-DP)";
    const FIELDS: &'static [&'static str] = REGULARISED_FIELDS;
}

impl Described for LrObjective {
    const NAME: &'static str = "lr_objective";
    const ABOUT: &'static str =
        "Algorithm 7: objective perturbation (Chaudhuri et al. 2011), c = 1/4 (eps-DP)";
    const FIELDS: &'static [&'static str] = REGULARISED_FIELDS;
}

impl<const M: u8> Regularised<M> {
    fn kind(&self) -> LrKind {
        match M {
            0 => LrKind::NonPrivate,
            1 => LrKind::Private(PrivateLrMethod::Output),
            _ => LrKind::Private(PrivateLrMethod::Objective),
        }
    }
}

impl<const M: u8> LearnerKind for Regularised<M> {
    fn private(&self) -> bool {
        M != 0
    }

    fn axes(&self) -> &'static [Axis] {
        &[Axis::Lambda]
    }

    fn validate(&self, grid: &[Axis]) -> std::result::Result<(), Refusal> {
        if let Some(t) = self.tolerance
            && !(t.is_finite() && t > 0.0 && t < 1.0)
        {
            return Err(refuse(
                "tolerance",
                format!("must be finite and in (0, 1), got {t}"),
            ));
        }
        match self.lambda {
            Some(LambdaRule::Fixed(l)) if !(l.is_finite() && l > 0.0) => {
                Err(refuse("lambda", format!("must be finite and > 0, got {l}")))
            }
            Some(_) if grid.contains(&Axis::Lambda) => {
                Err(refuse("lambda", "is also a grid axis; set it in one place"))
            }
            None if !grid.contains(&Axis::Lambda) => Err(refuse(
                "lambda",
                "logistic regression needs lambda: a number, \"cv\", \"private\" or a grid axis",
            )),
            Some(LambdaRule::Private) if M == 0 => Err(refuse(
                "lambda",
                "private lambda selection needs a private learner",
            )),
            _ => Ok(()),
        }
    }

    fn spends_lambda_share(&self) -> bool {
        self.lambda == Some(LambdaRule::Private)
    }

    fn learner(&self, at: &GridValues, budget: &CellBudget) -> Result<Learner> {
        let lambda = match (at.lambda, self.lambda) {
            (Some(l), _) => LambdaRule::Fixed(l),
            (None, Some(rule)) => rule,
            (None, None) => LambdaRule::Fixed(1.0),
        };
        Ok(Learner::Logistic(LrConfig {
            kind: self.kind(),
            lambda,
            scaling: self.scaling.unwrap_or_default(),
            epsilon: budget.train,
            lambda_epsilon: budget.lambda,
            settings: SolverSettings {
                solver: self.solver.unwrap_or_default(),
                tol: self.tolerance.unwrap_or(DEFAULT_TOL),
                ..SolverSettings::default()
            },
        }))
    }

    fn cost(&self) -> u64 {
        20 * match self.lambda {
            // 5 folds × the λ grid, plus the final fit.
            Some(LambdaRule::CrossValidation) => 46,
            Some(LambdaRule::Private) => 10,
            _ => 1,
        }
    }
}

/// `lr_functional`: the functional mechanism (no lambda, no solver choice).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LrFunctional {
    /// `sens1` (D^2/4 + 3D) or `sens2` (D/4 + 3 sqrt D).
    fm_sensitivity: Option<FmSensitivity>,
    scaling: Option<Scaling>,
}

impl Described for LrFunctional {
    const NAME: &'static str = "lr_functional";
    const ABOUT: &'static str =
        "functional mechanism (Zhang et al. 2012), FMsens1 or FMsens2 (eps-DP)";
    const FIELDS: &'static [&'static str] = &["fm_sensitivity", "scaling"];
}

impl LearnerKind for LrFunctional {
    fn private(&self) -> bool {
        true
    }

    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Learner> {
        Ok(Learner::Logistic(LrConfig {
            kind: LrKind::Private(PrivateLrMethod::Functional(
                self.fm_sensitivity.unwrap_or_default(),
            )),
            // The functional mechanism has no lambda.
            lambda: LambdaRule::Fixed(1.0),
            scaling: self.scaling.unwrap_or_default(),
            epsilon: budget.train,
            lambda_epsilon: budget.lambda,
            settings: SolverSettings {
                solver: Solver::default(),
                tol: DEFAULT_TOL,
                ..SolverSettings::default()
            },
        }))
    }

    fn cost(&self) -> u64 {
        20
    }
}
