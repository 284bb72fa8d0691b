//! Property tests of the sensitivities (issue 5) over generated neighbouring datasets: a random
//! two-class binary dataset X (N rows, D features) and X' = X plus one generated example, the
//! add/remove relation of SPEC 1. 256 cases per property (a few seconds in debug).

use epsilab::counts::ClassCounts;
use epsilab::selection::{count_scores, mi_sensitivity, mutual_information};
use ndarray::Array2;
use proptest::prelude::*;

type Row = (usize, Vec<bool>);

fn counts_of(rows: &[Row], d: usize) -> ClassCounts {
    let mut class = vec![0.0; 2];
    let mut on = Array2::zeros((2, d));
    for (c, x) in rows {
        class[*c] += 1.0;
        for (j, &b) in x.iter().enumerate() {
            if b {
                on[[*c, j]] += 1.0;
            }
        }
    }
    ClassCounts { class, on }
}

/// (X, added example, D): N in min_n..=max_n rows, D in 1..=6 features.
fn neighbours(min_n: usize, max_n: usize) -> impl Strategy<Value = (Vec<Row>, Row, usize)> {
    (1usize..=6).prop_flat_map(move |d| {
        let row = (0usize..2, prop::collection::vec(any::<bool>(), d));
        (
            prop::collection::vec(row.clone(), min_n..=max_n),
            row,
            Just(d),
        )
    })
}

fn with_added(rows: &[Row], extra: &Row) -> Vec<Row> {
    let mut v = rows.to_vec();
    v.push(extra.clone());
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Algorithm 1's released vector (N1 and N0 for every class and feature) moves by exactly
    /// D in L1 (at most D is the sensitivity it uses).
    #[test]
    fn nb_counts_change_by_at_most_d_in_l1((rows, extra, d) in neighbours(0, 40)) {
        let a = counts_of(&rows, d);
        let b = counts_of(&with_added(&rows, &extra), d);
        let mut l1 = 0.0;
        for c in 0..2 {
            for j in 0..d {
                l1 += (a.on[[c, j]] - b.on[[c, j]]).abs();
                l1 += (a.off(c, j) - b.off(c, j)).abs();
            }
        }
        prop_assert!(l1 <= d as f64, "L1 change {} > D = {}", l1, d);
        prop_assert_eq!(l1, d as f64);
    }

    /// The two-class count score of every feature moves by at most 1.
    #[test]
    fn count_score_changes_by_at_most_one((rows, extra, d) in neighbours(1, 40)) {
        let qa = count_scores(&counts_of(&rows, d)).unwrap();
        let qb = count_scores(&counts_of(&with_added(&rows, &extra), d)).unwrap();
        for (j, (x, y)) in qa.iter().zip(&qb).enumerate() {
            prop_assert!((x - y).abs() <= 1.0, "feature {}: {} -> {}", j, x, y);
        }
    }

    /// Adding one example moves all two-class count scores in one direction (none rises while
    /// another falls): why the count-score exponential mechanisms are really eps/2-DP
    /// (docs/audit.md).
    #[test]
    fn count_scores_move_in_one_direction((rows, extra, d) in neighbours(1, 40)) {
        let qa = count_scores(&counts_of(&rows, d)).unwrap();
        let qb = count_scores(&counts_of(&with_added(&rows, &extra), d)).unwrap();
        let up = qa.iter().zip(&qb).any(|(x, y)| y > x);
        let down = qa.iter().zip(&qb).any(|(x, y)| y < x);
        prop_assert!(!(up && down), "{:?} -> {:?}", qa, qb);
    }

    /// MI (bits, SPEC 4 definition) of every feature moves by at most Delta_I(N), N = |X|: the
    /// bound of Table 3.2 for N vs N + 1 (the add direction, N the smaller dataset).
    #[test]
    fn mi_changes_by_at_most_delta_i_of_n((rows, extra, d) in neighbours(1, 40)) {
        let n = rows.len() as f64;
        let ia = mutual_information(&counts_of(&rows, d)).unwrap();
        let ib = mutual_information(&counts_of(&with_added(&rows, &extra), d)).unwrap();
        let bound = mi_sensitivity(n);
        for (j, (x, y)) in ia.iter().zip(&ib).enumerate() {
            prop_assert!((x - y).abs() <= bound + 1e-12,
                "feature {}: N = {}, |{} - {}| = {} > Delta_I(N) = {}", j, n, x, y, (x - y).abs(), bound);
        }
    }

    /// The selectors use Delta_I of the dataset they run on. Run on X' (N + 1 rows), its
    /// neighbour X is a removal, so the bound must also hold with Delta_I(N + 1).
    #[test]
    fn mi_changes_by_at_most_delta_i_of_the_larger_dataset((rows, extra, d) in neighbours(1, 40)) {
        let n1 = rows.len() as f64 + 1.0;
        let ia = mutual_information(&counts_of(&rows, d)).unwrap();
        let ib = mutual_information(&counts_of(&with_added(&rows, &extra), d)).unwrap();
        let bound = mi_sensitivity(n1);
        for (j, (x, y)) in ia.iter().zip(&ib).enumerate() {
            prop_assert!((x - y).abs() <= bound + 1e-12,
                "feature {}: N + 1 = {}, |{} - {}| = {} > Delta_I(N+1) = {}", j, n1, x, y, (x - y).abs(), bound);
        }
    }
}

/// Exhaustive companion of the MI properties: every two-class, one-feature dataset with
/// 1 <= N <= 40 (MI depends only on the four counts) and each of the four possible added
/// examples; the change must stay within Delta_I(N + 1) (hence within Delta_I(N)).
#[test]
fn mi_bound_holds_exhaustively_for_small_n() {
    let mut worst: (f64, String) = (0.0, String::new());
    for n in 1..=40usize {
        for n0 in 0..=n {
            let n1c = n - n0;
            for a in 0..=n0 {
                for b in 0..=n1c {
                    let x = ClassCounts {
                        class: vec![n0 as f64, n1c as f64],
                        on: Array2::from_shape_vec((2, 1), vec![a as f64, b as f64]).unwrap(),
                    };
                    let ix = mutual_information(&x).unwrap()[0];
                    for (c, bit) in [(0, 0.0), (0, 1.0), (1, 0.0), (1, 1.0)] {
                        let mut y = x.clone();
                        y.class[c] += 1.0;
                        y.on[[c, 0]] += bit;
                        let iy = mutual_information(&y).unwrap()[0];
                        let ratio = (ix - iy).abs() / mi_sensitivity(n as f64 + 1.0);
                        if ratio > worst.0 {
                            worst = (ratio, format!("N={n} counts {x:?} + class {c} x={bit}"));
                        }
                    }
                }
            }
        }
    }
    assert!(worst.0 <= 1.0 + 1e-12, "ratio {} at {}", worst.0, worst.1);
    eprintln!(
        "largest |dI| / Delta_I(N+1) = {:.4} at {}",
        worst.0, worst.1
    );
}
