//! Audits of the robust-statistics releases (issue 50), each beside a planted mutant, all
//! replace-one with n = 60 public, bounds [0, 1], eps = 1 (PTR: half to the test, delta =
//! 1e-3, so the claim is (1, 1e-3)-DP; a held-out bound subtracts the delta):
//!
//! * `trimmed_mean_ptr` (alpha = 1/4, propose 1, so b = 1/60), a stable pair: X = {i/600 :
//!   i < 60}, X' replaces its largest value by 0. The distance to instability is 15, the test
//!   passes about three times in four, and the answers differ by less than b.
//! * `trimmed_mean_ptr_no_test` (mutant): the answer + Lap(b/eps') without the test, on an
//!   unstable pair X = thirty 0s and thirty 1s, X' with one 0 replaced by 1, propose 1/4 (b =
//!   1/240, the answer's scale b/eps' = 1/120): the trimmed means differ by 1/30, four scales,
//!   a loss of 4 > 1: caught. The correct PTR on that pair (`trimmed_mean_ptr_unstable`,
//!   distance 0) answers with probability delta/2 and otherwise reports the fallback 0.5.
//! * `iqr_ptr` and `iqr_ptr_no_test` (mutant): X = fifteen 0s, thirty 0.5s, fifteen 1s
//!   (IQR 0.5), X' replaces one 0 by 0.5 (IQR 0), propose 1/4: the correct PTR refuses
//!   (distance 0), the mutant answers 0.5 or 0 plus Lap(1/120) and is caught.
//! * `m_estimator_histogram` (2 bins, Huber c = 1, pure eps = 1): X = ten 0.25s, X' moves one
//!   to 0.75. Mutant `m_estimator_histogram_exact_counts`: the estimate from the exact counts,
//!   so X gives 0.25 and X' 0.3 every time.
//! * `ptr_test`: PTR's test on its own ((1, 1e-3)-DP, the distance to instability has
//!   sensitivity 1) on distances 7 (X) and 8 (X'), just above the threshold ln(1/delta)/eps =
//!   6.91: "no answer" with probability e^-0.09 / 2 = 0.457 on X and e^-1.09 / 2 = 0.168 on
//!   X', ln 1: tight. Statistic: whether the test passed. Mutant `ptr_test_half_scale`: the
//!   noise Lap(1/(2 eps)) (the distance's sensitivity taken as 1/2): 0.418 against 0.057, ln 2.
//!
//! Statistic: the release (PTR's fallback on "no answer").

use super::{Auditable, Claim, Side, row, with_charge};
use crate::privacy::ptr::PtrTest;
use crate::privacy::{LaplaceNoise, Ledger, PublicSize, Relation};
use crate::release::robust::{self, PtrParams, Robust};
use crate::release::{Bounds, Clamped};
use crate::rng::{Rng, Streams};
use rand::Rng as _;

const EPS: f64 = 1.0;
const DELTA: f64 = 1e-3;
const N: usize = 60;

/// The kinds the rows run: each PTR release, and PTR's test, which both run.
const TRIMMED: &[&str] = &["release:trimmed_mean_ptr"];
const IQR: &[&str] = &["release:iqr_ptr"];
const PTR: &[&str] = &["release:trimmed_mean_ptr", "release:iqr_ptr"];

/// The robust-release audits, in report order.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let claim = |name, neighbours| {
        Claim::new(name, EPS, neighbours)
            .under(Relation::ReplaceOne)
            .with_delta(DELTA)
    };
    let stable = "X = {i/600 : i < 60}, X' = X with 59/600 replaced by 0; statistic: the release";
    let unstable = "X = thirty 0s and thirty 1s, X' = one 0 replaced by 1; statistic: the release";
    let iqr = "X = fifteen 0s, thirty 0.5s, fifteen 1s, X' = one 0 replaced by 0.5; statistic: the release";
    let hist = "X = ten 0.25s, X' = nine 0.25s and 0.75 (2 bins); statistic: the estimate";
    let distances = "PTR's test alone: distance to instability 7 (X) vs 8 (X'), threshold ln(1/delta)/eps = 6.91; statistic: passed";
    let pure = |name, mutant| {
        Claim::new(name, EPS, hist)
            .under(Relation::ReplaceOne)
            .mutant(mutant)
            .covers(&["release:m_estimator_histogram"])
    };
    let ptr_row = |claim: Claim, pair: Pair| {
        row(claim, move |c: &Claim, side, rng: &mut Rng| {
            ptr(c, pair, side, rng)
        })
    };
    vec![
        ptr_row(
            claim("trimmed_mean_ptr", stable).covers(TRIMMED),
            Pair::Stable,
        ),
        ptr_row(
            claim("trimmed_mean_ptr_unstable", unstable).covers(TRIMMED),
            Pair::Unstable,
        ),
        ptr_row(
            claim("trimmed_mean_ptr_no_test", unstable)
                .mutant(true)
                .covers(TRIMMED),
            Pair::Unstable,
        ),
        ptr_row(claim("iqr_ptr", iqr).covers(IQR), Pair::Iqr),
        ptr_row(
            claim("iqr_ptr_no_test", iqr).mutant(true).covers(IQR),
            Pair::Iqr,
        ),
        row(pure("m_estimator_histogram", false), m_estimator),
        row(
            pure("m_estimator_histogram_exact_counts", true),
            m_estimator,
        ),
        row(claim("ptr_test", distances).covers(PTR), ptr_test),
        row(
            claim("ptr_test_half_scale", distances)
                .mutant(true)
                .covers(PTR),
            ptr_test,
        ),
    ]
}

/// PTR's test alone on distances to instability 7 (X) and 8 (X') (the mutant: its noise at
/// half the scale). Statistic: 1 if it passed.
fn ptr_test(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let distance = if side == Side::X { 7.0 } else { 8.0 };
    let test = PtrTest::new(EPS, DELTA, Relation::ReplaceOne).expect("valid");
    let passed = if claim.mutant {
        let noise = LaplaceNoise::with_scale(0.5 / EPS).expect("valid");
        distance + noise.sample(rng) > test.threshold()
    } else {
        with_charge("PTR test", test, |c| c.test(distance, rng)).1
    };
    f64::from(u8::from(passed))
}

/// Which neighbouring pair a PTR row runs on (module docs).
#[derive(Clone, Copy, PartialEq)]
enum Pair {
    Stable,
    Unstable,
    Iqr,
}

impl Pair {
    fn data(self, side: Side) -> Vec<f64> {
        let mut x: Vec<f64> = match self {
            Pair::Stable => (0..N).map(|i| i as f64 / 600.0).collect(),
            Pair::Unstable => (0..N).map(|i| if i < 30 { 0.0 } else { 1.0 }).collect(),
            Pair::Iqr => (0..N)
                .map(|i| match i {
                    0..15 => 0.0,
                    15..45 => 0.5,
                    _ => 1.0,
                })
                .collect(),
        };
        if side == Side::XPrime {
            match self {
                Pair::Stable => x[N - 1] = 0.0,
                Pair::Unstable => x[0] = 1.0,
                Pair::Iqr => x[0] = 0.5,
            }
        }
        x
    }

    fn statistic(self) -> Robust {
        match self {
            Pair::Iqr => Robust::Iqr,
            _ => Robust::TrimmedMean { alpha: 0.25 },
        }
    }
}

/// A PTR release on `pair` (the mutant: no test, the answer always released).
fn ptr(claim: &Claim, pair: Pair, side: Side, rng: &mut Rng) -> f64 {
    let data = Clamped::new(&pair.data(side), unit()).expect("valid");
    let params = PtrParams {
        statistic: pair.statistic(),
        propose: if pair == Pair::Stable { 1.0 } else { 0.25 },
        test_share: 0.5,
        delta: DELTA,
        fallback: 0.5,
    };
    if claim.mutant {
        let b = params.propose / N as f64;
        let noise = LaplaceNoise::with_scale(b / (0.5 * EPS)).expect("valid");
        return params.statistic.answer(&data.sorted()) + noise.sample(rng);
    }
    let mut ledger = Ledger::new(Relation::ReplaceOne)
        .with_public_size(Some(PublicSize::new(N, "the audit's pair")));
    let mut streams = Streams::new(rng.r#gen());
    robust::ptr_release(params, &data, EPS, &mut streams, &mut ledger)
        .expect("valid")
        .release
        .value
}

/// Lei's M-estimator on two bins (the mutant: exact counts).
fn m_estimator(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let mut xs = [0.25; 10];
    if side == Side::XPrime {
        xs[9] = 0.75;
    }
    let data = Clamped::new(&xs, unit()).expect("valid");
    if claim.mutant {
        let w = if side == Side::X {
            [10.0, 0.0]
        } else {
            [9.0, 1.0]
        };
        return robust::huber_location(&[0.25, 0.75], Some(&w), 1.0, unit());
    }
    let mut streams = Streams::new(rng.r#gen());
    let mut ledger = Ledger::new(Relation::ReplaceOne);
    robust::m_estimator_histogram(&data, 2, 1.0, EPS, &mut streams, &mut ledger)
        .expect("valid")
        .value
}

fn unit() -> Bounds {
    Bounds { lo: 0.0, hi: 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20,000 runs per side, seed 1: every mutant caught, every correct row within its claim,
    /// PTR's test alone close to it.
    #[test]
    fn robust_mutants_are_caught_and_correct_rows_pass() {
        let (results, _) = crate::audit::testing::audited(&all(), 9, Relation::ReplaceOne);
        // The test alone is tight on its pair (its event ratio is e^eps exactly).
        crate::audit::testing::assert_tight(&results, &[("ptr_test", 0.8)]);
    }
}
