//! Audits of noisy gradient descent, DP-SGD and Algorithm 3's private choice of lambda
//! (issue 13), D = 1.
//!
//! * Noisy GD (q = 1, 10 steps, clip C = 1, replace-one, target eps = 1 at delta = 1e-5): X has
//!   a canary (x = 40, y = +1) and a zero row, X' replaces the canary by (x = -40, y = +1). With
//!   a learning rate of 1e-3 theta stays near 0, where the canary's logistic gradient has norm
//!   about 20 > C, so its clipped gradient is -C on X and +C on X' at every step: the clipped
//!   sum moves by 2C, the stated sensitivity, and the zero row adds nothing. Statistic: the
//!   released theta_K (linear in the sum of the released gradients). The claim is the
//!   accountant's (eps, delta) for the plan; the audit's bound subtracts delta
//!   ([`super::Claim::delta`]).
//! * DP-SGD (Poisson rate q = 0.05, 20 steps, add/remove, same canary): X is 100 zero rows,
//!   X' adds the canary, which enters each batch with probability q and then moves the clipped
//!   sum by C. (N enters theta only through the public normalisation 1/(qN), 1% apart.)
//! * Mutants (both learners): the noise of a plan with a tenth of the multiplier (really about
//!   10 times the claim), or no clipping (the canary's gradient is about 20 C, noise for C).
//! * Algorithm 3's selection step (`select::choose_by_score`, replace-one, eps = 1): ten
//!   candidate models, the first theta = +1, the others -1; the validation part is one row
//!   x = 1, labelled +1 in X and -1 in X', so the first candidate's correct count falls by 1
//!   while all others rise by 1 (the largest change of the normaliser, near-tight). Statistic:
//!   whether the first candidate was chosen. Mutant: the exponential mechanism at 2 eps (score
//!   sensitivity taken as 1/2).
//! * Algorithm 3 as a whole (`select::private_select_lambda` with `Tuning::Parallel`, add/remove,
//!   eps = 1 overall): four output-perturbation candidates (lambda = 1, each at eps = 1) on
//!   their random parts, the selection at eps = 1 on the fifth. X is 40 rows (0.1, -1), X' adds
//!   (1, +1). Parallel composition bounds every part's release together, so the statistic may
//!   read all of them: the sum of the four candidates' theta (the selected model is one of
//!   them). Mutant `private_lambda_algorithm3_overlapping_parts`: every candidate fitted on all
//!   rows, so the added example moves all four (really up to 4 eps under the same ledger).

use super::logistic::Neighbours;
use super::{Auditable, Claim, Side};
use crate::learners::logistic::Design;
use crate::learners::logistic::dp_sgd::{
    DpSgdParams, DpSgdRun, DpSgdValidParams, Length, Sampling,
};
use crate::learners::logistic::select::{Tuning, choose_by_score, private_select_lambda};
use crate::learners::logistic::{PrivateLogisticParams, PrivateLrMethod};
use crate::privacy::accountant::SubsampledGaussian;
use crate::privacy::{AccountedGaussian, Ledger, Relation};
use crate::rng::Rng;
use linfa::ParamGuard;
use ndarray::Array2;

/// The audits of this file, in registry order.
pub fn all() -> Vec<Box<dyn Auditable>> {
    vec![
        Box::new(GradientAudit::noisy_gd(None)),
        Box::new(GradientAudit::noisy_gd(Some(SgdMutant::SigmaTenth))),
        Box::new(GradientAudit::noisy_gd(Some(SgdMutant::NoClipping))),
        Box::new(GradientAudit::dp_sgd(None)),
        Box::new(GradientAudit::dp_sgd(Some(SgdMutant::SigmaTenth))),
        Box::new(GradientAudit::dp_sgd(Some(SgdMutant::NoClipping))),
        Box::new(LambdaSelection { mutant: false }),
        Box::new(LambdaSelection { mutant: true }),
        Box::new(Algorithm3::new(false)),
        Box::new(Algorithm3::new(true)),
    ]
}

/// Audited delta of the gradient methods.
const SGD_DELTA: f64 = 1e-5;
/// The canary's |x|: its unclipped logistic gradient near theta = 0 is about |x| / 2 = 20 C.
const CANARY: f64 = 40.0;

/// What a gradient-method audit plants, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SgdMutant {
    /// Noise for a tenth of the plan's multiplier.
    SigmaTenth,
    /// No per-example clipping (noise still for C).
    NoClipping,
}

/// Noisy GD (full batches, replace-one) or DP-SGD (Poisson sampling, add/remove) on a canary.
pub struct GradientAudit {
    name: &'static str,
    params: DpSgdValidParams,
    mechanism: AccountedGaussian,
    relation: Relation,
    claimed: f64,
    x: Array2<f64>,
    x_prime: Array2<f64>,
    y: Vec<f64>,
    y_prime: Vec<f64>,
    mutant: Option<SgdMutant>,
}

impl GradientAudit {
    /// Noisy gradient descent: q = 1, 10 steps, replace-one.
    pub fn noisy_gd(mutant: Option<SgdMutant>) -> Self {
        let x = Array2::from_shape_vec((2, 1), vec![CANARY, 0.0]).expect("2 x 1");
        let x_prime = Array2::from_shape_vec((2, 1), vec![-CANARY, 0.0]).expect("2 x 1");
        let params = DpSgdParams::noisy_gd(1.0).length(Length::Steps(10));
        let name = match mutant {
            None => "noisy_gd",
            Some(SgdMutant::SigmaTenth) => "noisy_gd_sigma_tenth",
            Some(SgdMutant::NoClipping) => "noisy_gd_no_clipping",
        };
        Self::build(name, params, Relation::ReplaceOne, (x, x_prime), mutant)
    }

    /// DP-SGD: Poisson rate 0.05, 20 steps, add/remove (X' adds the canary to 100 zero rows).
    pub fn dp_sgd(mutant: Option<SgdMutant>) -> Self {
        let x = Array2::zeros((100, 1));
        let mut x_prime = Array2::zeros((101, 1));
        x_prime[[100, 0]] = CANARY;
        let params = DpSgdParams::dp_sgd(1.0)
            .sampling(Sampling::Rate(0.05))
            .length(Length::Steps(20));
        let name = match mutant {
            None => "dp_sgd",
            Some(SgdMutant::SigmaTenth) => "dp_sgd_sigma_tenth",
            Some(SgdMutant::NoClipping) => "dp_sgd_no_clipping",
        };
        Self::build(name, params, Relation::AddRemove, (x, x_prime), mutant)
    }

    fn build(
        name: &'static str,
        params: DpSgdParams,
        relation: Relation,
        (x, x_prime): (Array2<f64>, Array2<f64>),
        mutant: Option<SgdMutant>,
    ) -> Self {
        let clip = if mutant == Some(SgdMutant::NoClipping) {
            1e12
        } else {
            1.0
        };
        let params = params
            .clip(clip)
            .learning_rate(1e-3)
            .lambda(0.0)
            .delta(SGD_DELTA)
            .check()
            .expect("valid plan");
        // The plan (and its claim) as the learner computes it: sigma by the accountant's search.
        let (plan, guarantee) = params.plan(x.nrows(), relation).expect("reachable target");
        let drawn = match mutant {
            Some(SgdMutant::SigmaTenth) => SubsampledGaussian::new(
                plan.noise_multiplier / 10.0,
                plan.sampling_rate,
                plan.steps,
            )
            .expect("valid plan"),
            _ => plan,
        };
        let mechanism =
            AccountedGaussian::new(drawn, 1.0, SGD_DELTA, relation).expect("valid mechanism");
        GradientAudit {
            name,
            params,
            mechanism,
            relation,
            claimed: guarantee.epsilon,
            y: vec![1.0; x.nrows()],
            y_prime: vec![1.0; x_prime.nrows()],
            x,
            x_prime,
            mutant,
        }
    }
}

impl Auditable for GradientAudit {
    fn claim(&self) -> Claim {
        let (neighbours, kind): (_, &'static [&'static str]) = match self.relation {
            Relation::ReplaceOne => (
                "D = 1, q = 1, 10 steps, C = 1; X: canary (40, +1) and a zero row, X' replaces the canary by (-40, +1) (clipped gradient -C vs +C); statistic: theta_K",
                &["learner:noisy_gd"],
            ),
            Relation::AddRemove => (
                "D = 1, q = 0.05, 20 steps, C = 1; X: 100 zero rows, X' adds the canary (40, +1) (clipped gradient C when sampled); statistic: theta_K",
                &["learner:dp_sgd"],
            ),
        };
        Claim::new(self.name, self.claimed, neighbours)
            .with_delta(SGD_DELTA)
            .under(self.relation)
            .mutant(self.mutant.is_some())
            .covers(kind)
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let x = side.pick(&self.x, &self.x_prime);
        let y = side.pick(&self.y, &self.y_prime);
        let design = Design::dense(x.view());
        // N public: X's size on both sides (the neighbour X' has one row more or less).
        let n = self.x.nrows();
        let q = self.params.sampling_rate(n);
        let mut run = DpSgdRun::new(&design, y, &self.params, q, n);
        let mut ledger = Ledger::new(self.relation);
        let mut noise = ledger
            .charge("audit", self.name, self.mechanism)
            .expect("same relation");
        for _ in 0..self.mechanism.plan().steps {
            run.step(rng, &mut noise);
        }
        run.theta[0]
    }
}

/// Algorithm 3's selection step over ten candidates, eps = 1, replace-one.
pub struct LambdaSelection {
    pub mutant: bool,
}

const CANDIDATES: usize = 10;

impl Auditable for LambdaSelection {
    fn claim(&self) -> Claim {
        Claim::new(
            "private_lambda",
            1.0,
            "10 candidates (theta = +1, then nine of -1); validation row x = 1 with y = +1 (X) or -1 (X'); statistic: first candidate chosen",
        )
        .under(Relation::ReplaceOne)
        .or_mutant(self.mutant, "private_lambda_double_epsilon")
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let label = match side {
            Side::X => 1.0,
            Side::XPrime => -1.0,
        };
        // Correct counts on the one validation row: sign(theta x) == y.
        let counts: Vec<f64> = (0..CANDIDATES)
            .map(|r| {
                let theta: f64 = if r == 0 { 1.0 } else { -1.0 };
                f64::from(u8::from(theta * label > 0.0))
            })
            .collect();
        let eps = if self.mutant { 2.0 } else { 1.0 };
        let mut ledger = Ledger::new(Relation::ReplaceOne);
        let chosen = choose_by_score(&counts, eps, rng, &mut ledger).expect("valid budget");
        f64::from(u8::from(chosen == 0))
    }
}

/// Algorithm 3 end to end under parallel composition, eps = 1 overall, add/remove; the mutant
/// fits every candidate on all rows.
pub struct Algorithm3 {
    mutant: bool,
    data: Neighbours,
}

/// Algorithm 3's candidates in the audit (one lambda each, all lambda = 1).
const ALGORITHM3_CANDIDATES: usize = 4;

impl Algorithm3 {
    fn new(mutant: bool) -> Self {
        Algorithm3 {
            mutant,
            data: Neighbours::new(&[(0.1, -1.0); 40]),
        }
    }
}

impl Auditable for Algorithm3 {
    fn claim(&self) -> Claim {
        Claim::new(
            "private_lambda_algorithm3",
            1.0,
            "4 output-perturbation candidates (lambda = 1) on random parts, selection on the fifth; X: 40 rows (0.1, -1), X' adds (1, +1); statistic: the candidates' summed theta",
        )
        .or_mutant(self.mutant, "private_lambda_algorithm3_overlapping_parts")
        // `lambda = "private"` of `lr_output`: its candidates are output-perturbation fits.
        .covers(&["learner:lr_output"])
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let (x, y) = self.data.side(side);
        let all_rows = Design::dense(x.view());
        let params = PrivateLogisticParams::new(PrivateLrMethod::Output, 1.0, 1.0)
            .check()
            .expect("valid parameters");
        let mut summed = 0.0;
        let mut ledger = Ledger::new(Relation::AddRemove);
        private_select_lambda(
            &all_rows,
            y,
            &[1.0; ALGORITHM3_CANDIDATES],
            Tuning::Parallel { eps_select: 1.0 },
            rng,
            &mut ledger,
            |part, yy, lambda, rng, ledger| {
                let params = params.with_lambda(lambda);
                let fit = if self.mutant {
                    params.fit_design(&all_rows, y, rng, ledger)?
                } else {
                    params.fit_design(part, yy, rng, ledger)?
                };
                summed += fit.model.theta[0];
                Ok(fit.model)
            },
        )
        .expect("valid selection");
        summed
    }
}
