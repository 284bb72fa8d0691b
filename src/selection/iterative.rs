//! Algorithm 4 (iterative sampling): eps0 = eps/T; sorted scores shifted by the (T+1)-th; walk
//! the features in that order, wrapping over the unselected ones, keeping feature t with
//! probability sigmoid(eps0 s_t / (2 Delta_q)) until T are kept.
//!
//! * Each step is a binary exponential mechanism ([`BinaryExponential`]: keep with quality s_t,
//!   skip with quality 0), eps0-DP; sequential composition over the *steps taken*, which the
//!   ledger handle records as it samples (steps x eps0). It is eps-DP only if it stops after T
//!   steps, so a trial that walks further fails its budget check.
//! * The order and the shift by the (T+1)-th score come from the exact scores and are not
//!   accounted for by the thesis either, so no number of steps makes it eps-DP: with T = 1,
//!   scores (1, 1) walk feature 0 first and keep it at step 1 with probability 1/2, while a
//!   neighbour with scores (1, 2) walks feature 1 first and never keeps 0 at step 1. The
//!   ledger step is therefore recorded without a guarantee ([`Charge::without_guarantee`],
//!   whatever the steps taken), and every table and figure labels the pipeline not private.

use super::{Context, STEP, Score, check_t_eps};
use crate::error::{Error, Result};
use crate::privacy::exponential::keep_probability;
use crate::privacy::{BinaryExponential, Charge, Mechanism, check_positive};

pub(super) fn select(score: Score, cx: &mut Context) -> Result<Vec<usize>> {
    let q = score.compute(cx.counts)?;
    let relation = cx.ledger.relation();
    let sens = score.sensitivity(cx.ledger)?;
    let (t, eps) = (cx.t, cx.epsilon);
    let eps0 = eps / t as f64;
    let mechanism = BinaryExponential::new(sens, eps0, relation)?;
    let mut rng = cx.rng();
    let label = format!("iterative sampling (Algorithm 4, {} score)", score.name());
    let mut charge = cx.ledger.charge(STEP, &label, mechanism)?;
    let chosen = iterative_sampling(&q, t, &mut charge, &mut rng)?;
    let steps = charge.draws();
    // Each step is calibrated for Δq (SPEC 4); the shift q_(T+1) may move against the score,
    // so a step's quality can move by up to 2Δq: the note says so rather than understate.
    charge.without_guarantee(format!(
        "NOT private: the walk order and shift read the exact scores; {steps} steps x eps0 = \
         {} spent by the steps as calibrated for Delta_q, up to twice that as the shift by the \
         (T+1)-th score moves too (T = {t})",
        steps as f64 * eps0
    ));
    cx.metrics.insert("steps".into(), steps as f64);
    cx.metrics.insert("epsilon_claimed".into(), eps);
    Ok(chosen)
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
        p[i] = keep_probability(si, eps0, sensitivity);
    }
    Ok(p)
}

/// Cap on Algorithm 4 steps (the top T features have keep probability >= 1/2, so this is
/// reached only with astronomically small probability).
const MAX_ITERATIVE_STEPS: u64 = 100_000_000;

/// Algorithm 4 with its binary steps drawn (and charged) through `charge`; returns the kept
/// features, ascending (the steps taken are `charge.draws()`).
pub fn iterative_sampling<R: rand::Rng + ?Sized>(
    scores: &[f64],
    t: usize,
    charge: &mut Charge<'_, BinaryExponential>,
    rng: &mut R,
) -> Result<Vec<usize>> {
    check_t_eps(scores.len(), t, charge.mechanism().privacy_map().epsilon)?;
    let (order, s) = shifted_order(scores, t);
    let mut remaining: Vec<(usize, f64)> = order.into_iter().zip(s).collect();
    let mut kept = Vec::with_capacity(t);
    let mut pos = 0usize;
    while kept.len() < t {
        if charge.draws() >= MAX_ITERATIVE_STEPS {
            return Err(Error::param(
                "epsilon",
                format!(
                    "Algorithm 4 did not keep {t} features in {} steps",
                    charge.draws()
                ),
            ));
        }
        if pos >= remaining.len() {
            pos = 0;
        }
        let (i, si) = remaining[pos];
        if charge.keep(si, rng) {
            kept.push(i);
            remaining.remove(pos);
        } else {
            pos += 1;
        }
    }
    kept.sort_unstable();
    Ok(kept)
}
