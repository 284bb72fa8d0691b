//! The surveys' other private linear classifiers (issue 13), each with `loss = "logistic"`
//! (default) or `"huber"` (the Huber SVM, h = 0.5):
//! `noisy_gd`, `dp_sgd` (RDP accountant, (ε, δ) at δ = 1/N² unless `delta`, N public),
//! `input_perturbation` (replace-one), `averaged` (m models, sequential or parallel) and
//! `subsample_aggregate` (Smith 2011). One struct; each kind reads only its `FIELDS`.

use super::logistic::{check_lambda_rule, check_per_example_lambda, lr_learner};
use super::{Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use crate::error::Result;
use crate::learners::Learner;
use crate::learners::logistic::dp_sgd::{Length, Sampling, SgdPlan};
use crate::learners::logistic::ensemble::Ensemble;
use crate::learners::logistic::{
    LambdaRule, Loss, LrKind, PrivateLrMethod, Scaling, SolverSettings,
};
use crate::privacy::Ledger;
use linfa::ParamGuard;
use serde::Deserialize;

/// `noisy_gd`: full-batch noisy gradient descent.
pub type NoisyGd = Erm<0>;
/// `dp_sgd`: Poisson-subsampled DP-SGD.
pub type DpSgd = Erm<1>;
/// `input_perturbation`: noisy rows and labels, then the exact learner.
pub type InputPerturbation = Erm<2>;
/// `averaged`: the mean of m output- or objective-perturbation models.
pub type Averaged = Erm<3>;
/// `subsample_aggregate`: k exact block fits, clipped, noisy mean.
pub type SubsampleAggregate = Erm<4>;

/// The loss a spec names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossName {
    #[default]
    Logistic,
    /// The Huber SVM loss, h = 0.5.
    Huber,
}

/// Which private fit `averaged` repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    #[default]
    Output,
    Objective,
}

/// How `averaged` spends ε.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every model on all rows at ε/m.
    #[default]
    Sequential,
    /// Every model on its own disjoint block at ε.
    Parallel,
}

/// A private linear learner of the ERM shoot-out; `K` picks the kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Erm<const K: u8> {
    /// A number, `"cv"` (non-private), `"private"` (Chaudhuri et al.'s Algorithm 3: at the
    /// pipeline's eps by parallel composition, or with a `budget.lambda` share for the
    /// selection beside training's) or a grid axis.
    lambda: Option<LambdaRule>,
    /// How rows are scaled into the unit ball (default `public`).
    scaling: Option<Scaling>,
    /// `logistic` (default) or `huber`.
    loss: Option<LossName>,
    /// Clipping norm C (default 1).
    clip: Option<f64>,
    /// Noisy GD steps (default 100).
    steps: Option<u64>,
    /// DP-SGD expected batch size (default 256).
    batch_size: Option<usize>,
    /// DP-SGD epochs (default 10).
    epochs: Option<f64>,
    /// Step size η (default 1).
    learning_rate: Option<f64>,
    /// δ of the (ε, δ) guarantee (default 1/N²).
    delta: Option<f64>,
    /// Share of ε spent on the labels (default 0.5).
    label_share: Option<f64>,
    /// `output` (default) or `objective`.
    method: Option<Method>,
    /// Number of models m (default 1).
    models: Option<usize>,
    /// `sequential` (default) or `parallel`.
    mode: Option<Mode>,
    /// Number of blocks k (default 10).
    blocks: Option<usize>,
    /// Public coefficient bound B (default 5).
    bound: Option<f64>,
}

impl<const K: u8> Described for Erm<K> {
    const NAME: &'static str = [
        "noisy_gd",
        "dp_sgd",
        "input_perturbation",
        "averaged",
        "subsample_aggregate",
    ][K as usize];
    const ABOUT: &'static str = [
        "noisy gradient descent: clipped full-batch gradients + Gaussian noise, sigma from the RDP accountant ((eps, delta)-DP, delta = 1/N^2 by default; N the run's public size)",
        "DP-SGD: Poisson-subsampled clipped gradients + Gaussian noise, RDP accountant ((eps, delta)-DP, delta = 1/N^2 by default; N the run's public size; add/remove only)",
        "input perturbation: L2 noise (Delta = 2) on every row + randomized response on every label, declared split, then the exact learner (eps-DP, replace-one only)",
        "average of m output/objective-perturbation models: sequential (eps/m each) or parallel (disjoint blocks, eps each) (eps-DP)",
        "subsample-and-aggregate (Smith 2011): k exact block fits clipped to [-B, B]^D, mean + L2 noise, Delta = 2 B sqrt(D) / k (eps-DP)",
    ][K as usize];
    const FIELDS: &'static [&'static str] = match K {
        0 => &[
            "lambda",
            "scaling",
            "loss",
            "clip",
            "steps",
            "learning_rate",
            "delta",
        ],
        1 => &[
            "lambda",
            "scaling",
            "loss",
            "clip",
            "batch_size",
            "epochs",
            "learning_rate",
            "delta",
        ],
        2 => &["lambda", "scaling", "loss", "label_share"],
        3 => &["lambda", "scaling", "loss", "method", "models", "mode"],
        _ => &["lambda", "scaling", "loss", "blocks", "bound"],
    };
}

impl<const K: u8> Erm<K> {
    fn kind(&self) -> LrKind {
        let plan = |sampling, length| SgdPlan {
            sampling,
            length,
            clip: self.clip.unwrap_or(1.0),
            learning_rate: self.learning_rate.unwrap_or(1.0),
            delta: self.delta,
        };
        match K {
            0 => LrKind::Sgd(plan(
                Sampling::Full,
                Length::Steps(self.steps.unwrap_or(100)),
            )),
            1 => LrKind::Sgd(plan(
                Sampling::ExpectedBatch(self.batch_size.unwrap_or(256)),
                Length::Epochs(self.epochs.unwrap_or(10.0)),
            )),
            2 => LrKind::Input {
                label_share: self.label_share.unwrap_or(0.5),
            },
            3 => {
                let m = self.models.unwrap_or(1);
                let method = match self.method.unwrap_or_default() {
                    Method::Output => PrivateLrMethod::Output,
                    Method::Objective => PrivateLrMethod::Objective,
                };
                LrKind::Ensemble(
                    method,
                    match self.mode.unwrap_or_default() {
                        Mode::Sequential => Ensemble::Sequential(m),
                        Mode::Parallel => Ensemble::Parallel(m),
                    },
                )
            }
            _ => LrKind::Ensemble(
                PrivateLrMethod::Output,
                Ensemble::SubsampleAggregate {
                    blocks: self.blocks.unwrap_or(10),
                    bound: self.bound.unwrap_or(5.0),
                },
            ),
        }
    }

    fn check_numbers(&self) -> std::result::Result<(), Refusal> {
        let positive = |field: &'static str, v: Option<f64>| match v {
            Some(x) if !(x.is_finite() && x > 0.0) => {
                Err(refuse(field, format!("must be finite and > 0, got {x}")))
            }
            _ => Ok(()),
        };
        positive("clip", self.clip)?;
        positive("learning_rate", self.learning_rate)?;
        positive("epochs", self.epochs)?;
        positive("bound", self.bound)?;
        let at_least_one = |field: &'static str, v: Option<u64>| match v {
            Some(0) => Err(refuse(field, "must be at least 1")),
            _ => Ok(()),
        };
        at_least_one("steps", self.steps)?;
        at_least_one("batch_size", self.batch_size.map(|v| v as u64))?;
        at_least_one("models", self.models.map(|v| v as u64))?;
        at_least_one("blocks", self.blocks.map(|v| v as u64))?;
        if let Some(d) = self.delta
            && !(d > 0.0 && d < 1.0)
        {
            return Err(refuse("delta", format!("must be in (0, 1), got {d}")));
        }
        if let Some(s) = self.label_share
            && !(s > 0.0 && s < 1.0)
        {
            return Err(refuse("label_share", format!("must be in (0, 1), got {s}")));
        }
        Ok(())
    }
}

impl<const K: u8> LearnerKind for Erm<K> {
    fn private(&self) -> bool {
        true
    }

    fn axes(&self) -> &'static [Axis] {
        &[Axis::Lambda]
    }

    fn validate(&self, grid: &[Axis]) -> std::result::Result<(), Refusal> {
        self.check_numbers()?;
        check_lambda_rule(self.lambda, grid, true, true)
    }

    fn selects_lambda_privately(&self) -> bool {
        self.lambda == Some(LambdaRule::Private)
    }

    fn learner(&self, at: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let loss = match self.loss.unwrap_or_default() {
            LossName::Logistic => Loss::Logistic,
            LossName::Huber => Loss::HUBER_SVM,
        };
        let settings = SolverSettings::default();
        lr_learner(
            self.kind(),
            loss,
            settings,
            self.lambda,
            self.scaling,
            at,
            budget,
        )
    }

    /// What the fit reads of the run: noisy GD and DP-SGD read the public N (q, the steps, δ)
    /// and need the accountant to reach the cell's ε; input perturbation needs replace-one;
    /// a per-example lambda reads N.
    fn check_run(&self, at: &GridValues, budget: &CellBudget, ledger: &mut Ledger) -> Result<()> {
        check_per_example_lambda(self.lambda, at, ledger)?;
        match self.kind() {
            LrKind::Sgd(plan) => {
                let epsilon = budget.train_of(Self::NAME)?;
                let params = plan.params(epsilon, 1.0, Loss::Logistic).check()?;
                params.public_plan(ledger).map(drop)
            }
            LrKind::Input { .. } => {
                crate::learners::logistic::input::check_relation(ledger.relation())
            }
            _ => Ok(()),
        }
    }

    fn cost(&self) -> u64 {
        let fits = match K {
            3 => self.models.unwrap_or(1) as u64,
            4 => self.blocks.unwrap_or(10) as u64,
            _ => 2,
        };
        20 * fits
            * match self.lambda {
                Some(LambdaRule::CrossValidation) => 46,
                Some(LambdaRule::Private) => 10,
                _ => 1,
            }
    }
}
