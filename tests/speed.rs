//! The speed gate: a benchmark planted 1.5x slower than its stored ratio is caught (limit
//! 1.3x, after a confirming remeasure), and the same benchmark unchanged passes, both timed
//! against the reference workload in the same process, interleaved, median of 15 rounds.

use epsilab::speed::{Bench, ROUNDS, SpeedExpectation, compare, measure};

/// `n` Laplace draws and logs, like the reference workload.
fn work(n: usize) {
    let mut rng = epsilab::rng::rng_from(&["speed test"]);
    let lap = epsilab::privacy::LaplaceNoise::with_scale(3.0).unwrap();
    let mut acc = 0.0f64;
    for _ in 0..n {
        acc += (1.0 + lap.sample(&mut rng).abs()).ln();
    }
    std::hint::black_box(acc);
}

#[test]
fn a_planted_one_and_a_half_times_slowdown_is_caught() {
    let reference = || work(100_000);
    let base = Bench::new("planted", || work(100_000));
    let ratio = measure(&reference, &[&base], ROUNDS)[0];
    assert!((0.5..2.0).contains(&ratio), "{ratio}");
    let stored = SpeedExpectation {
        ratios: [("planted".to_string(), ratio)].into(),
    };
    let slower = [Bench::new("planted", || work(150_000))];
    let r = compare(&reference, &slower, &stored, ROUNDS);
    assert_eq!(r.failures.len(), 1, "{r:?}");
    assert!(r.failures[0].contains("`planted`"), "{r:?}");
    let unchanged = [Bench::new("planted", || work(100_000))];
    let r = compare(&reference, &unchanged, &stored, ROUNDS);
    assert!(r.failures.is_empty(), "{r:?}");
}
