//! Learners: each a validated parameter struct, a fit, and a fitted model that predicts.
//!
//! The structs follow linfa's shape (`ParamGuard` → `Fit` → model → `PredictInplace`) so they
//! plug into linfa code; the harness calls their count-based fast paths through [`Learner`].

pub mod logistic;
pub mod majority;
pub mod naive_bayes;
pub mod partitioned_nb;
pub mod private_nb;
pub mod vaidya_nb;

use crate::counts::ClassCounts;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::privacy::{Ledger, Relation};
use crate::rng::Streams;
use linfa::ParamGuard;
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
    /// Memo keys of the noise-free results this trial shares with others (step -> key).
    pub shared: BTreeMap<String, String>,
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
        }
    }
}

/// What a spec needs to know about a learner.
#[derive(Debug, Clone, Copy)]
pub struct LearnerInfo {
    pub name: &'static str,
    pub about: &'static str,
    /// Whether it is parametrised by (and spends) the training share of epsilon.
    pub uses_epsilon: bool,
    /// Pipeline fields that apply to it.
    pub params: &'static [&'static str],
}

/// The learners a spec may use.
pub const LEARNERS: &[LearnerInfo] = &[
    LearnerInfo {
        name: "majority",
        about: "majority-class baseline (non-private reference)",
        uses_epsilon: false,
        params: &[],
    },
    LearnerInfo {
        name: "nb",
        about: "Bernoulli Naive Bayes, add-alpha smoothing (non-private reference)",
        uses_epsilon: false,
        params: &["alpha"],
    },
    LearnerInfo {
        name: "private_nb",
        about: "Algorithm 1: Laplace noise on NB counts, threshold t (eps-DP, sensitivity D)",
        uses_epsilon: true,
        params: &["alpha", "threshold", "release"],
    },
    LearnerInfo {
        name: "partitioned_nb",
        about: "partitioning strategy (3.4): feature t counted on its own disjoint part, Lap(1/eps) (eps-DP, parallel composition)",
        uses_epsilon: true,
        params: &["alpha", "threshold"],
    },
    LearnerInfo {
        name: "lr",
        about: "L2-regularised logistic regression, exact minimiser (non-private reference)",
        uses_epsilon: false,
        params: &["lambda", "scaling", "solver", "tolerance"],
    },
    LearnerInfo {
        name: "lr_output",
        about: "Algorithm 6: output perturbation, L2 noise beta = 2/(lambda eps) (eps-DP)",
        uses_epsilon: true,
        params: &["lambda", "scaling", "solver", "tolerance"],
    },
    LearnerInfo {
        name: "lr_objective",
        about: "Algorithm 7: objective perturbation (Chaudhuri et al. 2011), c = 1/4 (eps-DP)",
        uses_epsilon: true,
        params: &["lambda", "scaling", "solver", "tolerance"],
    },
    LearnerInfo {
        name: "lr_functional",
        about: "functional mechanism (Zhang et al. 2012), FMsens1 or FMsens2 (eps-DP)",
        uses_epsilon: true,
        params: &["fm_sensitivity", "scaling"],
    },
    LearnerInfo {
        name: "vaidya_nb",
        about: "Vaidya et al. 2013 NB, BROKEN: claims eps, really (D eps + C)-DP (known-bad comparison)",
        uses_epsilon: true,
        params: &["alpha"],
    },
];

/// The registry entry of a learner name.
pub fn learner_info(name: &str) -> Option<&'static LearnerInfo> {
    LEARNERS.iter().find(|l| l.name == name)
}

/// A learner configured for one trial.
#[derive(Debug, Clone)]
pub enum Learner {
    Majority,
    Nb(BernoulliNbParams),
    PrivateNb(PrivateNbParams),
    PartitionedNb(PartitionedNbParams),
    VaidyaNb(VaidyaNbParams),
    Logistic(logistic::LrConfig),
}

impl Learner {
    /// Whether the learner reads binary counts or rows (all but the majority baseline).
    pub fn needs_binary(&self) -> bool {
        !matches!(self, Learner::Majority | Learner::Logistic(_))
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
            Learner::PartitionedNb(p) => {
                let p = p.clone().check()?;
                let x = input
                    .data
                    .features
                    .as_binary()
                    .ok_or_else(|| needs_binary(input))?;
                let all: Vec<usize>;
                let features = match input.features {
                    Some(f) => f,
                    None => {
                        all = (0..x.n_cols()).collect();
                        &all
                    }
                };
                let mut rng = log.streams.stream("train/partition+laplace");
                let fit = p.fit_rows(
                    x,
                    &input.data.labels,
                    input.data.n_classes(),
                    input.train,
                    features,
                    &mut rng,
                    &mut log.ledger,
                )?;
                log.metrics.insert("threshold_value".into(), fit.threshold);
                log.metrics.insert(
                    "thresholded_features".into(),
                    fit.thresholded_features as f64,
                );
                Ok(Box::new(fit.model))
            }
            Learner::Logistic(config) => {
                let model = config.fit(input.data, input.train, input.features, log)?;
                Ok(Box::new(model))
            }
            Learner::VaidyaNb(p) => {
                let p = p.clone().check()?;
                let counts = binary_counts(input)?;
                let mut rng = log.streams.stream("train/vaidya");
                let model = p.fit_counts(counts, input.features, &mut rng, &mut log.ledger)?;
                let d = input.features.map_or(counts.n_features(), <[usize]>::len);
                log.metrics.insert(
                    "actual_epsilon".into(),
                    p.actual_epsilon(d, counts.n_classes()),
                );
                Ok(Box::new(model))
            }
        }
    }
}

fn needs_binary(input: &FitInput) -> Error {
    Error::Data {
        dataset: input.data.name.clone(),
        reason: "Naive Bayes learners need binary features".into(),
    }
}

fn binary_counts<'a>(input: &FitInput<'a>) -> Result<&'a ClassCounts> {
    input.counts.ok_or_else(|| needs_binary(input))
}
