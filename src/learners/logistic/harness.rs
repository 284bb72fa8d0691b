//! The harness path of a logistic-regression pipeline: scale the rows into the unit ball,
//! choose lambda, fit (privately or not), and record every step in the trial's ledger.

use super::dense::{DenseRows, fit_rows};
use super::design::{Design, DesignParts, Encoding, Splitting, check_two_classes, labels_pm1};
use super::dp_sgd::SgdPlan;
use super::ensemble::{Ensemble, fit_ensemble};
use super::input::input_perturbation;
use super::loss::Loss;
use super::mechanisms::objective_branch_by;
use super::preprocess::{Preprocessing, RowScaling, scale_rows, thesis_binary};
use super::row_caches::DatasetCaches;
use super::select::{
    LAMBDA_GRID, Starts, Tuning, cross_validate_lambda, cross_validate_path, private_select_lambda,
};
use super::solver::{Objective, SolverSettings};
use super::{
    DrawnNoise, LogisticModel, LogisticParams, PrivateLogisticParams, PrivateLogisticValidParams,
    PrivateLrMethod,
};
use crate::data::{Dataset, Features};
use crate::error::{Error, Result};
use crate::learners::TrialLog;
use crate::memo::{Footprint, KeyBuilder};
use crate::privacy::{Ledger, PublicSize};
use crate::rng::Rng;
use linfa::ParamGuard;
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
    /// Each column divided by its largest absolute value in the data (no centring), then rows
    /// to norm <= 1: the thesis's other scaling (A.6, Table B.8). Data-derived: NOT private.
    ColumnMax,
}

/// How lambda is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LambdaRule {
    Fixed(f64),
    /// Chaudhuri et al.'s per-example Lambda (spec `{ per_example = L }`): the thesis's lambda
    /// is N Lambda, so the regulariser's weight per example stays fixed as N grows. N is the
    /// run's public training-set size (`Ledger::public_size`), so lambda, and with it the
    /// noise of output perturbation (1/lambda), is the same on both neighbours; the rows' own
    /// count, private under add/remove, is never read.
    PerExample(f64),
    /// 5-fold cross-validation of the same learner over {1e-3, ..., 1e5}: NOT private.
    CrossValidation,
    /// Exponential mechanism over validation accuracies on held-out parts (Chaudhuri et al.
    /// 2011): private, spends the pipeline's `lambda` budget share.
    Private,
}

/// lambda = N Lambda for a per-example `big_lambda`, N the run's public training-set size (the
/// fit's read, and the preflight's check of it).
pub fn per_example_lambda(big_lambda: f64, ledger: &mut Ledger) -> Result<f64> {
    Ok(big_lambda * ledger.public_size("lambda = N Lambda (per-example Lambda)")? as f64)
}

impl Serialize for LambdaRule {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            LambdaRule::Fixed(l) => s.serialize_f64(*l),
            LambdaRule::PerExample(l) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("per_example", l)?;
                m.end()
            }
            LambdaRule::CrossValidation => s.serialize_str("cv"),
            LambdaRule::Private => s.serialize_str("private"),
        }
    }
}

impl<'de> Deserialize<'de> for LambdaRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use crate::learners::NumberOrWord;
        #[derive(Deserialize)]
        #[serde(
            untagged,
            expecting = "expected lambda as a number, { per_example = Lambda }, \"cv\" or \"private\""
        )]
        enum Raw {
            Plain(NumberOrWord),
            PerExample { per_example: f64 },
        }
        match Raw::deserialize(d)? {
            Raw::Plain(NumberOrWord::Number(l)) => Ok(LambdaRule::Fixed(l)),
            Raw::PerExample { per_example } => Ok(LambdaRule::PerExample(per_example)),
            Raw::Plain(NumberOrWord::Word(s)) if s == "cv" => Ok(LambdaRule::CrossValidation),
            Raw::Plain(NumberOrWord::Word(s)) if s == "private" => Ok(LambdaRule::Private),
            Raw::Plain(NumberOrWord::Word(s)) => Err(serde::de::Error::custom(format!(
                "lambda must be a number, {{ per_example = Lambda }}, \"cv\" or \"private\", got \"{s}\""
            ))),
        }
    }
}

/// Which fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LrKind {
    NonPrivate,
    Private(PrivateLrMethod),
    /// Noisy gradient descent or DP-SGD ((ε, δ)-DP by the RDP accountant).
    Sgd(SgdPlan),
    /// Input perturbation, `label_share` of ε on the labels (replace-one only).
    Input {
        label_share: f64,
    },
    /// Several fits combined: private fits of the method (averaging), or exact fits
    /// (subsample-and-aggregate, which ignores the method).
    Ensemble(PrivateLrMethod, Ensemble),
}

/// A configured logistic-regression learner for one trial.
#[derive(Debug, Clone, PartialEq)]
pub struct LrConfig {
    pub kind: LrKind,
    /// The per-example loss (logistic regression or the Huber SVM).
    pub loss: Loss,
    pub lambda: LambdaRule,
    pub scaling: Scaling,
    /// Training budget (private kinds).
    pub epsilon: Option<f64>,
    /// Budget of private lambda selection.
    pub lambda_epsilon: Option<f64>,
    /// Solver choice and tolerance of every fit (spec fields `solver`, `tolerance`).
    pub settings: SolverSettings,
}

/// A scaled binary design shared across a dataset's cells
/// ([`super::row_caches::SharedWork::designs`]; see [`crate::memo`]).
pub(super) struct SharedDesign {
    parts: DesignParts,
    pre: Preprocessing,
}

impl Footprint for Option<SharedDesign> {
    fn bytes(&self) -> usize {
        self.as_ref()
            .map_or(0, |s| s.parts.bytes() + s.pre.description.len())
    }
}

impl Scaling {
    /// The spec spelling.
    pub fn name(self) -> &'static str {
        match self {
            Scaling::Thesis => "thesis",
            Scaling::Public => "public",
            Scaling::OwnNorm => "own_norm",
            Scaling::ColumnMax => "column_max",
        }
    }
}

/// Folds of the thesis's cross-validation.
pub const CV_FOLDS: usize = 5;

impl LrConfig {
    /// Fits on `train` (restricted to `features`), recording scaling, lambda choice and fit.
    /// `caches` are the dataset's ([`super::schedule`]); without them a dense design's memo
    /// key hashes its rows' values. `splitting` is how the fit may split its work, as the
    /// scheduler chose for the cell's batch (the same bits whatever it says).
    pub fn fit(
        &self,
        data: &Dataset,
        train: &[u32],
        features: Option<&[usize]>,
        caches: Option<&DatasetCaches>,
        splitting: Splitting,
        log: &mut TrialLog,
    ) -> Result<LogisticModel> {
        check_two_classes(data)?;
        let dense = match (&data.features, self.scaling, &data.bounds) {
            (Features::Dense(x), Scaling::Thesis | Scaling::ColumnMax, _) => Some((x.view(), None)),
            (Features::Dense(x), Scaling::Public, b) => Some((x.view(), b.as_ref())),
            _ => None,
        };
        let Some((x, bounds)) = dense else {
            let (design, pre) = crate::profile::time("preprocess", || {
                self.shared_design(data, train, features, caches, log)
            })?;
            pre.record("scaling", &mut log.ledger);
            return self.fit_scaled(&design.with_splitting(splitting), data, train, log);
        };
        let rows = fit_rows(data, train);
        let shared = crate::profile::time("preprocess", || {
            let mut rows = self.dense_rows(x, &rows, features, bounds, caches);
            rows.through_map = splitting.through_map;
            rows.shared()
        });
        let design = shared.design(x).with_splitting(splitting);
        if let Some(key) = design.key() {
            log.shared.insert("design".into(), key.to_string());
        }
        shared
            .transform
            .preprocessing()
            .record("scaling", &mut log.ledger);
        let model = self.fit_scaled(&design, data, &rows, log)?;
        Ok(shared.transform.fold_into(model))
    }

    /// The dense `rows` of `x` (restricted to `features`) as this config scales them, with
    /// the `public` bounds it uses and the dataset's `caches`.
    fn dense_rows<'r>(
        &self,
        x: ndarray::ArrayView2<'r, f64>,
        rows: &'r [u32],
        features: Option<&'r [usize]>,
        public: Option<&'r crate::data::PublicBounds>,
        caches: Option<&'r DatasetCaches>,
    ) -> DenseRows<'r> {
        DenseRows {
            x,
            rows,
            features,
            scaling: self.scaling,
            public,
            digests: caches.map(|c| &c.digests),
            bounds: caches.map(|c| &c.bounds),
            work: caches.map(|c| &c.work),
            through_map: false,
        }
    }

    /// Lambda by the thesis's 5-fold cross-validation over [`LAMBDA_GRID`] (not private; the
    /// ledger says so).
    fn cross_validated_lambda(
        &self,
        design: &Design,
        y: &[f64],
        log: &mut TrialLog,
    ) -> Result<f64> {
        let mut rng = log.streams.stream("lambda/cv");
        let choice = crate::profile::time("cv", || {
            if self.kind == LrKind::NonPrivate {
                // Noise-free fits: warm starts along the lambda path, same folds.
                cross_validate_lambda(
                    design,
                    y,
                    &LAMBDA_GRID,
                    CV_FOLDS,
                    &self.settings,
                    Starts::Warm,
                    &mut rng,
                )
            } else {
                cross_validate_path(
                    design,
                    y,
                    &LAMBDA_GRID,
                    CV_FOLDS,
                    &mut rng,
                    |d, yy, l, rng| self.cv_draw(d, yy, l, rng, &log.ledger),
                    |d, yy, _, drawn, start| match drawn {
                        CvDraw::Noise(p, noise) => p.fit_drawn(d, yy, noise, start),
                        CvDraw::Fitted(theta) => (Vec::new(), theta.clone()),
                    },
                )
            }
        })?;
        log.ledger.non_private(
            "lambda_selection",
            "5-fold cross-validation",
            "the folds' accuracies choose lambda without noise",
        );
        Ok(choice.lambda)
    }

    /// Lambda choice and fit on an already scaled design.
    fn fit_scaled(
        &self,
        design: &Design,
        data: &Dataset,
        train: &[u32],
        log: &mut TrialLog,
    ) -> Result<LogisticModel> {
        let y = labels_pm1(data, train)?;
        let lambda = match self.lambda {
            LambdaRule::Fixed(l) => l,
            LambdaRule::PerExample(l) => per_example_lambda(l, &mut log.ledger)?,
            LambdaRule::CrossValidation => self.cross_validated_lambda(design, &y, log)?,
            LambdaRule::Private => {
                // No lambda share: Algorithm 3 as published, the selection at the training's
                // eps on its own part; a share: the sequential budget split.
                let tuning = match self.lambda_epsilon {
                    Some(eps_select) => Tuning::Sequential { eps_select },
                    None => Tuning::Parallel {
                        eps_select: self.train_epsilon()?,
                    },
                };
                let mut rng = log.streams.stream("lambda/private");
                let (choice, model) = crate::profile::time("cv", || {
                    private_select_lambda(
                        design,
                        &y,
                        &LAMBDA_GRID,
                        tuning,
                        &mut rng,
                        &mut log.ledger,
                        |d, yy, l, rng, ledger| self.fit_once(d, yy, l, rng, ledger),
                    )
                })?;
                let l = choice.lambda;
                record_model(log, l, &model);
                self.record_distance(design, &y, l, &model, data.truth.as_deref(), log)?;
                return Ok(model);
            }
        };
        let mut rng = log.streams.stream("train/logistic");
        if self.loss == Loss::Logistic
            && matches!(
                self.kind,
                LrKind::NonPrivate
                    | LrKind::Private(PrivateLrMethod::Output | PrivateLrMethod::OutputLambdaTwice)
            )
            && let Some(key) = Objective::regularised(design, &y, lambda).memo_key(&self.settings)
        {
            // The exact minimiser is noise-free: shared with every cell of the same key.
            log.shared.insert("fit".into(), key.to_string());
        }
        let model = self.fit_once(design, &y, lambda, &mut rng, &mut log.ledger)?;
        if let LrKind::Private(m) = self.kind
            && m.is_objective()
        {
            let b = objective_branch_by(
                m.branch_rule(),
                self.loss.curvature(),
                lambda,
                self.epsilon.unwrap_or(f64::NAN),
                design.n_rows(),
                log.ledger.relation(),
            );
            log.metrics.insert(
                "objective_delta_zero".into(),
                f64::from(u8::from(b.delta == 0.0)),
            );
        }
        record_model(log, lambda, &model);
        self.record_distance(design, &y, lambda, &model, data.truth.as_deref(), log)?;
        Ok(model)
    }

    /// `w_distance` = ||theta_priv - theta_np||, theta_np the exact minimiser at the same
    /// lambda on the same scaled rows (private kinds only): the privacy error the surveys plot.
    /// With a synthetic source's true weights w* (rows already in the unit ball, so theta is on
    /// the source's scale) also `sampling_error` = ||theta_np - w*||. Only when the spec shows
    /// them (`log.reference_fit`): for a private kind they cost a second, non-private fit.
    fn record_distance(
        &self,
        design: &Design,
        y: &[f64],
        lambda: f64,
        model: &LogisticModel,
        truth: Option<&[f64]>,
        log: &mut TrialLog,
    ) -> Result<()> {
        let truth = truth.filter(|w| w.len() == design.dim());
        if !log.reference_fit || (self.kind == LrKind::NonPrivate && truth.is_none()) {
            return Ok(());
        }
        let distance = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let exact = match self.kind {
            LrKind::NonPrivate => model.theta.to_vec(),
            _ => {
                let exact = LogisticParams::new(lambda)
                    .settings(self.settings)
                    .loss(self.loss)
                    .check()?
                    .fit_design(design, y);
                let d = distance(
                    exact.theta.as_slice().expect("contiguous"),
                    model.theta.as_slice().expect("contiguous"),
                );
                log.metrics.insert("w_distance".into(), d);
                exact.theta.to_vec()
            }
        };
        if let Some(w) = truth {
            log.metrics
                .insert("sampling_error".into(), distance(&exact, w));
        }
        Ok(())
    }

    /// [`Self::design`] through the memo: a binary design depends only on the training rows'
    /// content, the features and the scaling, so cells of one split (every trial, on a
    /// dataset with a fixed split) share it. A dense design borrows the data and only gains
    /// its key ([`DenseRows::key`]), so its noise-free fits are shared. The trial records
    /// the key as `shared.design`.
    fn shared_design<'a>(
        &self,
        data: &'a Dataset,
        train: &[u32],
        features: Option<&[usize]>,
        caches: Option<&DatasetCaches>,
        log: &mut TrialLog,
    ) -> Result<(Design<'a>, Preprocessing)> {
        let m = match &data.features {
            Features::Binary(m) => m,
            Features::Dense(x) => {
                let (design, pre) = self.design(data, train, features)?;
                let rows = self.dense_rows(x.view(), train, features, None, caches);
                let Some(key) = rows.key() else {
                    return Ok((design, pre));
                };
                log.shared.insert("design".into(), key.to_string());
                let design = match caches {
                    Some(c) => design.memoised_in(&c.work),
                    None => design,
                };
                return Ok((design.with_key(key), pre));
            }
        };
        let key = KeyBuilder::new("lr-design")
            .str(self.scaling.name())
            .u64(data.n_features() as u64)
            .u64(m.n_cols() as u64)
            .u64(u64::from(features.is_some()))
            .usizes(features.unwrap_or(&[]))
            .u32s(train)
            .u32_rows(train.iter().map(|&r| m.row(r as usize)))
            .finish();
        let Some(work) = caches.map(|c| &c.work) else {
            // Outside a run's workspace: computed here, keyed as the memo would key it.
            let (design, pre) = self.design(data, train, features)?;
            log.shared.insert("design".into(), key.to_string());
            return Ok((design.with_key(key), pre));
        };
        let shared = work.designs.get_or_compute(key, || {
            let (design, pre) = self.design(data, train, features).ok()?;
            Some(SharedDesign {
                parts: design.parts()?,
                pre,
            })
        });
        match &*shared {
            Some(s) => {
                log.shared.insert("design".into(), key.to_string());
                let design = Design::from_parts(data, &s.parts, key)?.memoised_in(work);
                Ok((design, s.pre.clone()))
            }
            // Not shareable (an error, reported by computing it here).
            None => self.design(data, train, features),
        }
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
                let (rule, private) = match scaling {
                    Scaling::OwnNorm => (RowScaling::OwnNorm, true),
                    Scaling::Public => (RowScaling::ClipToUnit, true),
                    // Binary columns: the largest value is 1 unless the column is all zero.
                    Scaling::Thesis | Scaling::ColumnMax => (RowScaling::ClipToUnit, false),
                };
                let mut pre = scale_rows(&mut design, rule);
                if !private {
                    pre = Preprocessing {
                        description: format!(
                            "columns by their data maximum, then {}",
                            pre.description
                        ),
                        private: false,
                    };
                }
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
                let model = LogisticParams::new(lambda)
                    .settings(self.settings)
                    .loss(self.loss)
                    .check()?
                    .fit_design(design, y);
                ledger.non_private(
                    "train",
                    "none (exact minimiser)",
                    "non-private logistic regression",
                );
                Ok(model)
            }
            LrKind::Private(method) => {
                let p = self.private_params(method, lambda)?;
                Ok(p.fit_design(design, y, rng, ledger)?.model)
            }
            LrKind::Sgd(plan) => {
                let p = plan.params(self.train_epsilon()?, lambda, self.loss);
                Ok(p.check()?.fit_design(design, y, rng, ledger)?.model)
            }
            LrKind::Input { label_share } => {
                let (t, c) = input_perturbation(
                    self.loss,
                    design,
                    y,
                    lambda,
                    self.train_epsilon()?,
                    label_share,
                    &self.settings,
                    rng,
                    ledger,
                )?;
                Ok(LogisticModel::new(t, Some(c), design))
            }
            LrKind::Ensemble(method, ensemble) => {
                let theta = fit_ensemble(
                    ensemble,
                    design.n_rows(),
                    self.train_epsilon()?,
                    rng,
                    ledger,
                    |rows, eps, rng, ledger| {
                        let sub = rows.map(|r| design.subset(r));
                        let ys: Vec<f64> = match rows {
                            Some(r) => r.iter().map(|&i| y[i]).collect(),
                            None => y.to_vec(),
                        };
                        let d = sub.as_ref().unwrap_or(design);
                        // A member's fit: the method at its share of the budget, or the
                        // exact non-private fit.
                        let member = LrConfig {
                            kind: eps.map_or(LrKind::NonPrivate, |_| LrKind::Private(method)),
                            epsilon: eps,
                            ..*self
                        };
                        Ok(member.fit_once(d, &ys, lambda, rng, ledger)?.theta.to_vec())
                    },
                )?;
                ledger.public(
                    "aggregate",
                    &ensemble.describe(),
                    "post-processing of the private releases",
                );
                Ok(LogisticModel::new(theta, None, design))
            }
        }
    }

    fn train_epsilon(&self) -> Result<f64> {
        self.epsilon
            .ok_or_else(|| Error::param("epsilon", "a private learner needs a budget"))
    }

    /// What one private cross-validation fit takes from `rng` (lambda outer, fold inner): for
    /// output perturbation only its noise, so that the exact fold fits then run along the
    /// lambda path with warm starts ([`PrivateLrMethod::warm_cv_pays`]); else the whole cold
    /// fit. A scratch ledger takes the charges: CV is recorded as one non-private step.
    fn cv_draw(
        &self,
        design: &Design,
        y: &[f64],
        lambda: f64,
        rng: &mut Rng,
        ledger: &Ledger,
    ) -> Result<CvDraw> {
        // Cross-validation is not private: a fold's fits read the fold's own size.
        let fold = PublicSize::new(
            design.n_rows(),
            "a cross-validation fold's own size (cross-validation is not private)",
        );
        let mut scratch = ledger.scratch_sized(Some(fold));
        Ok(match self.kind {
            LrKind::Private(method) if method.warm_cv_pays() => {
                let p = self.private_params(method, lambda)?;
                let noise = p.draw(design, y, rng, &mut scratch)?;
                CvDraw::Noise(p, noise)
            }
            _ => CvDraw::Fitted(
                self.fit_once(design, y, lambda, rng, &mut scratch)?
                    .theta
                    .to_vec(),
            ),
        })
    }

    fn private_params(
        &self,
        method: PrivateLrMethod,
        lambda: f64,
    ) -> Result<PrivateLogisticValidParams> {
        PrivateLogisticParams::new(method, self.train_epsilon()?, lambda)
            .settings(self.settings)
            .loss(self.loss)
            .check()
    }
}

/// One private cross-validation fit's first pass ([`LrConfig::cv_draw`]).
enum CvDraw {
    /// Output perturbation's noise, added to the exact fold fit in the second pass.
    Noise(PrivateLogisticValidParams, DrawnNoise),
    /// A whole cold fit's released theta.
    Fitted(Vec<f64>),
}

fn record_model(log: &mut TrialLog, lambda: f64, model: &LogisticModel) {
    log.metrics.insert("lambda".into(), lambda);
    log.metrics.insert("log10_lambda".into(), lambda.log10());
    if let Some(c) = &model.convergence {
        log.metrics
            .insert("converged".into(), f64::from(u8::from(c.converged)));
        log.metrics
            .insert("solver_iterations".into(), c.iterations as f64);
        log.metrics.insert("solver".into(), c.solver.code());
        log.metrics.insert("gradient_norm".into(), c.grad_norm);
    }
}

impl crate::learners::Learner for LrConfig {
    fn fit(
        &self,
        input: &crate::learners::FitInput,
        log: &mut TrialLog,
    ) -> Result<Box<dyn crate::learners::Classifier>> {
        let ws = input.workspace;
        let (caches, splitting) = (
            super::schedule::caches_of(ws),
            super::schedule::splitting_of(ws),
        );
        let model = LrConfig::fit(
            self,
            input.data,
            input.train,
            input.features,
            caches,
            splitting,
            log,
        )?;
        Ok(Box::new(model))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_two_classes(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::catalog::ToyGaussianDef;
    use crate::data::synthetic::toy_gaussian;
    use crate::learners::Classifier;

    fn config(scaling: Scaling) -> LrConfig {
        LrConfig {
            kind: LrKind::NonPrivate,
            loss: Loss::Logistic,
            lambda: LambdaRule::Fixed(1.0),
            scaling,
            epsilon: None,
            lambda_epsilon: None,
            settings: SolverSettings::default(),
        }
    }

    /// The toy Gaussian source with `train` + `test` rows of dimension `dimension`.
    fn toy(dimension: usize, train: usize, test: usize, seed: u64) -> Dataset {
        let def = ToyGaussianDef {
            title: None,
            dimension,
            train,
            test,
            seed,
            first_train: None,
        };
        toy_gaussian("toy", "toy", &def).unwrap()
    }

    /// The reference fit behind `w_distance` is opt-in: a private trial records the distance
    /// to the exact minimiser only when its spec shows it (`TrialLog::reference_fit`), and then
    /// the distance is that of output perturbation's noise (positive, finite).
    #[test]
    fn w_distance_only_when_the_spec_shows_it() {
        let data = toy(3, 400, 10, 4);
        let train: Vec<u32> = (0..400).collect();
        let cfg = LrConfig {
            kind: LrKind::Private(PrivateLrMethod::Output),
            epsilon: Some(1.0),
            ..config(Scaling::Thesis)
        };
        for reference in [false, true] {
            let mut log = TrialLog::new(3);
            log.reference_fit = reference;
            cfg.fit(
                &data,
                &train,
                None,
                Some(&DatasetCaches::default()),
                Splitting::default(),
                &mut log,
            )
            .unwrap();
            let d = log.metrics.get("w_distance");
            assert_eq!(d.is_some(), reference, "{:?}", log.metrics);
            if let Some(&d) = d {
                assert!(d.is_finite() && d > 0.0, "{d}");
            }
        }
    }

    /// The toy Gaussian's Bayes boundary does not pass through the origin: LR without an
    /// intercept needs the thesis's min-max centring (folded back into an intercept) to reach
    /// the Bayes accuracy of 90%; without centring it cannot.
    #[test]
    fn min_max_centring_reaches_the_bayes_accuracy_on_the_toy_gaussian() {
        let data = toy(5, 20_000, 20_000, 9);
        let train: Vec<u32> = (0..20_000).collect();
        let test: Vec<u32> = (20_000..40_000).collect();
        let caches = DatasetCaches::default();
        let acc = |s: Scaling| {
            let mut log = TrialLog::new(1);
            let model = config(s)
                .fit(
                    &data,
                    &train,
                    None,
                    Some(&caches),
                    Splitting::default(),
                    &mut log,
                )
                .unwrap();
            // Accuracy counted here: `evaluate` sits above the learners.
            let pred = model.predict(&data, &test).unwrap();
            let hits = pred
                .iter()
                .zip(&test)
                .filter(|&(&p, &i)| p == data.labels[i as usize]);
            (hits.count() as f64 / test.len() as f64, log)
        };
        let (centred, log) = acc(Scaling::Thesis);
        assert!((centred - 0.90).abs() < 0.01, "{centred}");
        assert!(
            log.ledger
                .entries
                .iter()
                .any(|e| e.name == "scaling" && !e.private)
        );
        let (uncentred, _) = acc(Scaling::ColumnMax);
        assert!(uncentred < 0.85, "{uncentred}");
    }

    /// A dense design is keyed by its rows' content: the non-private cell and an output-
    /// perturbation cell on the same rows share one exact fit (same `shared` keys, and the
    /// private cell's `w_distance`, recorded when the spec shows it, is measured from the
    /// non-private cell's model), while other rows give another key.
    #[test]
    fn dense_cells_on_the_same_rows_share_the_exact_fit() {
        let data = toy(3, 2_000, 10, 4);
        let train: Vec<u32> = (0..2_000).collect();
        let caches = DatasetCaches::default();
        let fit = |kind: LrKind, rows: &[u32]| {
            let mut log = TrialLog::new(7);
            log.reference_fit = true;
            let c = LrConfig {
                kind,
                epsilon: Some(1.0),
                ..config(Scaling::Public)
            };
            let split = Splitting::default();
            let model = c
                .fit(&data, rows, None, Some(&caches), split, &mut log)
                .unwrap();
            (model, log)
        };
        let (np, np_log) = fit(LrKind::NonPrivate, &train);
        let (out, out_log) = fit(LrKind::Private(PrivateLrMethod::Output), &train);
        assert_eq!(np_log.shared.get("design"), out_log.shared.get("design"));
        assert!(np_log.shared.contains_key("fit"));
        assert_eq!(np_log.shared.get("fit"), out_log.shared.get("fit"));
        let d = np
            .theta
            .iter()
            .zip(out.theta.iter())
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert_eq!(out_log.metrics["w_distance"], d);
        let (_, other) = fit(LrKind::NonPrivate, &train[..1_000]);
        assert_ne!(other.shared.get("design"), np_log.shared.get("design"));
    }
}
