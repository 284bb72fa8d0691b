//! Learners: each a validated parameter struct, a fit, and a fitted model that predicts.
//!
//! The structs follow linfa's shape (`ParamGuard` → `Fit` → model → `PredictInplace`) so they
//! plug into linfa code; the harness calls their count-based fast paths through [`Learner`].

/// linfa's `ParamGuard` for a parameter newtype `Params(ValidParams)`: `check_ref` runs the
/// block (which returns `Result<()>`, reading the inner struct as `p`) and `check` unwraps.
macro_rules! param_guard {
    ($params:ty => $valid:ty, |$p:ident| $check:block) => {
        impl linfa::ParamGuard for $params {
            type Checked = $valid;
            type Error = $crate::error::Error;

            fn check_ref(&self) -> $crate::error::Result<&$valid> {
                let $p = &self.0;
                let checked: $crate::error::Result<()> = $check;
                checked?;
                Ok($p)
            }

            fn check(self) -> $crate::error::Result<$valid> {
                self.check_ref()?;
                Ok(self.0)
            }
        }
    };
}

/// Builder setters `fn field(mut self, field: T) -> Self` on a parameter newtype, one per
/// listed field of the inner struct (with its doc comment).
macro_rules! setters {
    ($params:ty { $($(#[$doc:meta])* $field:ident: $t:ty),* $(,)? }) => {
        impl $params {
            $(
                $(#[$doc])*
                pub fn $field(mut self, $field: $t) -> Self {
                    self.0.$field = $field;
                    self
                }
            )*
        }
    };
}

/// A private learner's linfa parameters, the part every one of them shares written once: the
/// validated struct `$valid` (fields `epsilon`, the listed ones, `classes`, then `seed`) with its
/// `epsilon()`, the newtype `$params` whose `new(epsilon)` takes the listed defaults and seed 0,
/// a builder setter per listed field and for `seed` ([`setters!`]), and a `ParamGuard` that
/// refuses a bad epsilon before it runs the block ([`param_guard!`]).
macro_rules! private_params {
    (
        $(#[$valid_doc:meta])*
        $valid:ident;
        $(#[$params_doc:meta])*
        $params:ident { $($(#[$doc:meta])* $field:ident: $t:ty = $default:expr),* $(,)? }
        |$p:ident| $check:block
    ) => {
        $(#[$valid_doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $valid {
            epsilon: f64,
            $($(#[$doc])* $field: $t,)*
            classes: usize,
            seed: u64,
        }

        $(#[$params_doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $params($valid);

        impl $params {
            pub fn new(epsilon: f64) -> Self {
                $params($valid {
                    epsilon,
                    $($field: $default,)*
                    classes: 0,
                    seed: 0,
                })
            }
        }

        impl $valid {
            pub fn epsilon(&self) -> f64 {
                self.epsilon
            }

            /// The class count linfa's `Fit` releases over ([`crate::counts::declared_classes`]).
            pub fn declared_classes(&self, y: &[usize]) -> $crate::error::Result<usize> {
                $crate::counts::declared_classes(self.classes, y)
            }
        }

        setters!($params {
            $($(#[$doc])* $field: $t,)*
            /// The number of classes linfa's `Fit` releases over, declared (public); 0, the
            /// default, makes it refuse (the harness passes the dataset's declared classes).
            classes: usize,
            /// Seed of the random stream linfa's `Fit` draws from (the harness passes its own
            /// streams).
            seed: u64,
        });

        param_guard!($params => $valid, |$p| {
            $crate::privacy::check_epsilon($p.epsilon)?;
            $check
        });
    };
}

/// linfa's `Fit` on dense `f64` records with class-index targets; the block reads the valid
/// parameters as `$p` and the linfa dataset as `$ds`, and returns `Result<$object>`.
macro_rules! linfa_fit {
    ($valid:ty => $object:ty, |$p:ident, $ds:ident| $body:block) => {
        impl<D, T> linfa::traits::Fit<ndarray::ArrayBase<D, ndarray::Ix2>, T, $crate::error::Error>
            for $valid
        where
            D: ndarray::Data<Elem = f64>,
            T: linfa::dataset::AsSingleTargets<Elem = usize>,
        {
            type Object = $object;

            fn fit(
                &self,
                dataset: &linfa::dataset::DatasetBase<ndarray::ArrayBase<D, ndarray::Ix2>, T>,
            ) -> $crate::error::Result<$object> {
                let ($p, $ds) = (self, dataset);
                $body
            }
        }
    };
}

/// [`Learner`] for a linfa-style parameter type: the block reads the checked (valid)
/// parameters as `$p`, the cell's [`FitInput`] as `$input` and its [`TrialLog`] as `$log`,
/// and returns the fitted classifier (`Result<Box<dyn Classifier>>`).
macro_rules! learner_fit {
    ($params:ty, |$p:ident, $input:ident, $log:ident| $body:block) => {
        impl $crate::learners::Learner for $params {
            fn fit(
                &self,
                $input: &$crate::learners::FitInput,
                $log: &mut $crate::learners::TrialLog,
            ) -> $crate::error::Result<Box<dyn $crate::learners::Classifier>> {
                let $p = linfa::ParamGuard::check(self.clone())?;
                $body
            }
        }
    };
}

pub mod estimators;
pub mod gaussian_nb;
pub mod logistic;
pub mod majority;
pub mod naive_bayes;
pub mod partitioned_nb;
pub mod private_id3;
pub mod private_nb;
pub mod random_trees;
pub mod rff;
pub mod trees;
pub mod vaidya_nb;

use crate::counts::ClassCounts;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::privacy::{Ledger, Relation};
use crate::rng::Streams;
use linfa::ParamGuard;
use linfa::traits::PredictInplace;
use std::collections::BTreeMap;

pub use majority::Majority;
pub use naive_bayes::{BernoulliNb, BernoulliNbParams};
pub use partitioned_nb::PartitionedNbParams;
pub use private_nb::{PrivateNbParams, Release, Threshold};
pub use vaidya_nb::VaidyaNbParams;

/// A fitted model the harness can evaluate.
pub trait Classifier: Send + Sync {
    /// Predicted class index of each of `rows`.
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>>;
    /// Whether it can predict `rows`: a model fitted by an external program knows only the
    /// rows it was sent predictions for (the training rows only if it reported them).
    fn covers(&self, _rows: &[u32]) -> bool {
        true
    }
    /// The model's own named metrics on `rows`, recorded in place of accuracy, when it is a
    /// regression, subspace or clustering model ([`estimators::Scored`]); `None` for a
    /// classifier.
    fn scores(&self, _data: &Dataset, _rows: &[u32]) -> Option<Result<BTreeMap<String, f64>>> {
        None
    }
}

/// What a fit may read: the training rows and, for binary data, their counts.
pub struct FitInput<'a> {
    pub data: &'a Dataset,
    pub train: &'a [u32],
    /// The test rows. Only a learner that predicts in the same step as it fits reads them
    /// (an external program, which receives both files at once); none may fit on them.
    pub test: &'a [u32],
    /// Exact per-class counts of the training rows (binary data only).
    pub counts: Option<&'a ClassCounts>,
    /// Selected features; `None` means all.
    pub features: Option<&'a [usize]>,
    /// What the learner's family holds for the dataset's later cells ([`crate::schedule`]).
    pub workspace: &'a dyn crate::schedule::Workspace,
}

/// A model fitted through linfa's `Fit`, with the ledger of that fit: the linfa face of a
/// private learner keeps its accounting (add/remove neighbours, the library's default).
/// Predicts as the model does.
#[derive(Debug, Clone, PartialEq)]
pub struct Accounted<M> {
    pub model: M,
    pub ledger: Ledger,
}

impl<M> Accounted<M> {
    /// Runs a private fit on the noise stream labelled `[learner, seed]` with a fresh
    /// add/remove ledger, and keeps the ledger beside the model.
    pub fn fit(
        learner: &str,
        seed: u64,
        fit: impl FnOnce(&mut crate::rng::Rng, &mut Ledger) -> Result<M>,
    ) -> Result<Self> {
        let mut rng = crate::rng::rng_from(&[learner, &seed.to_string()]);
        let mut ledger = Ledger::new(Relation::AddRemove);
        let model = fit(&mut rng, &mut ledger)?;
        Ok(Accounted { model, ledger })
    }
}

impl<M, R, T> PredictInplace<R, T> for Accounted<M>
where
    R: linfa::dataset::Records,
    M: PredictInplace<R, T>,
{
    fn predict_inplace(&self, x: &R, y: &mut T) {
        self.model.predict_inplace(x, y)
    }

    fn default_target(&self, x: &R) -> T {
        self.model.default_target(x)
    }
}

/// What a trial records besides accuracy: random streams, the ledger and named metrics.
#[derive(Debug)]
pub struct TrialLog {
    pub streams: Streams,
    pub ledger: Ledger,
    pub metrics: BTreeMap<String, f64>,
    /// Memo keys of the noise-free results this trial shares with others (step -> key).
    pub shared: BTreeMap<String, String>,
    /// Whether to record the metrics that need a non-private reference fit beside a private
    /// one (`w_distance`, `sampling_error`): only specs that show them pay for that fit
    /// ([`crate::spec::Spec::shows_metric`]).
    pub reference_fit: bool,
    /// The folder of the spec the trial runs, against which a step resolves the relative
    /// paths the spec gives (an external program's command); `None` outside a spec run.
    pub spec_dir: Option<std::path::PathBuf>,
}

impl TrialLog {
    /// A trial under add/remove neighbours.
    pub fn new(seed: u64) -> Self {
        Self::with_relation(seed, Relation::AddRemove)
    }

    /// A trial whose ledger (and so every mechanism) uses `relation`.
    pub fn with_relation(seed: u64, relation: Relation) -> Self {
        TrialLog {
            streams: Streams::new(seed),
            ledger: Ledger::new(relation),
            metrics: BTreeMap::new(),
            shared: BTreeMap::new(),
            reference_fit: false,
            spec_dir: None,
        }
    }

    /// The NB thresholding metrics (Algorithm 1's t and how many released counts it clipped).
    fn record_threshold(&mut self, threshold: f64, thresholded_features: usize) {
        self.metrics.insert("threshold_value".into(), threshold);
        self.metrics
            .insert("thresholded_features".into(), thresholded_features as f64);
    }
}

/// A learner configured for one trial: what a [`crate::kinds::LearnerKind`] returns for a cell,
/// with its grid values and budget applied. An open trait, so a new learner is its own file
/// (the kind, the learner, the model) and one registry line; nothing else names it.
pub trait Learner: std::fmt::Debug + Send + Sync {
    /// Fits on `input`, drawing noise only through `log.ledger` and recording every step
    /// there (a non-private step as [`Ledger::non_private`]).
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>>;
    /// Whether it can fit `data` at all (a two-class learner and three classes): checked for
    /// every (pipeline, dataset) pair before a run writes anything, so a refused dataset leaves
    /// no results folder behind.
    fn check_data(&self, _data: &crate::data::Dataset) -> Result<()> {
        Ok(())
    }
}

/// The majority-class baseline every figure draws.
#[derive(Debug, Clone, Copy)]
pub struct MajorityBaseline;

impl Learner for MajorityBaseline {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        log.ledger.non_private(
            "train",
            "none (exact class counts)",
            "majority-class baseline: a reference, not a private release",
        );
        Ok(Box::new(Majority::fit_rows(input.data, input.train)))
    }
}

impl Learner for BernoulliNbParams {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let p = self.check_ref()?;
        let counts = binary_counts(input)?;
        log.ledger.non_private(
            "train",
            "none (exact counts)",
            "non-private Naive Bayes reference",
        );
        Ok(Box::new(BernoulliNb::from_counts(
            counts,
            p.alpha(),
            input.features,
        )))
    }
}

/// The error of a count-based learner given data that is not binary.
pub(crate) fn needs_binary(input: &FitInput) -> Error {
    Error::Data {
        dataset: input.data.name.clone(),
        reason: "Naive Bayes learners need binary features".into(),
    }
}

/// A spec value that is a number or a word (`threshold = 10` or `"q65"`, `lambda = 0.1` or
/// `"cv"`): the untagged form a parameter with named settings reads before its own parse.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(untagged, expecting = "expected a number or a word")]
pub(crate) enum NumberOrWord {
    Number(f64),
    Word(String),
}

/// A smoothing parameter (`alpha`, `var_smoothing`) must be finite and non-negative: the one
/// refusal every learner that takes one gives, naming the parameter.
pub(crate) fn check_non_negative(name: &str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            name,
            format!("must be finite and >= 0, got {value}"),
        ))
    }
}

/// Refuses an empty feature list or a feature index not below `dim`, as field `features`.
pub(crate) fn check_feature_indices(features: &[usize], dim: usize) -> Result<()> {
    if features.is_empty() {
        return Err(Error::param("features", "need at least one feature"));
    }
    match features.iter().find(|&&f| f >= dim) {
        Some(f) => Err(Error::param(
            "features",
            format!("feature {f} >= dimension {dim}"),
        )),
        None => Ok(()),
    }
}

/// The features a count-based fit releases: the selected ones, or all `dim` without a
/// selection; checked by [`check_feature_indices`].
pub(crate) fn used_features(features: Option<&[usize]>, dim: usize) -> Result<Vec<usize>> {
    let used: Vec<usize> = features.map_or_else(|| (0..dim).collect(), <[usize]>::to_vec);
    check_feature_indices(&used, dim)?;
    Ok(used)
}

/// The exact class counts a count-based learner reads.
pub(crate) fn binary_counts<'a>(input: &FitInput<'a>) -> Result<&'a ClassCounts> {
    input.counts.ok_or_else(|| needs_binary(input))
}

#[cfg(test)]
mod tests {
    use super::logistic::LambdaRule;
    use super::private_nb::Threshold;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Values {
        threshold: Threshold,
        lambda: LambdaRule,
    }

    fn read(threshold: &str, lambda: &str) -> Result<Values, toml::de::Error> {
        toml::from_str(&format!("threshold = {threshold}\nlambda = {lambda}"))
    }

    /// The two parameters read through [`super::NumberOrWord`] take a number (integer or
    /// not) or one of their words, and refuse other words and other types.
    #[test]
    fn thresholds_and_lambdas_read_numbers_and_their_words() {
        let v = read("3", "2").unwrap();
        assert_eq!(v.threshold, Threshold::Constant(3.0));
        assert_eq!(v.lambda, LambdaRule::Fixed(2.0));
        let v = read("\"q65\"", "\"cv\"").unwrap();
        assert_eq!(v.threshold, Threshold::NoiseQuantile(0.65));
        assert_eq!(v.lambda, LambdaRule::CrossValidation);
        let v = read("0.5", "{ per_example = 0.25 }").unwrap();
        assert_eq!(v.threshold, Threshold::Constant(0.5));
        assert_eq!(v.lambda, LambdaRule::PerExample(0.25));
        assert_eq!(
            read("1", "\"private\"").unwrap().lambda,
            LambdaRule::Private
        );
        let bad = read("\"big\"", "1").err().unwrap().to_string();
        assert!(bad.contains("`big` is not a number"), "{bad}");
        let bad = read("1", "\"often\"").err().unwrap().to_string();
        assert!(bad.contains("got \"often\""), "{bad}");
        assert!(read("[1]", "1").is_err());
        assert!(read("1", "[1]").is_err());
    }
}
