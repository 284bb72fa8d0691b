//! Input perturbation (the surveys' "perturb the data, then learn"): every training row x_i gets
//! L2-mechanism noise, every label goes through randomized response, and the non-private
//! learner runs on the noisy copy.
//!
//! Privacy statement (OpenDP-shaped):
//! * Domain: training sets of rows with ‖x‖ ≤ 1 and labels in {−1, +1}; released: the noisy
//!   rows and labels (the model fitted on them is post-processing).
//! * Relation: replace-one only. Each released pair depends on one example, so a replaced
//!   example changes one pair; under add/remove the size of the release would reveal the
//!   change, so the learner refuses an add/remove ledger.
//! * Sensitivity: two rows of the unit ball differ by at most 2 in L2 (features); a label is one
//!   bit (labels).
//! * Mechanism: x̃_i = x_i + b_i, b_i with density ∝ exp(−‖b‖/β), β = 2/ε_x; ỹ_i = y_i with
//!   probability e^{ε_y}/(1 + e^{ε_y}), else −y_i. The split ε = ε_x + ε_y is declared
//!   (`label_share` of ε to the labels) and both parts are ledger entries.
//! * Measure: pure ε-DP. Proof sketch: for replace-one neighbours only pair i differs; its
//!   feature release is ε_x-DP (L2 mechanism, triangle inequality) and its label ε_y-DP
//!   (randomized response); the pairs of other examples have the same distribution (parallel
//!   composition), and fitting is post-processing.

use super::Design;
use super::erm::minimise;
use super::loss::Loss;
use super::mechanisms::check_unit_rows;
use super::solver::{Convergence, Objective, SolverSettings};
use crate::error::{Error, Result};
use crate::privacy::randomized_response::RandomizedResponse;
use crate::privacy::{L2Mechanism, Ledger, Relation};
use crate::rng::Rng;

/// Input perturbation is private for replace-one neighbours only (the fit's check, and the
/// preflight's before anything runs).
pub fn check_relation(relation: Relation) -> Result<()> {
    if relation != Relation::ReplaceOne {
        return Err(Error::param(
            "neighbours",
            "input perturbation releases one noisy row per example, private for replace-one neighbours only; set `neighbours = \"replace_one\"` in [experiment]",
        ));
    }
    Ok(())
}

/// The released noisy rows (dense N × D) and labels, recorded in `ledger` as two entries.
pub fn perturb_inputs(
    design: &Design,
    y: &[f64],
    epsilon: f64,
    label_share: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(ndarray::Array2<f64>, Vec<f64>)> {
    check_unit_rows(design)?;
    check_relation(ledger.relation())?;
    if !(label_share > 0.0 && label_share < 1.0) {
        return Err(Error::param(
            "label_share",
            format!("must be in (0, 1), got {label_share}"),
        ));
    }
    let (eps_y, eps_x) = (epsilon * label_share, epsilon * (1.0 - label_share));
    let mut x = design.to_dense();
    let mut rows = ledger.charge(
        "train",
        "l2 mechanism on every row (input perturbation, features)",
        L2Mechanism::new(2.0, eps_x, Relation::ReplaceOne)?,
    )?;
    rows.note("parallel composition: each noisy row depends on one example");
    for mut row in x.rows_mut() {
        let b = rows.sample(row.len(), rng);
        row.iter_mut().zip(&b).for_each(|(v, n)| *v += n);
    }
    // Each example answers once about its own label: one survey, eps_y by parallel composition.
    let bits: Vec<bool> = y.iter().map(|&v| v > 0.0).collect();
    let answers = ledger
        .charge(
            "train",
            "randomized response on every label (input perturbation, labels)",
            RandomizedResponse::new(eps_y)?,
        )?
        .survey_answers(bits, rng);
    let yt = answers
        .iter()
        .map(|&b| if b { 1.0 } else { -1.0 })
        .collect();
    Ok((x, yt))
}

/// Input perturbation, then the non-private minimiser of the regularised `loss` on the copy.
#[allow(clippy::too_many_arguments)]
pub fn input_perturbation(
    loss: Loss,
    design: &Design,
    y: &[f64],
    lambda: f64,
    epsilon: f64,
    label_share: f64,
    settings: &SolverSettings,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<(Vec<f64>, Convergence)> {
    let (x, yt) = perturb_inputs(design, y, epsilon, label_share, rng, ledger)?;
    let noisy = Design::dense(x.view());
    Ok(minimise(
        loss,
        &Objective::regularised(&noisy, &yt, lambda),
        settings,
    ))
}
