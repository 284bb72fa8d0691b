//! Feature selection (thesis section 3.5): feature scores and the private selectors.
//!
//! Selectors read only the training counts ([`crate::counts::ClassCounts`]) and return the chosen
//! feature indices, recording their spend in the trial's ledger.
//!
//! Every mechanism calibrates for the relation of the ledger it records into (add/remove by
//! default, SPEC 1). The score sensitivities Delta_q are those of [`scores`]: for the count score
//! 1 (add/remove) or 2 (replace-one); for the smoothed MI score the proven bound
//! [`mi_sensitivity`] at the run's *public* training-set size N (`Ledger::public_size`: declared
//! by the run, as the thesis treats N; never the counts' own total, which is private under
//! add/remove).

pub mod gumbel;
pub mod iterative;
pub mod laplace_scores;
pub mod mask;
pub mod noisy_nb_mi;
pub mod nonprivate;
pub mod scores;
pub mod sparse;

use crate::counts::ClassCounts;
use crate::error::{Error, Result};
use crate::privacy::{Ledger, check_positive};
use crate::rng::Streams;
use std::collections::BTreeMap;

pub use iterative::{iterative_sampling, keep_probabilities};
pub use mask::mask_weights;

pub use scores::{
    COUNT_SENSITIVITY, count_scores, count_sensitivity, mi_from_parameters, mi_sensitivity,
    mutual_information, thesis_mi_sensitivity,
};

/// Ledger step name used by every selector.
pub const STEP: &str = "selection";

/// Which per-feature quality a selector ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// Mutual information in bits (any number of classes), sensitivity [`mi_sensitivity`].
    MutualInformation,
    /// Count score of eq. 3.22 (two classes), sensitivity [`count_sensitivity`] (1 or 2).
    Count,
}

impl Score {
    /// The scores of every feature.
    pub fn compute(&self, counts: &ClassCounts) -> Result<Vec<f64>> {
        match self {
            Score::MutualInformation => mutual_information(counts),
            Score::Count => count_scores(counts),
        }
    }

    /// Delta_q of one feature's score under the ledger's relation. MI reads the run's public
    /// N from the ledger (recorded there; an error when N is not public), never the counts'
    /// own total.
    pub fn sensitivity(&self, ledger: &mut Ledger) -> Result<f64> {
        let relation = ledger.relation();
        Ok(match self {
            Score::MutualInformation => {
                let n = ledger.public_size("the MI score's sensitivity h(1/N) + 1/N")?;
                mi_sensitivity(n as f64, relation)
            }
            Score::Count => count_sensitivity(relation),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Score::MutualInformation => "mi",
            Score::Count => "counts",
        }
    }
}

/// The chosen features and what the selector measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// Chosen feature indices, ascending.
    pub features: Vec<usize>,
    pub metrics: BTreeMap<String, f64>,
}

/// A feature selector. Private ones need `epsilon` (the selection budget eps_select). Each
/// lives in its own file with its mechanism and proof sketch.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// Top T by the exact score. Not private (recorded as such). [`nonprivate`]
    NonPrivate { score: Score },
    /// Algorithm 2: MI of Algorithm 1's noisy NB, top T (eps-DP). [`noisy_nb_mi`]
    NoisyNbMi,
    /// Algorithm 3: score + Lap(D Delta_q / eps), top T (eps-DP). [`laplace_scores`]
    LaplaceScores { score: Score },
    /// Algorithm 4: iterative sampling, eps/T per step; NOT eps-DP. [`iterative`]
    IterativeSampling { score: Score },
    /// Algorithm 5: exponential mechanism over T-subsets (eps-DP). [`mask`]
    MaskSampling { score: Score },
    /// Ablation variant of Algorithm 5 with Delta_m = Delta_q: NOT eps-DP, its real epsilon is
    /// T times the claim (recorded so in the ledger). [`mask`]
    MaskSamplingPerFeature { score: Score },
    /// Sparse vector with a public threshold, eps/T per positive (eps-DP). [`sparse`]
    Sparse { score: Score, threshold: f64 },
    /// One-shot Gumbel top-k, scale 2 T Delta_q / eps (eps-DP). [`gumbel`]
    GumbelTopK { score: Score },
}

impl Selector {
    /// Short name (as a spec names it).
    pub fn name(&self) -> &'static str {
        match self {
            Selector::NonPrivate { .. } => "nonprivate",
            Selector::NoisyNbMi => "noisy_nb_mi",
            Selector::LaplaceScores { .. } => "laplace",
            Selector::IterativeSampling { .. } => "iterative",
            Selector::MaskSampling { .. } | Selector::MaskSamplingPerFeature { .. } => "mask",
            Selector::Sparse { .. } => "sparse",
            Selector::GumbelTopK { .. } => "gumbel",
        }
    }

    /// Whether the selector needs (and spends) a privacy budget.
    pub fn is_private(&self) -> bool {
        !matches!(self, Selector::NonPrivate { .. })
    }

    /// Selects `t` features from the training counts, spending `epsilon` (required for the
    /// private selectors, ignored by `NonPrivate`) and recording the step in `ledger`.
    /// Random draws come from fresh streams labelled `selection/<name>`.
    pub fn select(
        &self,
        counts: &ClassCounts,
        t: usize,
        epsilon: Option<f64>,
        streams: &mut Streams,
        ledger: &mut Ledger,
    ) -> Result<Selection> {
        let d = counts.n_features();
        if t == 0 || t > d {
            return Err(Error::param(
                "features",
                format!("number of selected features T must be in 1..={d}, got {t}"),
            ));
        }
        let eps = if self.is_private() {
            match epsilon {
                Some(e) if e.is_finite() && e > 0.0 => e,
                other => {
                    return Err(Error::param(
                        "epsilon",
                        format!(
                            "selector `{}` needs a finite epsilon > 0, got {other:?}",
                            self.name()
                        ),
                    ));
                }
            }
        } else {
            0.0
        };
        let mut cx = Context {
            counts,
            t,
            epsilon: eps,
            label: format!("{STEP}/{}", self.name()),
            streams,
            ledger,
            metrics: BTreeMap::new(),
        };
        let features = match *self {
            Selector::NonPrivate { score } => nonprivate::select(score, &mut cx)?,
            Selector::NoisyNbMi => noisy_nb_mi::select(&mut cx)?,
            Selector::LaplaceScores { score } => laplace_scores::select(score, &mut cx)?,
            Selector::IterativeSampling { score } => iterative::select(score, &mut cx)?,
            Selector::MaskSampling { score } => mask::select(score, false, &mut cx)?,
            Selector::MaskSamplingPerFeature { score } => mask::select(score, true, &mut cx)?,
            Selector::Sparse { score, threshold } => sparse::select(score, threshold, &mut cx)?,
            Selector::GumbelTopK { score } => gumbel::select(score, &mut cx)?,
        };
        let mut metrics = cx.metrics;
        metrics.insert("selected".into(), features.len() as f64);
        Ok(Selection { features, metrics })
    }
}

/// What a selector reads and where it records: the training counts, T, its validated budget
/// (0 for the non-private one), the trial's streams (its own is labelled
/// `selection/<name>`), the ledger and the trial's metrics.
struct Context<'a> {
    counts: &'a ClassCounts,
    t: usize,
    epsilon: f64,
    label: String,
    streams: &'a mut Streams,
    ledger: &'a mut Ledger,
    metrics: BTreeMap<String, f64>,
}

impl Context<'_> {
    /// The selector's random stream (one per call).
    fn rng(&mut self) -> crate::rng::Rng {
        self.streams.stream(&self.label)
    }
}

/// Indices of the k largest values, ascending (ties go to the lower index).
pub fn top_k(q: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..q.len()).collect();
    idx.sort_by(|&a, &b| q[b].total_cmp(&q[a]).then(a.cmp(&b)));
    idx.truncate(k);
    idx.sort_unstable();
    idx
}

pub(crate) fn check_t_eps(d: usize, t: usize, eps: f64) -> Result<()> {
    if t == 0 || t > d {
        return Err(Error::param(
            "features",
            format!("T must be in 1..={d}, got {t}"),
        ));
    }
    check_positive("epsilon", eps)
}

#[cfg(test)]
mod tests;
