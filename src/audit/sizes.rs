//! Audits on add/remove neighbours of different sizes (issue 46): every release the relation
//! admits, and every mechanism whose parameters depend on the training-set size N, each beside
//! a planted mutant that reads the data's own size instead of the run's public N (or, for a
//! release that reads no size, the size-reading bug one would write). X has the public size;
//! X' has one example more. Claimed epsilon 1 unless stated.
//!
//! * `mean_public_n`: the Laplace mean over the public n = 1, data in [0, 1]: X = {1},
//!   X' = {1, 1}; f_n = lo + sum (x - lo) / n is 1 and 2, sensitivity 1: tight. Mutant
//!   `mean_true_size` (the bug of issue 46): the mean of each side's own rows with sensitivity
//!   (hi - lo) / (its own n): both means are 1, the noise scales 1 and 1/2.
//! * `mean_noisy_count` (eps = 0.1, sum_share 1/2): the mean with n private, a noisy sum over a
//!   noisy count; X = {1}, X' = {1, 1}; statistic |release - 1/2|. Mutant
//!   `mean_noisy_count_exact_count`: the noisy sum over the exact row count (real loss about
//!   0.7 on this pair by simulation).
//! * `count_add_remove`: the release layer's Laplace count (x >= 1/2) on X = {0.2},
//!   X' = {0.2, 0.9}: 0 vs 1, tight. Mutant `share_true_size`: the share count / n released
//!   with sensitivity 1/n of the side's own n.
//! * `gaussian_mean_public_n` (eps = 0.9, delta = 1e-5, analytic): as `mean_public_n`; mutant
//!   `gaussian_mean_true_size`: sigma from each side's own n.
//! * `global_median_add_remove`: X = {0, 1} (lower median 0), X' = {0, 1, 1} (median 1),
//!   sensitivity hi - lo = 1: tight. Mutant `global_median_true_size`: the mean's (hi - lo)/n.
//! * `exponential_median_add_remove`: X = {0.2, 0.8, 0.8}, X' adds 0.2; statistic |release -
//!   1/2| (the pair, among datasets of up to four points on a grid, where the mutant's
//!   tail event is most detectable with 10^4 held-out runs; the correct mechanism's loss there is
//!   under 0.5, since the quality moves by 1/2 under add/remove). Mutant
//!   `exponential_median_scaled_by_n`: Sarwate & Chaudhuri's sensitivity 1/n of |1/2 - F_n|
//!   applied to the count quality, i.e. weights exp(eps n q / 2) with the side's own n.
//! * `mi_scores_public_n`: Algorithm 3's noisy MI scores (as the perturbed-MI figure releases
//!   them), D = 500 all-zero features, X = 5 examples (classes 3 + 2), X' adds one of class 0;
//!   noise Lap(D Delta(N) / eps) with the MI sensitivity at the public N = 5. Statistic:
//!   sum_d |release_d|, the likelihood-ratio statistic for a scale change. Mutant
//!   `mi_scores_true_size`: Delta at each side's own N (5 and 6: scales differ by 13%, which
//!   over 500 coordinates is a log-likelihood ratio of about 4 on average).
//! * `dp_sgd_public_n` (expected batch 4, 2 epochs, C = 1, delta = 1e-5, claim: the
//!   accountant's epsilon for the plan at N = 2): X = two zero rows, X' adds the canary
//!   (40, +1); q = 1, K = 2 and the update 1/(qN) read N = 2 on both sides. Statistic theta_K.
//!   Mutant `dp_sgd_true_size`: q, K and 1/(qN) from each side's own row count (3 on X'), so
//!   the update scales the noise by 1/2 on X and 1/3 on X'.
//! * `lr_output_per_example_public_n`: output perturbation with Chaudhuri et al.'s
//!   per-example Lambda = 1, lambda = N Lambda at the public N = 1: X = {(0, +1)}, X' adds
//!   (1, +1); sensitivity 1/lambda = 1. Mutant `lr_output_per_example_true_size`: lambda from
//!   each side's own N (1 and 2), so X''s noise is half X's.
//! * `partition_counts`: the random parts of parallel composition (partitioned NB, private
//!   lambda selection): T = 2 parts, each releasing its two class counts + Lap(1/eps), every
//!   row on; X = three rows of class 0, X' adds one of class 1. Statistic: part 1's class-1
//!   count + part 0's class-0 count - part 1's class-0 count. Parts by independent labels
//!   (`privacy::partition`): loss 0.46 by simulation. Mutant `partition_counts_equal_parts`
//!   (the partition before issue 46): equal contiguous chunks of a shuffle, sizes from the
//!   private N, so an added example may also move a row across the boundary (2.2 by
//!   simulation).
//!
//! * `sum_add_remove`: the release layer's Laplace sum on bounds [0.5, 1]: X = {1},
//!   X' = {1, 1}; the sum moves by max(|lo|, |hi|) = 1, its add/remove sensitivity: tight.
//!   Mutant `sum_width_under_add_remove`: the width hi - lo = 1/2 (the replace-one value, the
//!   sum run with a replace-one ledger), really 2 eps.
//! * `direct_average`: the tutorial's direct average, the mean of the rows + Lap((hi - lo)/eps)
//!   with n private, data in [0, 1]: X = {0}, X' = {0, 1}; the average moves by 1/2 (the
//!   sensitivity hi - lo is loose by 2 under add/remove: loss 1/2). Mutant
//!   `direct_average_own_n`: the textbook mean's sensitivity (hi - lo)/n with each side's own n
//!   (the bug of issue 46), scales 1 and 1/2.
//!
//! The smooth-sensitivity median and randomized response have no add/remove row: both are
//! refused under add/remove (the median's rank and the survey's share need a fixed n; their
//! replace-one rows are in [`super::release`]).

use super::logistic::Neighbours;
use super::mechanisms::LAPLACE_RELEASE;
use super::{Auditable, Claim, Side, with_mutant};
use crate::counts::ClassCounts;
use crate::data::BinaryMatrix;
use crate::learners::PartitionedNbParams;
use crate::learners::logistic::PrivateLogisticValidParams;
use crate::learners::logistic::dp_sgd::Sampling;
use crate::learners::logistic::dp_sgd::{DpSgdParams, DpSgdRun, DpSgdValidParams, Length};
use crate::learners::logistic::harness::per_example_lambda;
use crate::learners::logistic::{Design, PrivateLogisticParams, PrivateLrMethod};
use crate::privacy::exponential_median::ExponentialQuantile;
use crate::privacy::gaussian::Gaussian;
use crate::privacy::partition::random_parts;
use crate::privacy::{AccountedGaussian, Laplace, Ledger, PublicSize, Relation};
use crate::release::{self, Bounds, Clamped, Predicate, Query, Release};
use crate::rng::{Rng, Streams};
use crate::selection::Score;
use crate::selection::laplace_scores::noisy_scores;
use linfa::ParamGuard;
use ndarray::Array2;
use rand::Rng as _;
use rand::seq::SliceRandom;

/// A size audit's claim `{stem}_public_n`: its planted mutant `{stem}_true_size` reads the
/// private N where the mechanism must read the public one.
macro_rules! size_claim {
    ($stem:literal, $epsilon:expr, $neighbours:literal, $mutant:expr) => {
        Claim::new(concat!($stem, "_public_n"), $epsilon, $neighbours)
            .or_mutant($mutant, concat!($stem, "_true_size"))
    };
}

const AR: Relation = Relation::AddRemove;
const EPS: f64 = 1.0;

/// The size-audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let releases = release_rows().into_iter().flat_map(|(claim, run)| {
        let run = move |c: &Claim, side: Side, rng: &mut Rng| run(side, c.mutant, rng);
        with_mutant(claim, mutant_name(claim.name), run)
    });
    let others: [fn(bool) -> Box<dyn Auditable>; 4] = [
        |mutant| Box::new(MiScores::new(mutant)),
        |mutant| Box::new(SgdSize::new(mutant)),
        |mutant| Box::new(PerExampleOutput::new(mutant)),
        |mutant| Box::new(PartitionCounts { mutant }),
    ];
    let others = others.into_iter().flat_map(|row| [row(false), row(true)]);
    releases.chain(others).collect()
}

/// One run of a release row on a side (`mutant` as the row's claim says).
type ReleaseRun = fn(Side, bool, &mut Rng) -> f64;

/// The correct release rows; each mutant's name is [`mutant_name`] of its row's.
fn release_rows() -> [(Claim, ReleaseRun); 8] {
    let mean = "data in [0, 1], public n = 1: X = {1}, X' = {1, 1}; statistic: the release";
    [
        (
            Claim::new("mean_public_n", EPS, mean).covers(LAPLACE_RELEASE),
            mean_run,
        ),
        (
            Claim::new(
                "mean_noisy_count",
                0.1,
                "data in [0, 1], sum_share 1/2: X = {1}, X' = {1, 1}; statistic: |release - 1/2|",
            )
            // `laplace`'s mean with a `sum_share` is this composed average.
            .covers(&["release:composed_average", "release:laplace"]),
            noisy_count_run,
        ),
        (
            Claim::new(
                "count_add_remove",
                EPS,
                "count of x >= 1/2: X = {0.2}, X' = {0.2, 0.9}; statistic: the release",
            )
            .covers(LAPLACE_RELEASE),
            count_run,
        ),
        (
            Claim::new("gaussian_mean_public_n", GAUSS_EPS, mean)
                .with_delta(GAUSS_DELTA)
                .covers(&["release:gaussian"]),
            gaussian_mean_run,
        ),
        (
            Claim::new(
                "global_median_add_remove",
                EPS,
                "data in [0, 1]: X = {0, 1}, X' = {0, 1, 1}; statistic: the release",
            )
            .covers(&["release:global_median"]),
            global_median_run,
        ),
        (
            Claim::new(
                "exponential_median_add_remove",
                EPS,
                "data in [0, 1]: X = {0.2, 0.8, 0.8}, X' adds 0.2; statistic: |release - 1/2|",
            )
            .covers(&["release:exponential_median"]),
            exponential_median_run,
        ),
        (
            Claim::new(
                "sum_add_remove",
                EPS,
                "data in [0.5, 1]: X = {1}, X' = {1, 1}; statistic: the release",
            )
            .covers(LAPLACE_RELEASE),
            sum_run,
        ),
        (
            Claim::new(
                "direct_average",
                EPS,
                "data in [0, 1], n private: X = {0}, X' = {0, 1}; statistic: the release",
            )
            .covers(LAPLACE_RELEASE),
            direct_average_run,
        ),
    ]
}

fn mutant_name(correct: &str) -> &'static str {
    match correct {
        "mean_public_n" => "mean_true_size",
        "mean_noisy_count" => "mean_noisy_count_exact_count",
        "count_add_remove" => "share_true_size",
        "gaussian_mean_public_n" => "gaussian_mean_true_size",
        "global_median_add_remove" => "global_median_true_size",
        "sum_add_remove" => "sum_width_under_add_remove",
        "direct_average" => "direct_average_own_n",
        _ => "exponential_median_scaled_by_n",
    }
}

const GAUSS_EPS: f64 = 0.9;
const GAUSS_DELTA: f64 = 1e-5;

fn unit() -> Bounds {
    Bounds { lo: 0.0, hi: 1.0 }
}

/// A ledger whose public size is `n` (the run's declaration).
fn sized(n: usize) -> Ledger {
    Ledger::new(AR).with_public_size(Some(PublicSize::new(n, "declared by the audit")))
}

/// One release through `f` with fresh streams and a ledger of public size `n`.
fn once(n: usize, rng: &mut Rng, f: impl FnOnce(&mut Streams, &mut Ledger) -> Release) -> f64 {
    let mut streams = Streams::new(rng.r#gen());
    f(&mut streams, &mut sized(n)).value
}

/// The n a mean reads: the ledger's public one, or (mutant) the side's own row count.
fn mean_n(ledger: &mut Ledger, data: &Clamped, mutant: bool) -> usize {
    if mutant {
        data.len()
    } else {
        ledger.public_size("the audited mean").expect("declared")
    }
}

fn ones(side: Side) -> Clamped {
    Clamped::new(side.pick(&[1.0][..], &[1.0, 1.0][..]), unit()).expect("valid")
}

fn mean_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let data = ones(side);
    once(1, rng, |streams, ledger| {
        let n = mean_n(ledger, &data, mutant);
        release::laplace("mean", Query::Mean { n }, &data, EPS, streams, ledger).expect("valid")
    })
}

fn noisy_count_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let data = Clamped::new(side.pick(&[1.0][..], &[1.0, 1.0][..]), unit()).expect("valid");
    let value = once(1, rng, |streams, ledger| {
        if mutant {
            let sum = release::laplace("sum", Query::Sum, &data, 0.05, streams, ledger);
            let sum = sum.expect("valid");
            let value = (sum.value / data.len() as f64).clamp(0.0, 1.0);
            Release { value, ..sum }
        } else {
            release::composed_average(&data, 0.1, 0.5, streams, ledger).expect("valid")
        }
    });
    (value - 0.5).abs()
}

fn count_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let data = Clamped::new(side.pick(&[0.2][..], &[0.2, 0.9][..]), unit()).expect("valid");
    let count = Query::Count(Predicate::AtLeast(0.5));
    once(1, rng, |streams, ledger| {
        let r = release::laplace("count", count, &data, EPS, streams, ledger).expect("valid");
        if !mutant {
            return r;
        }
        // The share count / n with the sensitivity 1/n of the side's own n.
        let n = data.len() as f64;
        let lap = Laplace::new(1.0 / n, EPS, AR).expect("valid");
        let noise = ledger
            .charge("share", "laplace", lap)
            .expect("same relation")
            .sample(&mut streams.stream("share"));
        Release {
            value: r.truth / n + noise,
            truth: r.truth / n,
        }
    })
}

fn gaussian_mean_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let data = ones(side);
    once(1, rng, |streams, ledger| {
        let n = mean_n(ledger, &data, mutant);
        let query = Query::Mean { n };
        let g = Gaussian::analytic(query.sensitivity(AR, unit()), GAUSS_EPS, GAUSS_DELTA, AR);
        let g = g.expect("valid");
        release::gaussian("mean", query, &data, g, streams, ledger).expect("valid")
    })
}

fn global_median_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let data = Clamped::new(side.pick(&[0.0, 1.0][..], &[0.0, 1.0, 1.0][..]), unit());
    let data = data.expect("valid");
    once(2, rng, |streams, ledger| {
        if !mutant {
            return release::global_median(&data, EPS, streams, ledger).expect("valid");
        }
        let sorted = data.sorted();
        let truth = sorted[crate::privacy::smooth_sensitivity::median_rank(sorted.len()) - 1];
        at_own_n("median", truth, data.len(), streams, ledger)
    })
}

/// The mutants' release: `truth` + Laplace calibrated for sensitivity 1/n with n the side's own
/// row count, which under add/remove is private (step `name`).
fn at_own_n(
    name: &str,
    truth: f64,
    n: usize,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Release {
    let lap = Laplace::new(1.0 / n as f64, EPS, AR).expect("valid");
    let noise = ledger
        .charge(name, "laplace", lap)
        .expect("same relation")
        .sample(&mut streams.stream(name));
    Release {
        value: truth + noise,
        truth,
    }
}

fn exponential_median_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let x = [0.2, 0.8, 0.8];
    let xp = [0.2, 0.2, 0.8, 0.8];
    let data: &[f64] = side.pick(&x[..], &xp[..]);
    let m = ExponentialQuantile::median(EPS, 0.0, 1.0, AR).expect("valid");
    let mut w = Vec::with_capacity(5);
    let y = if mutant {
        m.log_weights_scaled(data, 2.0 / data.len() as f64, &mut w);
        m.sample_from_weights(data, &mut w, rng)
    } else {
        super::with_charge("exponential", m, |c| c.sample_sorted(data, rng, &mut w))
    };
    (y - 0.5).abs()
}

fn sum_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let bounds = Bounds { lo: 0.5, hi: 1.0 };
    let data = Clamped::new(side.pick(&[1.0][..], &[1.0, 1.0][..]), bounds).expect("valid");
    // The mutant calibrates with the replace-one ledger's width, on the add/remove pair.
    let relation = if mutant { Relation::ReplaceOne } else { AR };
    let mut streams = Streams::new(rng.r#gen());
    let mut ledger = Ledger::new(relation);
    release::laplace("sum", Query::Sum, &data, EPS, &mut streams, &mut ledger)
        .expect("valid")
        .value
}

fn direct_average_run(side: Side, mutant: bool, rng: &mut Rng) -> f64 {
    let data = Clamped::new(side.pick(&[0.0][..], &[0.0, 1.0][..]), unit()).expect("valid");
    let query = Query::DirectAverage;
    once(1, rng, |streams, ledger| {
        if !mutant {
            return release::laplace("average", query, &data, EPS, streams, ledger).expect("valid");
        }
        let truth = query.answer(&data).expect("valid");
        at_own_n("average", truth, data.len(), streams, ledger)
    })
}

/// Algorithm 3's noisy MI scores with the MI sensitivity at the public N (mutant: each side's
/// own N).
pub struct MiScores {
    claim: Claim,
    /// Per side: the class counts and the N its run's ledger declares public.
    sides: [(ClassCounts, usize); 2],
}

const MI_FEATURES: usize = 500;

impl MiScores {
    pub fn new(mutant: bool) -> Self {
        let counts = |labels: &[u16]| {
            let mut x = BinaryMatrix::new(MI_FEATURES);
            for _ in labels {
                x.push_row(&[]);
            }
            let rows: Vec<u32> = (0..labels.len() as u32).collect();
            ClassCounts::from_rows(&x, labels, &rows, 2)
        };
        let side = |labels: &[u16]| {
            let c = counts(labels);
            // The public N = 5 (X's size); the mutant declares the side's own total.
            let n = if mutant { c.total() as usize } else { 5 };
            (c, n)
        };
        let claim = size_claim!(
            "mi_scores",
            EPS,
            "Algorithm 3's noisy MI scores, D = 500 zero features, public N = 5: X = classes (3, 2), X' adds a class-0 example; statistic: sum |release_d|",
            mutant
        )
        // The `laplace` selector (Algorithm 3) releases these scores, then keeps the top T.
        .covers(&["selection:laplace"]);
        MiScores {
            claim,
            sides: [side(&[0, 0, 0, 1, 1]), side(&[0, 0, 0, 1, 1, 0])],
        }
    }
}

impl Auditable for MiScores {
    fn claim(&self) -> Claim {
        self.claim
    }
    /// Runs the `laplace` selector's own mechanism (`laplace_scores::noisy_scores`).
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let (counts, n) = side.pick(&self.sides[0], &self.sides[1]);
        let score = Score::MutualInformation;
        let noisy = noisy_scores(score, counts, EPS, rng, &mut sized(*n)).expect("valid");
        noisy.iter().map(|v| v.abs()).sum()
    }
}

/// DP-SGD whose q, step count and update read the public N (mutant: each side's own rows).
pub struct SgdSize {
    claim: Claim,
    params: DpSgdValidParams,
    /// Per side: rows, labels, the N its plan reads and the mechanism of that plan.
    sides: [(Array2<f64>, Vec<f64>, usize, AccountedGaussian); 2],
}

const SGD_PUBLIC_N: usize = 2;

impl SgdSize {
    pub fn new(mutant: bool) -> Self {
        let params = DpSgdParams::dp_sgd(EPS)
            .sampling(Sampling::ExpectedBatch(4))
            .length(Length::Epochs(2.0))
            .clip(1.0)
            .learning_rate(1e-3)
            .lambda(0.0)
            .delta(GAUSS_DELTA)
            .check()
            .expect("valid plan");
        let (_, claimed) = params.plan(SGD_PUBLIC_N, AR).expect("reachable");
        let side = |rows: &[f64]| {
            let x = Array2::from_shape_vec((rows.len(), 1), rows.to_vec()).expect("one column");
            let n = if mutant { rows.len() } else { SGD_PUBLIC_N };
            let (plan, _) = params.plan(n, AR).expect("reachable");
            let m = AccountedGaussian::new(plan, 1.0, GAUSS_DELTA, AR).expect("valid");
            (x, vec![1.0; rows.len()], n, m)
        };
        let claim = size_claim!(
            "dp_sgd",
            claimed.epsilon,
            "D = 1, expected batch 4, 2 epochs, C = 1, public N = 2: X = two zero rows, X' adds the canary (40, +1); statistic: theta_K",
            mutant
        )
        .with_delta(GAUSS_DELTA)
        .covers(&["learner:dp_sgd"]);
        SgdSize {
            claim,
            sides: [side(&[0.0, 0.0]), side(&[0.0, 0.0, 40.0])],
            params,
        }
    }
}

impl Auditable for SgdSize {
    fn claim(&self) -> Claim {
        self.claim
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let (x, y, n, mechanism) = side.pick(&self.sides[0], &self.sides[1]);
        let design = Design::dense(x.view());
        let plan = mechanism.plan();
        let mut run = DpSgdRun::new(&design, y, &self.params, plan.sampling_rate, *n);
        let mut ledger = Ledger::new(AR);
        let mut noise = ledger
            .charge("audit", self.claim.name, *mechanism)
            .expect("same relation");
        for _ in 0..plan.steps {
            run.step(rng, &mut noise);
        }
        run.theta[0]
    }
}

/// Output perturbation with lambda = N Lambda at the public N (mutant: each side's own N).
pub struct PerExampleOutput {
    claim: Claim,
    data: Neighbours,
    /// The fit of each side (lambda from the N it reads).
    params: [PrivateLogisticValidParams; 2],
}

impl PerExampleOutput {
    pub fn new(mutant: bool) -> Self {
        let data = Neighbours::new(&[(0.0, 1.0)]);
        let big_lambda = 1.0;
        // The correct side runs the spec's own path (`lambda = { per_example = Lambda }`).
        let params = |rows: usize| {
            let lambda = if mutant {
                big_lambda * rows as f64
            } else {
                per_example_lambda(big_lambda, &mut sized(1)).expect("declared")
            };
            PrivateLogisticParams::new(PrivateLrMethod::Output, EPS, lambda)
                .check()
                .expect("valid")
        };
        let claim = size_claim!(
            "lr_output_per_example",
            EPS,
            "D = 1, Lambda = 1, lambda = N Lambda at the public N = 1: X = {(0, +1)}, X' adds (1, +1); statistic: the released theta",
            mutant
        )
        .covers(&["learner:lr_output"]);
        PerExampleOutput {
            claim,
            params: [params(1), params(2)],
            data,
        }
    }
}

impl Auditable for PerExampleOutput {
    fn claim(&self) -> Claim {
        self.claim
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let params = side.pick(&self.params[0], &self.params[1]);
        super::logistic::fit(params, &self.data, side, AR, rng)
    }
}

/// Two random parts each releasing its class counts + Lap(1/eps) (mutant: equal chunks of a
/// shuffle, as partitioned NB and private lambda selection cut them before issue 46).
pub struct PartitionCounts {
    mutant: bool,
}

impl Auditable for PartitionCounts {
    fn claim(&self) -> Claim {
        Claim::new(
            "partition_counts",
            EPS,
            "2 random parts, class counts + Lap(1) each: X = three class-0 rows, X' adds a class-1 row; statistic: c(part 1, class 1) + c(part 0, class 0) - c(part 1, class 0)",
        )
        .or_mutant(self.mutant, "partition_counts_equal_parts")
        // `partitioned_nb`'s parts, each releasing its counts + Lap(1/eps).
        .covers(&["learner:partitioned_nb"])
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let classes: &[usize] = side.pick(&[0, 0, 0][..], &[0, 0, 0, 1][..]);
        let n = classes.len();
        let parts: Vec<Vec<usize>> = if self.mutant {
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(rng);
            (0..2)
                .map(|p| order[p * n / 2..(p + 1) * n / 2].to_vec())
                .collect()
        } else {
            random_parts(n, 2, rng)
        };
        // The learner's own calibration (`PartitionedNbValidParams::mechanism`).
        let params = PartitionedNbParams::new(EPS).check().expect("valid");
        let lap = params.mechanism(AR).expect("valid");
        super::with_charge("laplace (parts)", lap, |c| {
            let mut count = |part: usize, class: usize| {
                let k = parts[part].iter().filter(|&&i| classes[i] == class).count();
                k as f64 + c.sample(rng)
            };
            count(1, 1) + count(0, 0) - count(1, 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::testing::{assert_tight, audited};

    /// 20,000 runs per side, seed 1: every correct row at or below its claim, every mutant
    /// caught (each reads a size the neighbours do not share, or the partition they do not).
    #[test]
    fn size_rows_pass_and_size_mutants_are_caught() {
        let (results, _) = audited(&all(), 24, AR);
        let tight = [
            "mean_public_n",
            "count_add_remove",
            "global_median_add_remove",
            "sum_add_remove",
        ];
        assert_tight(&results, &tight.map(|name| (name, 0.8)));
    }
}
