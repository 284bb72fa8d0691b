//! Learners: each a validated parameter struct, a fit, and a fitted model that predicts.
//!
//! The structs follow linfa's shape (`ParamGuard` → `Fit` → model → `PredictInplace`) so they
//! plug into linfa code; the harness calls their count-based fast paths through [`Learner`].

pub mod logistic;
pub mod majority;
pub mod naive_bayes;
pub mod private_nb;

use crate::counts::ClassCounts;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::privacy::Ledger;
use crate::rng::Streams;
use linfa::ParamGuard;
use std::collections::BTreeMap;

pub use majority::Majority;
pub use naive_bayes::{BernoulliNb, BernoulliNbParams};
pub use private_nb::{PrivateNbParams, Release, Threshold};

/// A fitted model the harness can evaluate.
pub trait Classifier: Send + Sync {
    /// Predicted class index of each of `rows`.
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>>;
}

/// What a fit may read: the training rows and, for binary data, their counts.
pub struct FitInput<'a> {
    pub data: &'a Dataset,
    pub train: &'a [u32],
    /// Exact per-class counts of the training rows (binary data only).
    pub counts: Option<&'a ClassCounts>,
    /// Selected features; `None` means all.
    pub features: Option<&'a [usize]>,
    /// The training step's share of the budget; `None` for non-private learners.
    pub epsilon: Option<f64>,
}

/// What a trial records besides accuracy: random streams, the ledger and named metrics.
#[derive(Debug)]
pub struct TrialLog {
    pub streams: Streams,
    pub ledger: Ledger,
    pub metrics: BTreeMap<String, f64>,
}

impl TrialLog {
    pub fn new(seed: u64) -> Self {
        TrialLog {
            streams: Streams::new(seed),
            ledger: Ledger::default(),
            metrics: BTreeMap::new(),
        }
    }
}

/// Names and one-line descriptions of the learners a spec may use.
pub const LEARNERS: &[(&str, &str)] = &[
    (
        "majority",
        "majority-class baseline (non-private reference)",
    ),
    (
        "nb",
        "Bernoulli Naive Bayes, add-alpha smoothing (non-private reference)",
    ),
    (
        "private_nb",
        "Algorithm 1: Laplace noise on NB counts, threshold t (eps-DP, sensitivity D)",
    ),
];

/// A learner configured for one trial.
#[derive(Debug, Clone)]
pub enum Learner {
    Majority,
    Nb(BernoulliNbParams),
    PrivateNb(PrivateNbParams),
}

impl Learner {
    /// Whether the learner consumes privacy budget.
    pub fn is_private(&self) -> bool {
        matches!(self, Learner::PrivateNb(_))
    }

    pub fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        match self {
            Learner::Majority => {
                log.ledger.non_private(
                    "train",
                    "none (exact class counts)",
                    "majority-class baseline: a reference, not a private release",
                );
                Ok(Box::new(Majority::fit_rows(input.data, input.train)))
            }
            Learner::Nb(p) => {
                let p = p.check_ref()?;
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
            Learner::PrivateNb(p) => {
                let p = p.clone().check()?;
                let counts = binary_counts(input)?;
                let mut rng = log.streams.stream("train/laplace");
                let fit = p.fit_counts(counts, input.features, &mut rng, &mut log.ledger)?;
                log.metrics.insert("threshold_value".into(), fit.threshold);
                log.metrics.insert(
                    "thresholded_features".into(),
                    fit.thresholded_features as f64,
                );
                Ok(Box::new(fit.model))
            }
        }
    }
}

fn binary_counts<'a>(input: &FitInput<'a>) -> Result<&'a ClassCounts> {
    input.counts.ok_or_else(|| Error::Data {
        dataset: input.data.name.clone(),
        reason: "Naive Bayes learners need binary features".into(),
    })
}
