//! The harness path of a logistic-regression pipeline: scale the rows into the unit ball,
//! choose lambda, fit (privately or not), and record every step in the trial's ledger.

use super::design::{Design, Encoding, labels_pm1};
use super::mechanisms::objective_branch;
use super::preprocess::{Preprocessing, RowScaling, scale_rows, thesis_binary};
use super::select::{LAMBDA_GRID, exponential_mechanism};
use super::{LogisticModel, LogisticParams, PrivateLogisticParams, PrivateLrMethod};
use crate::data::{Dataset, Features};
use crate::error::{Error, Result};
use crate::learners::TrialLog;
use crate::privacy::Ledger;
use crate::rng::Rng;
use linfa::ParamGuard;
use rand::seq::SliceRandom;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How examples are brought into the unit ball (the privacy proofs need ||x|| <= 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scaling {
    /// The thesis: min-max every feature to [-1, 1] with bounds from the data (binary: 0/1 to
    /// -1/+1, constant columns dropped; dense: all rows divided by the largest norm), then rows
    /// to norm <= 1. Data-derived: NOT private.
    Thesis,
    /// Public bounds: binary 0/1 to -1/+1 and rows divided by sqrt(D); dense rows clipped to
    /// norm 1. Per-example with public constants: private.
    #[default]
    Public,
    /// 0/1 indicators, each row divided by its own norm. Per-example: private.
    OwnNorm,
}

/// How lambda is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LambdaRule {
    Fixed(f64),
    /// 5-fold cross-validation of the same learner over {1e-3, ..., 1e5}: NOT private.
    CrossValidation,
    /// Exponential mechanism over validation accuracies on held-out parts (Chaudhuri et al.
    /// 2011): private, spends the pipeline's `lambda` budget share.
    Private,
}

impl Serialize for LambdaRule {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            LambdaRule::Fixed(l) => s.serialize_f64(*l),
            LambdaRule::CrossValidation => s.serialize_str("cv"),
            LambdaRule::Private => s.serialize_str("private"),
        }
    }
}

impl<'de> Deserialize<'de> for LambdaRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(l) => Ok(LambdaRule::Fixed(l)),
            Raw::Str(s) if s == "cv" => Ok(LambdaRule::CrossValidation),
            Raw::Str(s) if s == "private" => Ok(LambdaRule::Private),
            Raw::Str(s) => Err(serde::de::Error::custom(format!(
                "lambda must be a number, \"cv\" or \"private\", got \"{s}\""
            ))),
        }
    }
}

/// Which fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LrKind {
    NonPrivate,
    Private(PrivateLrMethod),
}

/// A configured logistic-regression learner for one trial.
#[derive(Debug, Clone, PartialEq)]
pub struct LrConfig {
    pub kind: LrKind,
    pub lambda: LambdaRule,
    pub scaling: Scaling,
    /// Training budget (private kinds).
    pub epsilon: Option<f64>,
    /// Budget of private lambda selection.
    pub lambda_epsilon: Option<f64>,
}

/// Folds of the thesis's cross-validation.
pub const CV_FOLDS: usize = 5;

impl LrConfig {
    /// Fits on `train` (restricted to `features`), recording scaling, lambda choice and fit.
    pub fn fit(
        &self,
        data: &Dataset,
        train: &[u32],
        features: Option<&[usize]>,
        log: &mut TrialLog,
    ) -> Result<LogisticModel> {
        if data.n_classes() != 2 {
            return Err(Error::Data {
                dataset: data.name.clone(),
                reason: format!(
                    "logistic regression needs two classes, found {}",
                    data.n_classes()
                ),
            });
        }
        let (design, pre) = self.design(data, train, features)?;
        pre.record("scaling", &mut log.ledger);
        let y = labels_pm1(data, train)?;
        let lambda = match self.lambda {
            LambdaRule::Fixed(l) => l,
            LambdaRule::CrossValidation => {
                let mut rng = log.streams.stream("lambda/cv");
                let (l, _) = self.cross_validate(&design, &y, &mut rng)?;
                log.ledger.non_private(
                    "lambda_selection",
                    "5-fold cross-validation",
                    "the folds' accuracies choose lambda without noise",
                );
                l
            }
            LambdaRule::Private => {
                let eps = self.lambda_epsilon.ok_or_else(|| {
                    Error::param(
                        "budget.lambda",
                        "private lambda selection needs a budget share",
                    )
                })?;
                let mut rng = log.streams.stream("lambda/private");
                let (l, model) =
                    self.private_lambda(&design, &y, eps, &mut rng, &mut log.ledger)?;
                record_model(log, l, &model);
                return Ok(model);
            }
        };
        let mut rng = log.streams.stream("train/logistic");
        let model = self.fit_once(&design, &y, lambda, &mut rng, &mut log.ledger)?;
        if let LrKind::Private(PrivateLrMethod::Objective) = self.kind {
            let b = objective_branch(lambda, self.epsilon.unwrap_or(f64::NAN), design.n_rows());
            log.metrics.insert(
                "objective_delta_zero".into(),
                f64::from(u8::from(b.delta == 0.0)),
            );
        }
        record_model(log, lambda, &model);
        Ok(model)
    }

    fn design<'a>(
        &self,
        data: &'a Dataset,
        train: &[u32],
        features: Option<&[usize]>,
    ) -> Result<(Design<'a>, Preprocessing)> {
        let binary = matches!(data.features, Features::Binary(_));
        Ok(match (self.scaling, binary) {
            (Scaling::Thesis, true) => thesis_binary(data, train, features, true)?,
            (Scaling::Public, true) => thesis_binary(data, train, features, false)?,
            (scaling, _) => {
                let encoding = Encoding::Indicator;
                let mut design = Design::new(data, train, features, encoding)?;
                let rule = match scaling {
                    Scaling::Thesis => RowScaling::MaxNorm,
                    Scaling::Public => RowScaling::ClipToUnit,
                    Scaling::OwnNorm => RowScaling::OwnNorm,
                };
                let pre = scale_rows(&mut design, rule);
                (design, pre)
            }
        })
    }

    /// One fit at a given lambda; private kinds record their spend in `ledger`.
    fn fit_once(
        &self,
        design: &Design,
        y: &[f64],
        lambda: f64,
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<LogisticModel> {
        match self.kind {
            LrKind::NonPrivate => {
                let model = LogisticParams::new(lambda).check()?.fit_design(design, y);
                ledger.non_private(
                    "train",
                    "none (exact minimiser)",
                    "non-private logistic regression",
                );
                Ok(model)
            }
            LrKind::Private(method) => {
                let eps = self
                    .epsilon
                    .ok_or_else(|| Error::param("epsilon", "a private LR needs a budget"))?;
                let p = PrivateLogisticParams::new(method, eps, lambda).check()?;
                Ok(p.fit_design(design, y, rng, ledger)?.model)
            }
        }
    }

    /// k-fold cross-validation of this learner (private kinds fit privately in every fold, as
    /// the thesis does); ties go to the larger lambda. Returns lambda and its CV accuracy.
    fn cross_validate(&self, design: &Design, y: &[f64], rng: &mut Rng) -> Result<(f64, f64)> {
        let n = design.n_rows();
        if n < CV_FOLDS {
            return Err(Error::param(
                "lambda",
                format!("cross-validation needs at least {CV_FOLDS} rows"),
            ));
        }
        let mut perm: Vec<usize> = (0..n).collect();
        perm.shuffle(rng);
        let mut best = (f64::NAN, f64::NEG_INFINITY);
        for &lambda in &LAMBDA_GRID {
            let mut correct = 0usize;
            for f in 0..CV_FOLDS {
                let (tr, va): (Vec<usize>, Vec<usize>) = perm.iter().enumerate().fold(
                    (Vec::new(), Vec::new()),
                    |(mut tr, mut va), (p, &i)| {
                        if p % CV_FOLDS == f {
                            va.push(i)
                        } else {
                            tr.push(i)
                        }
                        (tr, va)
                    },
                );
                let ytr: Vec<f64> = tr.iter().map(|&i| y[i]).collect();
                let model = self.fit_once(
                    &design.subset(&tr),
                    &ytr,
                    lambda,
                    rng,
                    &mut Ledger::default(),
                )?;
                let dva = design.subset(&va);
                let z = model.decision(&dva);
                correct += va
                    .iter()
                    .zip(&z)
                    .filter(|&(&i, &zi)| (zi > 0.0) == (y[i] > 0.0))
                    .count();
            }
            let acc = correct as f64 / n as f64;
            if acc >= best.1 {
                best = (lambda, acc);
            }
        }
        Ok(best)
    }

    /// Private lambda selection: |grid| + 1 disjoint parts, a candidate per lambda on its own
    /// part (parallel composition: eps_train in total), validation accuracy on the last part
    /// (sensitivity 1), the exponential mechanism with `eps` picks the released candidate.
    fn private_lambda(
        &self,
        design: &Design,
        y: &[f64],
        eps: f64,
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<(f64, LogisticModel)> {
        let k = LAMBDA_GRID.len();
        let n = design.n_rows();
        if n <= k {
            return Err(Error::param(
                "lambda",
                format!("private selection needs more than {k} rows"),
            ));
        }
        let mut perm: Vec<usize> = (0..n).collect();
        perm.shuffle(rng);
        let parts: Vec<Vec<usize>> = (0..=k)
            .map(|r| perm.iter().copied().skip(r).step_by(k + 1).collect())
            .collect();
        let val = design.subset(&parts[k]);
        let mut candidates = Vec::with_capacity(k);
        let mut scores = Vec::with_capacity(k);
        let mut spent = Ledger::default();
        for (r, &lambda) in LAMBDA_GRID.iter().enumerate() {
            let part = design.subset(&parts[r]);
            let yr: Vec<f64> = parts[r].iter().map(|&i| y[i]).collect();
            let mut one = Ledger::default();
            let model = self.fit_once(&part, &yr, lambda, rng, &mut one)?;
            if r == 0 {
                spent = one;
            }
            let z = model.decision(&val);
            scores.push(
                parts[k]
                    .iter()
                    .zip(&z)
                    .filter(|&(&i, &zi)| (zi > 0.0) == (y[i] > 0.0))
                    .count() as f64,
            );
            candidates.push(model);
        }
        for mut e in spent.entries {
            e.note = Some(format!(
                "{k} candidates on disjoint parts (parallel composition)"
            ));
            ledger.entries.push(e);
        }
        let pick = exponential_mechanism(&scores, eps, 1.0, rng);
        ledger.spend(
            "lambda_selection",
            "exponential mechanism over validation accuracy",
            eps,
            1.0,
        );
        Ok((LAMBDA_GRID[pick], candidates.swap_remove(pick)))
    }
}

fn record_model(log: &mut TrialLog, lambda: f64, model: &LogisticModel) {
    log.metrics.insert("lambda".into(), lambda);
    log.metrics.insert("log10_lambda".into(), lambda.log10());
    if let Some(c) = &model.convergence {
        log.metrics
            .insert("converged".into(), f64::from(u8::from(c.converged)));
        log.metrics
            .insert("solver_iterations".into(), c.iterations as f64);
        log.metrics.insert("gradient_norm".into(), c.grad_norm);
    }
}
