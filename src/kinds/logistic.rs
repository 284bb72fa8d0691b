//! `learner = "lr" | "lr_output" | "lr_objective" | "lr_functional"`: L2-regularised logistic
//! regression, exact or under one of three private mechanisms; `"svm" | "svm_output" |
//! "svm_objective"`: the Huber SVM (h = 0.5, Chaudhuri et al. 2011) exact or under output or
//! objective perturbation (c = 1/(2h)). One struct; each kind reads only its `FIELDS`.

use super::variant::{Excess, Variant};
use super::{Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, Schedule, refuse};
use crate::error::Result;
use crate::learners::Learner;
use crate::learners::logistic::schedule::Reach;
use crate::learners::logistic::solver::DEFAULT_TOL;
use crate::learners::logistic::{
    FmSensitivity, LambdaRule, Loss, LrConfig, LrKind, PrivateLrMethod, Scaling, Solver,
    SolverSettings, per_example_lambda,
};
use crate::privacy::Ledger;
use serde::Deserialize;

/// `lr`: the exact minimiser.
pub type Lr = Logistic<0>;
/// `lr_output`: Algorithm 6.
pub type LrOutput = Logistic<1>;
/// `lr_objective`: Algorithm 7.
pub type LrObjective = Logistic<2>;
/// `lr_functional`: the functional mechanism (no lambda, no solver choice).
pub type LrFunctional = Logistic<3>;
/// `svm`: the exact Huber SVM minimiser.
pub type Svm = Logistic<4>;
/// `svm_output`: output perturbation of the Huber SVM.
pub type SvmOutput = Logistic<5>;
/// `svm_objective`: objective perturbation of the Huber SVM.
pub type SvmObjective = Logistic<6>;

/// Logistic regression; `M` picks the mechanism (0: none). Each kind reads only its `FIELDS`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Logistic<const M: u8> {
    /// A number, `"cv"` (5-fold cross-validation, non-private) or `"private"` (Algorithm 3: at
    /// the pipeline's eps by parallel composition, or with a `budget.lambda` share for the
    /// selection beside training's); or a `lambda` grid axis.
    lambda: Option<LambdaRule>,
    /// How rows are scaled into the unit ball: `thesis`, `public` (default) or `own_norm`.
    scaling: Option<Scaling>,
    /// `auto` (default), `newton`, `newton_cg` or `lbfgs`.
    solver: Option<Solver>,
    /// Stop when ||grad J|| <= tolerance * ||grad J(0)|| (default 1e-10).
    tolerance: Option<f64>,
    /// The functional mechanism's bound: `sens1` (D^2/4 + 3D) or `sens2` (D/4 + 3 sqrt D).
    fm_sensitivity: Option<FmSensitivity>,
    /// An ablation variant ([`OUTPUT_LAMBDA_TWICE`] of `lr_output`,
    /// [`OBJECTIVE_LARGER_EPS_PRIME`] of `lr_objective`); faithful when absent.
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
    label: "",
    audit: "lr_output_lambda_as_big_lambda",
};

/// Objective perturbation with the branch of the larger eps' (direct only when
/// eps - k ln(1 + c/lambda) >= eps/2) instead of the published "direct whenever eps' > 0":
/// the rule reads only public values and each branch is eps-DP, so privacy holds as claimed.
pub const OBJECTIVE_LARGER_EPS_PRIME: Variant = Variant {
    kind: "lr_objective",
    name: "larger_eps_prime",
    about: "Algorithm 7 takes the branch with the larger eps' (direct only if eps - k ln(1 + c/lambda) >= eps/2), not the direct one whenever eps' > 0: no noise jump above the threshold (still eps-DP)",
    excess: Excess::None,
    label: "variant: larger-ε′ branch rule, ε-DP",
    audit: "",
};

/// Logistic regression's ablation variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LrVariant {
    /// [`OUTPUT_LAMBDA_TWICE`].
    LambdaTwice,
    /// [`OBJECTIVE_LARGER_EPS_PRIME`].
    LargerEpsPrime,
}

impl<const M: u8> Described for Logistic<M> {
    const NAME: &'static str = [
        "lr",
        "lr_output",
        "lr_objective",
        "lr_functional",
        "svm",
        "svm_output",
        "svm_objective",
    ][M as usize];
    const ABOUT: &'static str = [
        "L2-regularised logistic regression, exact minimiser (non-private reference)",
        "Algorithm 6: output perturbation, L2 noise beta = Delta/eps, Delta = 1/lambda (add/remove) or 2/lambda (replace-one) (eps-DP)",
        "Algorithm 7: objective perturbation (Chaudhuri et al. 2011), c = 1/4 (eps-DP)",
        "functional mechanism (Zhang et al. 2012), FMsens1 or FMsens2 (eps-DP)",
        "Huber SVM (h = 0.5), exact minimiser (non-private reference)",
        "Huber SVM output perturbation, L2 noise beta = Delta/eps, Delta = 1/lambda (add/remove) or 2/lambda (replace-one) (eps-DP)",
        "Huber SVM objective perturbation (Chaudhuri et al. 2011), c = 1/(2h) = 1 (eps-DP)",
    ][M as usize];
    const FIELDS: &'static [&'static str] = match M {
        1 | 2 => &["lambda", "scaling", "solver", "tolerance", "variant"],
        3 => &["fm_sensitivity", "scaling"],
        _ => &["lambda", "scaling", "solver", "tolerance"],
    };
}

impl<const M: u8> Logistic<M> {
    fn kind(&self) -> LrKind {
        match M {
            0 | 4 => LrKind::NonPrivate,
            1 if self.variant == Some(LrVariant::LambdaTwice) => {
                LrKind::Private(PrivateLrMethod::OutputLambdaTwice)
            }
            1 | 5 => LrKind::Private(PrivateLrMethod::Output),
            2 if self.variant == Some(LrVariant::LargerEpsPrime) => {
                LrKind::Private(PrivateLrMethod::ObjectiveLargerEpsPrime)
            }
            2 | 6 => LrKind::Private(PrivateLrMethod::Objective),
            _ => LrKind::Private(PrivateLrMethod::Functional(
                self.fm_sensitivity.unwrap_or_default(),
            )),
        }
    }

    fn loss(&self) -> Loss {
        if M >= 4 {
            Loss::HUBER_SVM
        } else {
            Loss::Logistic
        }
    }
}

impl<const M: u8> LearnerKind for Logistic<M> {
    fn private(&self) -> bool {
        M != 0 && M != 4
    }

    fn axes(&self) -> &'static [Axis] {
        match M {
            // The functional mechanism has no lambda.
            3 => &[],
            _ => &[Axis::Lambda],
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
        check_lambda_rule(
            self.lambda,
            grid,
            self.axes().contains(&Axis::Lambda),
            self.private(),
        )
    }

    fn selects_lambda_privately(&self) -> bool {
        self.lambda == Some(LambdaRule::Private)
    }

    fn learner(&self, at: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let settings = SolverSettings {
            solver: self.solver.unwrap_or_default(),
            tol: self.tolerance.unwrap_or(DEFAULT_TOL),
            ..SolverSettings::default()
        };
        let (kind, loss) = (self.kind(), self.loss());
        lr_learner(kind, loss, settings, self.lambda, self.scaling, at, budget)
    }

    fn check_run(&self, at: &GridValues, _: &CellBudget, ledger: &mut Ledger) -> Result<()> {
        check_per_example_lambda(self.lambda, at, ledger)
    }

    /// Objective perturbation of the logistic loss: every fit has its own noise, so none is
    /// shared, but each reads the same rows, two passes per L-BFGS iteration. The exact
    /// minimiser (LR's, and output perturbation's before its noise) is shared through the
    /// memo, so only a trial's lambda siblings read together. (The Huber SVM's damped Newton
    /// method does not route its passes through a group.)
    fn schedule(&self) -> Option<Schedule> {
        Some(
            match M {
                2 => Reach::AcrossTrials,
                0 | 1 => Reach::Siblings,
                _ => Reach::Never,
            }
            .schedule(),
        )
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

/// Checks a linear learner's `lambda`: a positive number, `"cv"`, `"private"` (private learners
/// only) or a grid axis, set in one place; required when the learner reads lambda.
pub fn check_lambda_rule(
    lambda: Option<LambdaRule>,
    grid: &[Axis],
    reads_lambda: bool,
    private: bool,
) -> std::result::Result<(), Refusal> {
    match lambda {
        Some(LambdaRule::Fixed(l) | LambdaRule::PerExample(l)) if !(l.is_finite() && l > 0.0) => {
            Err(refuse("lambda", format!("must be finite and > 0, got {l}")))
        }
        Some(_) if grid.contains(&Axis::Lambda) => {
            Err(refuse("lambda", "is also a grid axis; set it in one place"))
        }
        None if reads_lambda && !grid.contains(&Axis::Lambda) => Err(refuse(
            "lambda",
            "logistic regression needs lambda: a number, \"cv\", \"private\" or a grid axis",
        )),
        Some(LambdaRule::Private) if !private => Err(refuse(
            "lambda",
            "private lambda selection needs a private learner",
        )),
        _ => Ok(()),
    }
}

/// A per-example lambda (`lambda = N Lambda`) reads the run's public N, unless the cell's
/// lambda is a grid value.
pub fn check_per_example_lambda(
    rule: Option<LambdaRule>,
    at: &GridValues,
    ledger: &mut Ledger,
) -> Result<()> {
    match (at.lambda, rule) {
        (None, Some(LambdaRule::PerExample(l))) => per_example_lambda(l, ledger).map(drop),
        _ => Ok(()),
    }
}

/// One cell's LR-harness learner (every LR-family kind): `kind` with its `loss` and solver
/// `settings`; the cell's lambda is its grid value, else the pipeline's `rule`, else 1 (the
/// functional mechanism reads none); the budgets are the cell's train and lambda shares.
pub fn lr_learner(
    kind: LrKind,
    loss: Loss,
    settings: SolverSettings,
    rule: Option<LambdaRule>,
    scaling: Option<Scaling>,
    at: &GridValues,
    budget: &CellBudget,
) -> Result<Box<dyn Learner>> {
    let lambda = match (at.lambda, rule) {
        (Some(l), _) => LambdaRule::Fixed(l),
        (None, Some(rule)) => rule,
        (None, None) => LambdaRule::Fixed(1.0),
    };
    Ok(Box::new(LrConfig {
        kind,
        loss,
        lambda,
        scaling: scaling.unwrap_or_default(),
        epsilon: budget.train,
        lambda_epsilon: budget.lambda,
        settings,
    }))
}
