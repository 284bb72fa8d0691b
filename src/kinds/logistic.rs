//! `learner = "lr" | "lr_output" | "lr_objective" | "lr_functional"`: L2-regularised logistic
//! regression, exact or under one of three private mechanisms. One struct; each kind reads
//! only its `FIELDS`.

use super::variant::{Excess, Variant};
use super::{Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use crate::error::Result;
use crate::learners::Learner;
use crate::learners::logistic::solver::DEFAULT_TOL;
use crate::learners::logistic::{
    FmSensitivity, LambdaRule, LrConfig, LrKind, PrivateLrMethod, Scaling, Solver, SolverSettings,
};
use serde::Deserialize;

/// `lr`: the exact minimiser.
pub type Lr = Logistic<0>;
/// `lr_output`: Algorithm 6.
pub type LrOutput = Logistic<1>;
/// `lr_objective`: Algorithm 7.
pub type LrObjective = Logistic<2>;
/// `lr_functional`: the functional mechanism (no lambda, no solver choice).
pub type LrFunctional = Logistic<3>;

/// Logistic regression; `M` picks the mechanism (0: none). Each kind reads only its `FIELDS`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Logistic<const M: u8> {
    /// A number, `"cv"` (5-fold cross-validation, non-private) or `"private"` (exponential
    /// mechanism, spends `budget.lambda`); or a `lambda` grid axis.
    lambda: Option<LambdaRule>,
    /// How rows are scaled into the unit ball: `thesis`, `public` (default) or `own_norm`.
    scaling: Option<Scaling>,
    /// `auto` (default), `newton`, `newton_cg` or `lbfgs`.
    solver: Option<Solver>,
    /// Stop when ||grad J|| <= tolerance * ||grad J(0)|| (default 1e-10).
    tolerance: Option<f64>,
    /// The functional mechanism's bound: `sens1` (D^2/4 + 3D) or `sens2` (D/4 + 3 sqrt D).
    fm_sensitivity: Option<FmSensitivity>,
    /// An ablation variant ([`OUTPUT_LAMBDA_TWICE`], `lr_output` only); faithful when absent.
    variant: Option<LrVariant>,
}

/// Output perturbation with the thesis's lambda = N Lambda convention applied twice: the
/// sensitivity 1/lambda (2/lambda replace-one) read as Chaudhuri et al.'s 1/(N Lambda) with
/// Lambda = lambda, i.e. divided by N once more.
pub const OUTPUT_LAMBDA_TWICE: Variant = Variant {
    kind: "lr_output",
    name: "lambda_twice",
    about: "sensitivity 1/(N lambda) instead of 1/lambda (lambda = N Lambda applied twice): N times less noise",
    excess: Excess::TrainingSize,
    audit: "lr_output_lambda_as_big_lambda",
};

/// Logistic regression's ablation variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LrVariant {
    /// [`OUTPUT_LAMBDA_TWICE`].
    LambdaTwice,
}

impl<const M: u8> Described for Logistic<M> {
    const NAME: &'static str = ["lr", "lr_output", "lr_objective", "lr_functional"][M as usize];
    const ABOUT: &'static str = [
        "L2-regularised logistic regression, exact minimiser (non-private reference)",
        "Algorithm 6: output perturbation, L2 noise beta = Delta/eps, Delta = 1/lambda (add/remove) or 2/lambda (replace-one) (eps-DP)",
        "Algorithm 7: objective perturbation (Chaudhuri et al. 2011), c = 1/4 (eps-DP)",
        "functional mechanism (Zhang et al. 2012), FMsens1 or FMsens2 (eps-DP)",
    ][M as usize];
    const FIELDS: &'static [&'static str] = match M {
        1 => &["lambda", "scaling", "solver", "tolerance", "variant"],
        0..=2 => &["lambda", "scaling", "solver", "tolerance"],
        _ => &["fm_sensitivity", "scaling"],
    };
}

impl<const M: u8> Logistic<M> {
    fn kind(&self) -> LrKind {
        match M {
            0 => LrKind::NonPrivate,
            1 if self.variant == Some(LrVariant::LambdaTwice) => {
                LrKind::Private(PrivateLrMethod::OutputLambdaTwice)
            }
            1 => LrKind::Private(PrivateLrMethod::Output),
            2 => LrKind::Private(PrivateLrMethod::Objective),
            _ => LrKind::Private(PrivateLrMethod::Functional(
                self.fm_sensitivity.unwrap_or_default(),
            )),
        }
    }
}

impl<const M: u8> LearnerKind for Logistic<M> {
    fn private(&self) -> bool {
        M != 0
    }

    fn axes(&self) -> &'static [Axis] {
        match M {
            0..=2 => &[Axis::Lambda],
            // The functional mechanism has no lambda.
            _ => &[],
        }
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
            None if self.axes().contains(&Axis::Lambda) && !grid.contains(&Axis::Lambda) => {
                Err(refuse(
                    "lambda",
                    "logistic regression needs lambda: a number, \"cv\", \"private\" or a grid axis",
                ))
            }
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
            // The functional mechanism has no lambda.
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
