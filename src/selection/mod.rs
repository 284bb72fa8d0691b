//! Feature selection (thesis section 3.5): feature scores and the private selectors.
//!
//! Selectors read only the training counts ([`crate::counts::ClassCounts`]) and return the chosen
//! feature indices, recording their spend in the trial's ledger.
//!
//! Every mechanism calibrates for the relation of the ledger it records into (add/remove by
//! default, SPEC 1). The score sensitivities Delta_q are those of [`scores`]: for the count score
//! 1 (add/remove) or 2 (replace-one); for the smoothed MI score the proven bound
//! [`mi_sensitivity`] (N, the training-set size, is treated as public, as in the thesis).

pub mod scores;

use crate::counts::ClassCounts;
use crate::error::{Error, Result};
use crate::learners::PrivateNbParams;
use crate::privacy::exponential::{MaskSampler, gumbel_top_k};
use crate::privacy::{Laplace, Ledger, Relation, check_positive};
use crate::rng::Streams;
use linfa::ParamGuard;
use std::collections::BTreeMap;

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

    /// Delta_q of one feature's score for these counts under `relation` (MI: N public).
    pub fn sensitivity(&self, counts: &ClassCounts, relation: Relation) -> f64 {
        match self {
            Score::MutualInformation => mi_sensitivity(counts.total(), relation),
            Score::Count => count_sensitivity(relation),
        }
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

/// A feature selector. Private ones need `epsilon` (the selection budget eps_select).
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// Top T by the exact score. Not private (recorded as such).
    NonPrivate { score: Score },
    /// Algorithm 2: fit Algorithm 1 (Laplace, sensitivity D, default 65% threshold) with
    /// eps_select on all features, compute MI from the noisy NB parameters, keep the top T.
    ///
    /// * Measure: eps-DP (Algorithm 1 is eps-DP; the ranking is post-processing).
    NoisyNbMi,
    /// Algorithm 3: q~_d = q_d + Lap(D Delta_q / eps), keep the top T.
    ///
    /// * Sensitivity: the score vector changes by at most Delta_q per coordinate, so its L1
    ///   sensitivity is D Delta_q. Laplace mechanism → eps-DP; top-T is post-processing.
    LaplaceScores { score: Score },
    /// Algorithm 4 (iterative sampling): eps0 = eps/T; sorted scores shifted by the (T+1)-th;
    /// walk the features in that order, wrapping over the unselected ones, keeping feature t
    /// with probability sigmoid(eps0 s_t / (2 Delta_q)) until T are kept.
    ///
    /// * Each step is a binary exponential mechanism (keep with quality s_t, skip with quality
    ///   0: P(keep) = sigmoid(eps0 s_t / (2 Delta_q))), eps0-DP; sequential composition over
    ///   the *steps taken*. It is eps-DP only if it stops after T steps; the ledger records the
    ///   real spend steps x eps0 (so a trial that walks further fails its budget check). The
    ///   order and the shift by the (T+1)-th score come from the exact scores and are not
    ///   accounted for by the thesis either: treat Algorithm 4 as not private.
    IterativeSampling { score: Score },
    /// Algorithm 5 (mask sampling): the exponential mechanism over all T-subsets with quality
    /// sum_d m_d q_d, sampled exactly by [`MaskSampler`].
    ///
    /// * Domain: masks m in {0,1}^D with T ones. Sensitivity of the quality:
    ///   Delta_m = T Delta_q (each of the T chosen scores moves by at most Delta_q).
    /// * Measure: eps-DP by the exponential mechanism (P(m) ∝ exp(eps q(m) / (2 Delta_m))).
    MaskSampling { score: Score },
    /// Sparse vector (AboveThreshold with restarts, Dwork & Roth 2014, Alg. 2 "Sparse") with a
    /// public threshold: eps' = eps/T; noisy threshold thr + Lap(2 Delta_q/eps'); feature d
    /// (in index order) is "above" if q_d + Lap(4 Delta_q/eps') >= noisy threshold; after each
    /// positive the threshold is redrawn; stops after T positives or at the end of the features.
    ///
    /// * Measure: each AboveThreshold round (until one positive) is eps'-DP for sensitivity-
    ///   Delta_q queries; T rounds compose to eps. May return fewer than T features.
    Sparse { score: Score, threshold: f64 },
    /// One-shot Gumbel top-k: add Gumbel noise of scale 2 T Delta_q / eps to every score and
    /// keep the T largest.
    ///
    /// * Equals T rounds of the peeling exponential mechanism at eps/T each (Durfee & Rogers
    ///   2019): eps-DP by sequential composition.
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
            Selector::MaskSampling { .. } => "mask",
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
        let label = format!("{STEP}/{}", self.name());
        let mut metrics = BTreeMap::new();
        let features = match *self {
            Selector::NonPrivate { score } => {
                let q = score.compute(counts)?;
                ledger.non_private(
                    STEP,
                    &format!("none (exact {} ranking)", score.name()),
                    "non-private feature ranking: the exact scores choose the features",
                );
                top_k(&q, t)
            }
            Selector::NoisyNbMi => {
                // Validate before spending.
                scores::mutual_information(counts)?;
                let params = PrivateNbParams::new(eps).check()?;
                let mut rng = streams.stream(&label);
                let fit = params.fit_counts(counts, None, &mut rng, &mut ledger.scratch())?;
                let prior: Vec<f64> = fit.model.log_prior.iter().map(|l| l.exp()).collect();
                let q = mi_from_parameters(&fit.model.theta, &prior);
                ledger.spend(
                    STEP,
                    "laplace (Algorithm 2: MI of the Algorithm 1 noisy NB)",
                    eps,
                    fit.sensitivity,
                );
                metrics.insert(
                    "thresholded_features".into(),
                    fit.thresholded_features as f64,
                );
                top_k(&q, t)
            }
            Selector::LaplaceScores { score } => {
                let q = score.compute(counts)?;
                let sens = d as f64 * score.sensitivity(counts, ledger.relation());
                let noise = Laplace::new(sens, eps)?;
                let mut rng = streams.stream(&label);
                let noisy: Vec<f64> = q.iter().map(|&v| v + noise.sample(&mut rng)).collect();
                ledger.spend(
                    STEP,
                    &format!("laplace (Algorithm 3, {} score)", score.name()),
                    eps,
                    sens,
                );
                top_k(&noisy, t)
            }
            Selector::IterativeSampling { score } => {
                let q = score.compute(counts)?;
                let sens = score.sensitivity(counts, ledger.relation());
                let eps0 = eps / t as f64;
                let mut rng = streams.stream(&label);
                let (chosen, steps) = iterative_sampling(&q, t, eps0, sens, &mut rng)?;
                ledger.spend(
                    STEP,
                    &format!("iterative sampling (Algorithm 4, {} score)", score.name()),
                    steps as f64 * eps0,
                    sens,
                );
                if let Some(e) = ledger.entries.last_mut() {
                    e.note = Some(format!(
                        "{steps} steps x eps0 = {eps0}: eps-DP only if it stops after T = {t} steps"
                    ));
                }
                metrics.insert("steps".into(), steps as f64);
                metrics.insert("epsilon_claimed".into(), eps);
                chosen
            }
            Selector::MaskSampling { score } => {
                let q = score.compute(counts)?;
                let sens = t as f64 * score.sensitivity(counts, ledger.relation());
                let w = mask_weights(&q, eps, sens);
                let mut rng = streams.stream(&label);
                let chosen = MaskSampler::new().sample(&w, t, &mut rng)?;
                ledger.spend(
                    STEP,
                    &format!(
                        "exponential over T-subsets (Algorithm 5, {} score)",
                        score.name()
                    ),
                    eps,
                    sens,
                );
                chosen
            }
            Selector::Sparse { score, threshold } => {
                if !threshold.is_finite() {
                    return Err(Error::param(
                        "threshold",
                        format!("sparse vector threshold must be finite, got {threshold}"),
                    ));
                }
                let q = score.compute(counts)?;
                let sens = score.sensitivity(counts, ledger.relation());
                let mut rng = streams.stream(&label);
                let chosen = sparse_vector(&q, t, threshold, eps, sens, &mut rng)?;
                ledger.spend(
                    STEP,
                    &format!("sparse vector, public threshold ({} score)", score.name()),
                    eps,
                    sens,
                );
                metrics.insert("threshold".into(), threshold);
                chosen
            }
            Selector::GumbelTopK { score } => {
                let q = score.compute(counts)?;
                let sens = score.sensitivity(counts, ledger.relation());
                let mut rng = streams.stream(&label);
                let chosen = gumbel_top_k(&q, t, 2.0 * t as f64 * sens / eps, &mut rng)?;
                ledger.spend(
                    STEP,
                    &format!("gumbel top-k ({} score)", score.name()),
                    eps,
                    sens,
                );
                chosen
            }
        };
        metrics.insert("selected".into(), features.len() as f64);
        Ok(Selection { features, metrics })
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

/// Algorithm 5 weights w_d = eps q_d / (2 Delta_m).
pub fn mask_weights(q: &[f64], epsilon: f64, mask_sensitivity: f64) -> Vec<f64> {
    let f = epsilon / (2.0 * mask_sensitivity);
    q.iter().map(|&v| f * v).collect()
}

#[inline]
fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// Feature order of Algorithm 4 (scores descending, ties by index) and the shifted scores
/// s = q - q_(T+1) in that order. With T = D the shift is the smallest score.
fn shifted_order(q: &[f64], t: usize) -> (Vec<usize>, Vec<f64>) {
    let mut order: Vec<usize> = (0..q.len()).collect();
    order.sort_by(|&a, &b| q[b].total_cmp(&q[a]).then(a.cmp(&b)));
    let pivot = q[order[t.min(q.len() - 1)]];
    let s = order.iter().map(|&i| q[i] - pivot).collect();
    (order, s)
}

/// Per-feature keep probability of one Algorithm 4 step, sigmoid(eps0 s_d / (2 Delta)) with s
/// the scores shifted by the (T+1)-th largest, in the original feature order (Figs 3.11/3.12/
/// 3.18 plot it against the score).
pub fn keep_probabilities(
    scores: &[f64],
    t: usize,
    eps0: f64,
    sensitivity: f64,
) -> Result<Vec<f64>> {
    check_t_eps(scores.len(), t, eps0)?;
    check_positive("sensitivity", sensitivity)?;
    let (order, s) = shifted_order(scores, t);
    let mut p = vec![0.0; scores.len()];
    for (&i, &si) in order.iter().zip(&s) {
        p[i] = sigmoid(eps0 * si / (2.0 * sensitivity));
    }
    Ok(p)
}

/// Cap on Algorithm 4 steps (the top T features have keep probability >= 1/2, so this is
/// reached only with astronomically small probability).
const MAX_ITERATIVE_STEPS: usize = 100_000_000;

/// Algorithm 4; returns the kept features (ascending) and the number of steps taken.
pub fn iterative_sampling<R: rand::Rng + ?Sized>(
    scores: &[f64],
    t: usize,
    eps0: f64,
    sensitivity: f64,
    rng: &mut R,
) -> Result<(Vec<usize>, usize)> {
    let p_sorted = {
        let p = keep_probabilities(scores, t, eps0, sensitivity)?;
        let (order, _) = shifted_order(scores, t);
        order.iter().map(|&i| (i, p[i])).collect::<Vec<_>>()
    };
    let mut remaining = p_sorted;
    let mut kept = Vec::with_capacity(t);
    let mut steps = 0usize;
    let mut pos = 0usize;
    while kept.len() < t {
        if steps >= MAX_ITERATIVE_STEPS {
            return Err(Error::param(
                "epsilon",
                format!("Algorithm 4 did not keep {t} features in {steps} steps"),
            ));
        }
        if pos >= remaining.len() {
            pos = 0;
        }
        steps += 1;
        let (i, p) = remaining[pos];
        if rng.r#gen::<f64>() < p {
            kept.push(i);
            remaining.remove(pos);
        } else {
            pos += 1;
        }
    }
    kept.sort_unstable();
    Ok((kept, steps))
}

/// Sparse (AboveThreshold with restarts) over the scores in index order; at most `t` positives.
pub fn sparse_vector<R: rand::Rng + ?Sized>(
    scores: &[f64],
    t: usize,
    threshold: f64,
    epsilon: f64,
    sensitivity: f64,
    rng: &mut R,
) -> Result<Vec<usize>> {
    check_t_eps(scores.len(), t, epsilon)?;
    let eps1 = epsilon / t as f64;
    let thr_noise = Laplace::new(2.0 * sensitivity, eps1)?;
    let q_noise = Laplace::new(4.0 * sensitivity, eps1)?;
    let mut out = Vec::with_capacity(t);
    let mut noisy_thr = threshold + thr_noise.sample(rng);
    for (i, &q) in scores.iter().enumerate() {
        if q + q_noise.sample(rng) >= noisy_thr {
            out.push(i);
            if out.len() == t {
                break;
            }
            noisy_thr = threshold + thr_noise.sample(rng);
        }
    }
    Ok(out)
}

fn check_t_eps(d: usize, t: usize, eps: f64) -> Result<()> {
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
