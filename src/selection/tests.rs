//! Tests of the selectors. Statistical tests state their level and are checked for power
//! against a wrong epsilon (the same samples must be rejected at twice the epsilon).

use super::*;
use crate::privacy::exponential::{MaskSampler, exponential_probabilities, gumbel_top_k};
use crate::privacy::{BinaryExponential, PublicSize, Relation, SparseVector};
use crate::rng::rng_from;
use ndarray::array;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The sparse vector mechanism, one release recorded in a ledger of its own.
fn sparse_vector<R: rand::Rng + ?Sized>(
    q: &[f64],
    t: usize,
    threshold: f64,
    eps: f64,
    sens: f64,
    rng: &mut R,
) -> Result<Vec<usize>> {
    let m = SparseVector::new(t, sens, eps, Relation::AddRemove)?;
    let mut ledger = Ledger::default();
    let chosen = ledger
        .charge(STEP, "sparse", m)?
        .above_threshold(q, threshold, rng)?;
    assert_eq!(ledger.total_epsilon(), eps);
    Ok(chosen)
}

/// Algorithm 4 at eps0 per step; returns the kept features and the steps, checking that the
/// ledger recorded steps x eps0.
fn iterative(q: &[f64], t: usize, eps0: f64, sens: f64, seed: u32) -> (Vec<usize>, u64) {
    let m = BinaryExponential::new(sens, eps0, Relation::AddRemove).unwrap();
    let mut ledger = Ledger::default();
    let mut charge = ledger.charge(STEP, "iterative", m).unwrap();
    let kept =
        iterative_sampling(q, t, &mut charge, &mut rng_from(&["it", &seed.to_string()])).unwrap();
    let steps = charge.draws();
    assert_eq!(ledger.total_epsilon(), steps as f64 * eps0);
    (kept, steps)
}

/// All k-subsets of 0..d as ascending index vectors, with their bitmasks.
fn subsets(d: usize, k: usize) -> Vec<(u32, Vec<usize>)> {
    (0u32..1 << d)
        .filter(|m| m.count_ones() as usize == k)
        .map(|m| (m, (0..d).filter(|&i| m >> i & 1 == 1).collect()))
        .collect()
}

/// Brute-force exponential mechanism probabilities over the k-subsets for weights w.
fn brute_force(w: &[f64], k: usize) -> (Vec<u32>, Vec<f64>, f64) {
    let subs = subsets(w.len(), k);
    let logits: Vec<f64> = subs
        .iter()
        .map(|(_, s)| s.iter().map(|&i| w[i]).sum())
        .collect();
    let z = crate::privacy::exponential::log_sum_exp(&logits);
    (
        subs.iter().map(|(m, _)| *m).collect(),
        logits.iter().map(|l| (l - z).exp()).collect(),
        z,
    )
}

/// Pearson chi-square statistic and the critical value at level `alpha`.
fn chi_square(observed: &[u64], probs: &[f64], alpha: f64) -> (f64, f64) {
    let n: u64 = observed.iter().sum();
    let stat = observed
        .iter()
        .zip(probs)
        .map(|(&o, &p)| {
            let e = p * n as f64;
            (o as f64 - e).powi(2) / e
        })
        .sum();
    let df = (observed.len() - 1) as f64;
    let crit = ChiSquared::new(df).unwrap().inverse_cdf(1.0 - alpha);
    (stat, crit)
}

const ALPHA: f64 = 0.001;

/// Algorithm 5 sampler vs brute-force enumeration, D = 6, T = 2 and 3: chi-square goodness of
/// fit at alpha = 0.001 accepts; the same samples are rejected against the distribution at
/// twice the epsilon (weights doubled).
#[test]
fn mask_sampler_matches_brute_force_and_rejects_twice_epsilon() {
    let q = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    // eps / (2 Delta_m) = 0.3.
    let w = mask_weights(&q, 0.6, 1.0);
    let w2: Vec<f64> = w.iter().map(|x| 2.0 * x).collect();
    let mut sampler = MaskSampler::new();
    let mut buf = Vec::new();
    for k in [2, 3] {
        let (masks, probs, _) = brute_force(&w, k);
        let (_, probs2, _) = brute_force(&w2, k);
        let mut rng = rng_from(&["test", "mask-chi2", &k.to_string()]);
        let mut observed = vec![0u64; masks.len()];
        for _ in 0..20_000 {
            sampler.sample_into(&w, k, &mut rng, &mut buf).unwrap();
            assert_eq!(buf.len(), k);
            let m: u32 = buf.iter().map(|&i| 1u32 << i).sum();
            observed[masks.iter().position(|&x| x == m).unwrap()] += 1;
        }
        let (stat, crit) = chi_square(&observed, &probs, ALPHA);
        assert!(stat < crit, "T={k}: chi2 {stat} >= {crit}");
        let (stat2, crit2) = chi_square(&observed, &probs2, ALPHA);
        assert!(
            stat2 > crit2,
            "T={k}: 2 eps not rejected, chi2 {stat2} <= {crit2}"
        );
    }
}

/// exp(S(T, D)) equals the brute-force normaliser for every T with D = 7.
#[test]
fn dp_normaliser_matches_brute_force() {
    let w = [0.3, -1.2, 2.5, 0.0, 4.0, -0.7, 1.1];
    let mut sampler = MaskSampler::new();
    for k in 1..=w.len() {
        let (_, _, z) = brute_force(&w, k);
        let s = sampler.log_normaliser(&w, k).unwrap();
        assert!((s - z).abs() < 1e-12, "T={k}: {s} vs {z}");
        assert!((s.exp() - z.exp()).abs() <= 1e-12 * z.exp());
    }
}

/// Gumbel top-k with T = 1 is the exponential mechanism: chi-square at alpha = 0.001 against
/// softmax(eps q / (2 Delta)) accepts, and the same samples are rejected at twice the epsilon.
#[test]
fn gumbel_top1_matches_exponential_mechanism() {
    let q = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let (eps, sens) = (0.8, 1.0);
    let probs = exponential_probabilities(&q, eps, sens);
    let probs2 = exponential_probabilities(&q, 2.0 * eps, sens);
    let mut rng = rng_from(&["test", "gumbel-chi2"]);
    let mut observed = vec![0u64; q.len()];
    for _ in 0..20_000 {
        let top = gumbel_top_k(&q, 1, 2.0 * sens / eps, &mut rng).unwrap();
        observed[top[0]] += 1;
    }
    let (stat, crit) = chi_square(&observed, &probs, ALPHA);
    assert!(stat < crit, "chi2 {stat} >= {crit}");
    let (stat2, crit2) = chi_square(&observed, &probs2, ALPHA);
    assert!(stat2 > crit2, "2 eps not rejected: {stat2} <= {crit2}");
}

/// Two classes of 100, eight features with distinct count and MI scores.
fn toy_counts() -> ClassCounts {
    ClassCounts {
        class: vec![100.0, 100.0],
        on: array![
            [50.0, 10.0, 90.0, 40.0, 30.0, 50.0, 70.0, 20.0],
            [50.0, 60.0, 5.0, 45.0, 85.0, 52.0, 20.0, 95.0]
        ],
    }
}

#[test]
fn sparse_vector_returns_at_most_t_and_respects_huge_epsilon() {
    let q = [5.0, 1.0, 7.0, 9.0, 0.0, 8.0, 6.0];
    let mut rng = rng_from(&["test", "sparse"]);
    // Huge eps: exactly the first T features (index order) with q >= threshold.
    let sel = sparse_vector(&q, 2, 5.5, 1e9, 1.0, &mut rng).unwrap();
    assert_eq!(sel, vec![2, 3]);
    let sel = sparse_vector(&q, 3, 5.5, 1e9, 1.0, &mut rng).unwrap();
    assert_eq!(sel, vec![2, 3, 5]);
    // Runs out: only four scores above 5.5.
    let sel = sparse_vector(&q, 6, 5.5, 1e9, 1.0, &mut rng).unwrap();
    assert_eq!(sel, vec![2, 3, 5, 6]);
    // Small eps: never more than T, indices distinct and ascending.
    for i in 0..200 {
        let mut rng = rng_from(&["test", "sparse-small", &i.to_string()]);
        let sel = sparse_vector(&q, 3, 0.0, 0.1, 1.0, &mut rng).unwrap();
        assert!(sel.len() <= 3);
        assert!(sel.windows(2).all(|w| w[0] < w[1]));
    }
    // Through the selector.
    let counts = toy_counts();
    let cq = count_scores(&counts).unwrap();
    let mut streams = Streams::new(1);
    let mut ledger = Ledger::default();
    let sel = Selector::Sparse {
        score: Score::Count,
        threshold: 45.0,
    }
    .select(&counts, 8, Some(1e9), &mut streams, &mut ledger)
    .unwrap();
    let expect: Vec<usize> = (0..8).filter(|&i| cq[i] >= 45.0).collect();
    assert_eq!(sel.features, expect);
    assert_eq!(sel.metrics["selected"], expect.len() as f64);
}

fn all_private_selectors() -> Vec<Selector> {
    let mut v = vec![Selector::NoisyNbMi];
    for score in [Score::MutualInformation, Score::Count] {
        v.push(Selector::LaplaceScores { score });
        v.push(Selector::IterativeSampling { score });
        v.push(Selector::MaskSampling { score });
        v.push(Selector::Sparse {
            score,
            threshold: 0.0,
        });
        v.push(Selector::GumbelTopK { score });
    }
    v
}

/// A ledger whose public N is the counts' total (the run declares it).
fn sized(counts: &ClassCounts) -> Ledger {
    Ledger::default().with_public_size(Some(PublicSize::new(
        counts.total() as usize,
        "declared by the test",
    )))
}

/// `sel` keeping `t` features of `counts` at `eps`, its noise from stream seed 1, its spend
/// recorded in `ledger`.
fn select(
    sel: &Selector,
    counts: &ClassCounts,
    t: usize,
    eps: Option<f64>,
    ledger: &mut Ledger,
) -> Result<Selection> {
    sel.select(counts, t, eps, &mut Streams::new(1), ledger)
}

/// Ledger total == eps_select for every private selector, except Algorithm 4 (steps x eps0);
/// the MI score's selectors also record the public N their sensitivity read.
#[test]
fn ledger_records_the_selection_budget() {
    let counts = toy_counts();
    let eps = 0.05;
    let t = 3;
    for sel in all_private_selectors() {
        let mut streams = Streams::new(9);
        let mut ledger = sized(&counts);
        let out = sel
            .select(&counts, t, Some(eps), &mut streams, &mut ledger)
            .unwrap();
        let reads_n = format!("{sel:?}").contains("MutualInformation");
        assert_eq!(ledger.entries.len(), 1 + usize::from(reads_n), "{sel:?}");
        if reads_n {
            let size = &ledger.entries[0];
            assert_eq!(size.name, "size");
            assert_eq!(size.epsilon, Some(0.0));
            assert!(size.mechanism.contains(&format!("N = {}", counts.total())));
        }
        let entry = ledger.entries.last().unwrap();
        assert_eq!(entry.name, STEP);
        assert!(entry.sensitivity.unwrap() > 0.0);
        if let Selector::IterativeSampling { .. } = sel {
            // Its draws' spend is stated, but the step gives no guarantee at any step count.
            let steps = out.metrics["steps"];
            assert!(steps >= t as f64);
            assert!((ledger.total_epsilon() - steps * eps / t as f64).abs() < 1e-12);
            assert!(!entry.private, "{sel:?}");
            assert!(!ledger.is_private_within(Some(1e9)));
        } else {
            assert!(entry.private, "{sel:?}");
            assert!((ledger.total_epsilon() - eps).abs() < 1e-15, "{sel:?}");
            assert!(ledger.is_private_within(Some(eps)));
        }
        assert!(out.features.len() <= t);
        assert!(out.features.windows(2).all(|w| w[0] < w[1]));
        if !matches!(sel, Selector::Sparse { .. }) {
            assert_eq!(out.features.len(), t, "{sel:?}");
        }
    }
    // Non-private ranking: recorded as such.
    let mut ledger = Ledger::default();
    Selector::NonPrivate {
        score: Score::MutualInformation,
    }
    .select(&counts, t, None, &mut Streams::new(1), &mut ledger)
    .unwrap();
    assert!(!ledger.entries[0].private);
    assert!(!ledger.is_private_within(Some(1.0)));
}

/// Without a public N the MI score's private selectors refuse to run (their sensitivity reads
/// N) and spend nothing; the count score's need none.
#[test]
fn mi_selectors_need_a_public_size() {
    let counts = toy_counts();
    for sel in all_private_selectors() {
        let mut ledger = Ledger::default();
        let r = sel.select(&counts, 2, Some(1.0), &mut Streams::new(1), &mut ledger);
        if format!("{sel:?}").contains("MutualInformation") {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("public_n") && e.contains("MI"), "{e}");
            assert_eq!(ledger.total_epsilon(), 0.0);
        } else {
            r.unwrap();
        }
    }
}

/// At a huge epsilon every private selector with a full ranking returns the exact top T.
/// Algorithm 4 has no guarantee at any step count: with T = 1, scores (1, 1) (Delta = 1, a
/// neighbour adds one example to feature 1: (1, 2)) keep feature 0 at the first step about half
/// the time, the neighbour never, so the outcome (kept [0], one step) has probability 1/2
/// against 0. Checked on 400 runs a side: at least 150 against none (the first count falls
/// below 150 with probability under 1e-9). And a trial that stops after exactly T steps is
/// still recorded as not private.
#[test]
fn iterative_sampling_is_not_private_whatever_its_steps() {
    let one_step_keeps_0 = |q: &[f64]| {
        (0..400)
            .filter(|&s| iterative(q, 1, 1.0, 1.0, s) == (vec![0], 1))
            .count()
    };
    let (x, x_prime) = (one_step_keeps_0(&[1.0, 1.0]), one_step_keeps_0(&[1.0, 2.0]));
    assert!(x >= 150 && x_prime == 0, "{x} and {x_prime} of 400");

    let counts = toy_counts();
    let mut ledger = sized(&counts);
    let sel = Selector::IterativeSampling {
        score: Score::Count,
    };
    let out = select(&sel, &counts, 3, Some(1e12), &mut ledger).unwrap();
    assert_eq!(out.metrics["steps"], 3.0);
    let entry = ledger.entries.last().unwrap();
    assert!(!entry.private && entry.note.as_deref().unwrap().starts_with("NOT private"));
    assert!(!ledger.is_private_within(Some(1e13)));
}

#[test]
fn huge_epsilon_recovers_the_exact_ranking() {
    let counts = toy_counts();
    for score in [Score::MutualInformation, Score::Count] {
        let nonprivate = Selector::NonPrivate { score };
        let exact = select(&nonprivate, &counts, 3, None, &mut Ledger::default())
            .unwrap()
            .features;
        assert_eq!(exact, top_k(&score.compute(&counts).unwrap(), 3));
        let mut sels = vec![
            Selector::LaplaceScores { score },
            Selector::MaskSampling { score },
            Selector::GumbelTopK { score },
            Selector::IterativeSampling { score },
        ];
        if score == Score::MutualInformation {
            sels.push(Selector::NoisyNbMi);
        }
        for sel in sels {
            let got = select(&sel, &counts, 3, Some(1e12), &mut sized(&counts)).unwrap();
            assert_eq!(got.features, exact, "{sel:?}");
        }
    }
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let counts = toy_counts();
    let three = ClassCounts {
        class: vec![10.0, 10.0, 10.0],
        on: array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
    };
    for sel in all_private_selectors() {
        for eps in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            let r = select(&sel, &counts, 2, eps, &mut Ledger::default());
            assert!(
                r.unwrap_err().to_string().contains("epsilon"),
                "{sel:?} {eps:?}"
            );
        }
        for t in [0, 9] {
            let r = select(&sel, &counts, t, Some(1.0), &mut Ledger::default());
            assert!(r.is_err(), "{sel:?} T={t}");
        }
    }
    let mut ledger = Ledger::default();
    let count_mask = Selector::MaskSampling {
        score: Score::Count,
    };
    let r = select(&count_mask, &three, 1, Some(1.0), &mut ledger);
    assert!(r.unwrap_err().to_string().contains("two classes"));
    assert!(ledger.entries.is_empty(), "nothing spent on a failed call");
    // MI works for three classes.
    let mi_mask = Selector::MaskSampling {
        score: Score::MutualInformation,
    };
    select(&mi_mask, &three, 1, Some(1.0), &mut sized(&three)).unwrap();
    let nan_threshold = Selector::Sparse {
        score: Score::Count,
        threshold: f64::NAN,
    };
    let r = select(
        &nan_threshold,
        &counts,
        1,
        Some(1.0),
        &mut Ledger::default(),
    );
    assert!(r.is_err());
    assert!(keep_probabilities(&[1.0, 2.0], 1, 1.0, 0.0).is_err());
    assert!(keep_probabilities(&[1.0, 2.0], 3, 1.0, 1.0).is_err());
}

/// Algorithm 4 keep probabilities: 1/2 at the (T+1)-th score, above it for the top T,
/// increasing in the score.
#[test]
fn keep_probabilities_shift_by_the_t_plus_first_score() {
    let q = [3.0, 10.0, 1.0, 7.0, 5.0];
    let p = keep_probabilities(&q, 2, 0.5, 1.0).unwrap();
    // Sorted: 10, 7, 5 (the 3rd = (T+1)-th), 3, 1.
    assert!((p[4] - 0.5).abs() < 1e-15);
    assert!((p[1] - 1.0 / (1.0 + (-0.5f64 * 5.0 / 2.0).exp())).abs() < 1e-15);
    assert!(p[1] > p[3] && p[3] > p[4] && p[4] > p[0] && p[0] > p[2]);
    // T = D: shift by the smallest score.
    let p = keep_probabilities(&q, 5, 0.5, 1.0).unwrap();
    assert!((p[2] - 0.5).abs() < 1e-15);
    assert_eq!(iterative(&q, 2, 1e9, 1.0, 0), (vec![1, 3], 2));
    // Small eps0: every keep probability is about 1/2, so T = 2 keeps take about 4 steps
    // (negative binomial, sd 2; the mean of 400 runs is within 5 standard errors of 4), each
    // charged eps0 in the ledger (checked by `iterative`).
    let runs = 400;
    let steps: u64 = (0..runs).map(|s| iterative(&q, 2, 0.01, 1.0, s).1).sum();
    let mean = steps as f64 / runs as f64;
    assert!((3.5..4.5).contains(&mean), "{mean}");
}

// ---- Power at 0.7x and 1.3x the noise scale (issue 5). Each test: chi-square goodness of fit
// at level ALPHA = 0.001 accepts the sampler at its own scale, and the same samples are
// rejected against the law at 0.7x and 1.3x the scale.

/// Samples `n` draws of a categorical sampler and checks fit at scale 1 and rejection at
/// 0.7x / 1.3x, given the exact probabilities at a scale multiplier.
fn check_scale_power(
    what: &str,
    n: usize,
    mut draw: impl FnMut() -> usize,
    probs_at: impl Fn(f64) -> Vec<f64>,
) {
    let k = probs_at(1.0).len();
    let mut observed = vec![0u64; k];
    for _ in 0..n {
        observed[draw()] += 1;
    }
    let (stat, crit) = chi_square(&observed, &probs_at(1.0), ALPHA);
    eprintln!("{what}: chi2 at x1 = {stat:.1} (critical {crit:.1})");
    assert!(
        stat < crit,
        "{what}: chi2 {stat} >= {crit} at the right scale"
    );
    for m in [0.7, 1.3] {
        let (stat, crit) = chi_square(&observed, &probs_at(m), ALPHA);
        eprintln!("{what}: chi2 at x{m} = {stat:.1}");
        assert!(
            stat > crit,
            "{what}: scale x{m} not rejected: {stat} <= {crit}"
        );
    }
}

/// Algorithm 5's mask sampler, D = 6, T = 2, weights q / scale with scale = 2 Delta_m / eps
/// = 2.5 (eps = 0.8, Delta_m = 1): 40,000 draws, alpha = 0.001; rejected at 0.7x and 1.3x.
#[test]
fn mask_sampler_rejects_wrong_scales() {
    let q = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let scale = 2.5;
    let weights = |m: f64| -> Vec<f64> { q.iter().map(|v| v / (m * scale)).collect() };
    let (masks, _, _) = brute_force(&weights(1.0), 2);
    let mut sampler = MaskSampler::new();
    let mut rng = rng_from(&["test", "mask-scale-power"]);
    let w = weights(1.0);
    let mut buf = Vec::new();
    check_scale_power(
        "mask T=2",
        40_000,
        || {
            sampler.sample_into(&w, 2, &mut rng, &mut buf).unwrap();
            let m: u32 = buf.iter().map(|&i| 1u32 << i).sum();
            masks.iter().position(|&x| x == m).unwrap()
        },
        |m| brute_force(&weights(m), 2).1,
    );
}

/// Exact law of the top-2 set of one-shot Gumbel top-k = two peeling rounds of the
/// exponential mechanism: P({i, j}) = p_i p_j / (1 - p_i) + p_j p_i / (1 - p_j).
fn top2_probs(q: &[f64], scale: f64) -> (Vec<(usize, usize)>, Vec<f64>) {
    let p = exponential_probabilities(q, 2.0, scale); // exp(q / scale) normalised
    let mut pairs = Vec::new();
    let mut probs = Vec::new();
    for i in 0..q.len() {
        for j in i + 1..q.len() {
            pairs.push((i, j));
            probs.push(p[i] * p[j] / (1.0 - p[i]) + p[j] * p[i] / (1.0 - p[j]));
        }
    }
    (pairs, probs)
}

/// Gumbel top-k, D = 5, T = 2, Gumbel scale 1.5: 40,000 draws against the peeling law,
/// alpha = 0.001; the same draws are rejected at 0.7x and 1.3x the scale.
#[test]
fn gumbel_top2_matches_peeling_and_rejects_wrong_scales() {
    let q = [0.0, 1.0, 2.0, 3.0, 4.0];
    let scale = 1.5;
    let (pairs, probs) = top2_probs(&q, scale);
    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let mut rng = rng_from(&["test", "gumbel-top2-power"]);
    check_scale_power(
        "gumbel T=2",
        40_000,
        || {
            let top = gumbel_top_k(&q, 2, scale, &mut rng).unwrap();
            pairs.iter().position(|&(i, j)| top == [i, j]).unwrap()
        },
        |m| top2_probs(&q, m * scale).1,
    );
}

/// Gumbel top-1 (the exponential mechanism), D = 6, scale 2 Delta / eps = 2.5: 40,000 draws,
/// alpha = 0.001; rejected at 0.7x and 1.3x the scale.
#[test]
fn gumbel_top1_rejects_wrong_scales() {
    let q = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let scale = 2.5;
    let mut rng = rng_from(&["test", "gumbel-top1-power"]);
    check_scale_power(
        "gumbel T=1",
        40_000,
        || gumbel_top_k(&q, 1, scale, &mut rng).unwrap()[0],
        |m| exponential_probabilities(&q, 2.0, m * scale),
    );
}

/// Exact law of the first positive of AboveThreshold (Sparse with T = 1): index i with
/// probability  int f(tau) prod_{j<i} F(tau - q_j) (1 - F(tau - q_i)) dtau, "none" (index D)
/// with int f(tau) prod_j F(tau - q_j) dtau; tau = threshold + Lap(b1), query noise Lap(b2).
/// Trapezoid rule on thr +- 60 b1 with 240,001 points (error far below the test's resolution).
fn sparse_first_positive_law(q: &[f64], thr: f64, b1: f64, b2: f64) -> Vec<f64> {
    use crate::privacy::laplace::laplace_cdf;
    let steps = 240_000;
    let (lo, hi) = (thr - 60.0 * b1, thr + 60.0 * b1);
    let h = (hi - lo) / steps as f64;
    let mut out = vec![0.0; q.len() + 1];
    for s in 0..=steps {
        let tau = lo + s as f64 * h;
        let w = if s == 0 || s == steps { 0.5 } else { 1.0 };
        let dens = (-(tau - thr).abs() / b1).exp() / (2.0 * b1) * w * h;
        let mut below = 1.0;
        for (i, &qi) in q.iter().enumerate() {
            let f = laplace_cdf(b2, tau - qi);
            out[i] += dens * below * (1.0 - f);
            below *= f;
        }
        out[q.len()] += dens * below;
    }
    out
}

/// Sparse vector noise: with T = 1 the index of the first positive (or none) has the exact law
/// above for noisy threshold Lap(2 Delta / eps) and query noise Lap(4 Delta / eps). Scores
/// (0, 1, 2, 3, 4), threshold 3, eps = 1, Delta = 1: 40,000 runs, chi-square at alpha = 0.001
/// accepts; both noise scales at 0.7x and 1.3x are rejected.
#[test]
fn sparse_vector_noise_has_the_stated_scales() {
    let q = [0.0, 1.0, 2.0, 3.0, 4.0];
    let (thr, eps) = (3.0, 1.0);
    let law = |m: f64| sparse_first_positive_law(&q, thr, m * 2.0 / eps, m * 4.0 / eps);
    let p = law(1.0);
    assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{p:?}");
    let mut rng = rng_from(&["test", "sparse-law"]);
    check_scale_power(
        "sparse T=1",
        40_000,
        || {
            let out = sparse_vector(&q, 1, thr, eps, 1.0, &mut rng).unwrap();
            out.first().copied().unwrap_or(q.len())
        },
        law,
    );
}
