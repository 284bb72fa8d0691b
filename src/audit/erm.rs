//! Audits of the ERM shoot-out's other mechanisms (issue 13), D = 1, claimed epsilon 1.
//!
//! * Input perturbation (replace-one, label share 1/2): X is one example (x = 1, y = +1), X'
//!   replaces it by (x = -1, y = -1): the feature moves by the full L2 diameter 2 and the label
//!   flips, the worst case of both parts. Statistic: the exact log-likelihood ratio of the
//!   released (x~, y~) under the claimed scales, so threshold events are Neyman-Pearson optimal
//!   and the true epsilon is exactly the claim. Mutant: feature noise for sensitivity 1 (the
//!   change of one coordinate of a 0/1 row instead of the ball's diameter), really
//!   2 eps_x + eps_y = 1.5.
//! * Subsample-and-aggregate (k = 2 blocks, box [-1, 1]): X is 8 rows of value -10 (every block
//!   estimate, the block's mean, clips to -1), X' replaces one by 1000, so that block's
//!   estimate clips to +1: the noisy mean moves by 2B/k = 1, the stated sensitivity. Statistic:
//!   the released coefficient. Mutant: noise for sensitivity B/k (forgetting that the clipped
//!   estimate can move across the whole box), really 2 eps.
//! * Averaging m = 4 output-perturbation models (lambda = 1, eps = 2 in all) on the neighbours of
//!   `lr_output` (X: 40 rows (0.1, -1); X' adds (1, +1), which moves theta* by 0.69): sequential
//!   (each model on all rows at eps/4) and parallel (each on its own random block at eps).
//!   Statistic: the averaged theta. Mutants: the sequential budget not split (each model at eps:
//!   four eps-DP releases of the same rows, really up to 4 eps), and parallel blocks that overlap
//!   (every model fitted on all rows, the same up-to-4 eps).

use super::logistic::Neighbours;
use super::{Auditable, Claim, Side, with_mutant};
use crate::learners::logistic::ensemble::{Ensemble, fit_ensemble, random_blocks};
use crate::learners::logistic::input::perturb_inputs;
use crate::learners::logistic::{Design, PrivateLogisticParams, PrivateLrMethod};
use crate::privacy::{L2Noise, Ledger, Relation};
use crate::rng::Rng;
use linfa::ParamGuard;
use ndarray::{Array2, Axis};

/// The ERM audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let input = "D = 1, label share 1/2; X: one row (1, +1), X' replaces it by (-1, -1); statistic: exact LLR";
    let input = |name| {
        Claim::new(name, INPUT_EPS, input)
            .under(Relation::ReplaceOne)
            .covers(&["learner:input_perturbation"])
    };
    let sa = "D = 1, k = 2 blocks, B = 1; X: 8 rows of -10, X' replaces one by 1000 (its block's clipped mean flips -1 -> +1); statistic: theta";
    let averaging = [
        ("averaging_sequential", Ensemble::Sequential(MODELS), false),
        (
            "averaging_sequential_budget_not_split",
            Ensemble::Sequential(MODELS),
            true,
        ),
        ("averaging_parallel", Ensemble::Parallel(MODELS), false),
        (
            "averaging_parallel_overlapping_blocks",
            Ensemble::Parallel(MODELS),
            true,
        ),
    ];
    let rows = [
        with_mutant(
            input("input_perturbation"),
            "input_perturbation_sensitivity_1",
            InputPerturbation::run,
        ),
        with_mutant(
            Claim::new("subsample_aggregate", 1.0, sa).covers(&["learner:subsample_aggregate"]),
            "subsample_aggregate_half_sensitivity",
            SubsampleAggregate::run,
        ),
    ];
    let mut rows: Vec<Box<dyn Auditable>> = rows.into_iter().flatten().collect();
    for (name, ensemble, mutant) in averaging {
        rows.push(Box::new(Averaging::new(name, ensemble, mutant)));
    }
    rows
}

/// Input perturbation of one example, eps = 1, half on the labels.
/// The mutant: feature noise for sensitivity 1.
struct InputPerturbation;

const INPUT_EPS: f64 = 1.0;

impl InputPerturbation {
    fn example(side: Side) -> (f64, f64) {
        match side {
            Side::X => (1.0, 1.0),
            Side::XPrime => (-1.0, -1.0),
        }
    }

    /// ln p(x~, y~ | example) under the claimed scales (beta = 2 / eps_x, eps_y).
    fn log_density(example: (f64, f64), xt: f64, yt: f64) -> f64 {
        let (eps_x, eps_y) = (INPUT_EPS / 2.0, INPUT_EPS / 2.0);
        let truth = crate::privacy::randomized_response::truth_probability(eps_y);
        let label = if yt == example.1 { truth } else { 1.0 - truth };
        -(xt - example.0).abs() * eps_x / 2.0 + label.ln()
    }
}

impl InputPerturbation {
    /// One run's statistic.
    fn run(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
        let (x, y) = Self::example(side);
        let (xt, yt) = if claim.mutant {
            let b = L2Noise::with_scale(1.0 / (INPUT_EPS / 2.0))
                .expect("valid")
                .sample(1, rng)[0];
            let flip = rand::Rng::r#gen::<f64>(rng)
                >= crate::privacy::randomized_response::truth_probability(INPUT_EPS / 2.0);
            (x + b, if flip { -y } else { y })
        } else {
            let rows = Array2::from_elem((1, 1), x);
            let design = Design::dense(rows.view());
            let mut ledger = Ledger::new(Relation::ReplaceOne);
            let (xt, yt) = perturb_inputs(&design, &[y], INPUT_EPS, 0.5, rng, &mut ledger)
                .expect("valid input");
            (xt[[0, 0]], yt[0])
        };
        Self::log_density(Self::example(Side::XPrime), xt, yt)
            - Self::log_density(Self::example(Side::X), xt, yt)
    }
}

/// Subsample-and-aggregate with k = 2 blocks and box [-1, 1], eps = 1.
/// The mutant: noise for sensitivity B/k.
struct SubsampleAggregate;

const SA_BLOCKS: usize = 2;

impl SubsampleAggregate {
    fn rows(side: Side) -> Vec<f64> {
        let mut v = vec![-10.0; 8];
        if side == Side::XPrime {
            v[7] = 1000.0;
        }
        v
    }
}

fn block_mean(values: &[f64], rows: Option<&[usize]>) -> Vec<f64> {
    let all: Vec<usize>;
    let rows = match rows {
        Some(r) => r,
        None => {
            all = (0..values.len()).collect();
            &all
        }
    };
    let s: f64 = rows.iter().map(|&i| values[i]).sum();
    vec![s / rows.len().max(1) as f64]
}

impl SubsampleAggregate {
    /// One run's statistic.
    fn run(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
        let values = Self::rows(side);
        if claim.mutant {
            let blocks = random_blocks(values.len(), SA_BLOCKS, rng);
            let mean: f64 = blocks
                .iter()
                .map(|b| block_mean(&values, Some(b))[0].clamp(-1.0, 1.0))
                .sum::<f64>()
                / SA_BLOCKS as f64;
            let noise = L2Noise::with_scale(1.0 / SA_BLOCKS as f64).expect("valid");
            return mean + noise.sample(1, rng)[0];
        }
        let ensemble = Ensemble::SubsampleAggregate {
            blocks: SA_BLOCKS,
            bound: 1.0,
        };
        let mut ledger = Ledger::new(Relation::AddRemove);
        fit_ensemble(
            ensemble,
            values.len(),
            1.0,
            rng,
            &mut ledger,
            |rows, _, _, _| Ok(block_mean(&values, rows)),
        )
        .expect("valid ensemble")[0]
    }
}

/// Averaging `MODELS` output-perturbation fits (lambda = 1) at eps = 2 in all (a larger eps than
/// the other rows, so that the mutants' 4x excess shows within the test's trials), through the
/// ensemble code the specs run. The mutants replace the composition's bookkeeping: each model
/// at the full eps (sequential) or on all rows instead of its block (parallel).
pub struct Averaging {
    claim: Claim,
    ensemble: Ensemble,
    data: Neighbours,
}

const MODELS: usize = 4;
const AVERAGING_EPS: f64 = 2.0;

impl Averaging {
    fn new(name: &'static str, ensemble: Ensemble, mutant: bool) -> Self {
        let neighbours = match ensemble {
            Ensemble::Parallel(_) => {
                "D = 1, lambda = 1, m = 4 random blocks; X: 40 rows (0.1, -1), X' adds (1, +1); statistic: mean theta"
            }
            _ => {
                "D = 1, lambda = 1, m = 4 at eps/4 each; X: 40 rows (0.1, -1), X' adds (1, +1); statistic: mean theta"
            }
        };
        Averaging {
            claim: Claim::new(name, AVERAGING_EPS, neighbours)
                .mutant(mutant)
                .covers(&["learner:averaged"]),
            ensemble,
            data: Neighbours::new(&[(0.1, -1.0); 40]),
        }
    }
}

impl Auditable for Averaging {
    fn claim(&self) -> Claim {
        self.claim
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let (x, y) = self.data.side(side);
        let mutant = self.claim.mutant;
        let fit = |rows: Option<&[usize]>, eps: Option<f64>, rng: &mut Rng, ledger: &mut Ledger| {
            let (rows, eps) = match (mutant, self.ensemble) {
                (true, Ensemble::Sequential(_)) => (rows, Some(AVERAGING_EPS)),
                (true, _) => (None, eps),
                (false, _) => (rows, eps),
            };
            let (xs, ys) = match rows {
                Some(r) => (x.select(Axis(0), r), r.iter().map(|&i| y[i]).collect()),
                None => (x.clone(), y.to_vec()),
            };
            let eps = eps.expect("averaging fits are private");
            let params = PrivateLogisticParams::new(PrivateLrMethod::Output, eps, 1.0).check()?;
            let fit = params.fit_design(&Design::dense(xs.view()), &ys, rng, ledger)?;
            Ok(fit.model.theta.to_vec())
        };
        let mut ledger = Ledger::new(Relation::AddRemove);
        fit_ensemble(self.ensemble, y.len(), AVERAGING_EPS, rng, &mut ledger, fit)
            .expect("valid ensemble")[0]
    }
}
