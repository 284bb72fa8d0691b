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

use super::{Auditable, Claim, Side};
use crate::learners::logistic::Design;
use crate::learners::logistic::ensemble::{Ensemble, fit_ensemble, random_blocks};
use crate::learners::logistic::input::perturb_inputs;
use crate::privacy::{L2Noise, Ledger, Relation};
use crate::rng::Rng;
use ndarray::Array2;

/// The ERM audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let input = "D = 1, label share 1/2; X: one row (1, +1), X' replaces it by (-1, -1); statistic: exact LLR";
    let input = |name| Claim::new(name, INPUT_EPS, input).under(Relation::ReplaceOne);
    let sa = "D = 1, k = 2 blocks, B = 1; X: 8 rows of -10, X' replaces one by 1000 (its block's clipped mean flips -1 -> +1); statistic: theta";
    vec![
        Box::new(InputPerturbation(input("input_perturbation"))),
        Box::new(InputPerturbation(
            input("input_perturbation_sensitivity_1").mutant(true),
        )),
        Box::new(SubsampleAggregate(Claim::new(
            "subsample_aggregate",
            1.0,
            sa,
        ))),
        Box::new(SubsampleAggregate(
            Claim::new("subsample_aggregate_half_sensitivity", 1.0, sa).mutant(true),
        )),
    ]
}

/// Input perturbation of one example, eps = 1, half on the labels.
/// The mutant: feature noise for sensitivity 1.
pub struct InputPerturbation(Claim);

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

impl Auditable for InputPerturbation {
    fn claim(&self) -> Claim {
        self.0
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let (x, y) = Self::example(side);
        let (xt, yt) = if self.0.mutant {
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
pub struct SubsampleAggregate(Claim);

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

impl Auditable for SubsampleAggregate {
    fn claim(&self) -> Claim {
        self.0
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let values = Self::rows(side);
        if self.0.mutant {
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
