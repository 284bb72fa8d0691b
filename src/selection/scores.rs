//! Feature scores (SPEC 4): mutual information in bits and the two-class count score.

use crate::counts::ClassCounts;
use crate::error::{Error, Result};
use crate::privacy::Relation;
use ndarray::Array2;

/// Mutual information I_d (bits) between each feature and the class, SPEC 4:
/// `p(c) = N_c / N`, `p(x=1|c) = (N1[c,d] + 1)/(N_c + 2)`, `p(x=1) = sum_c p(c) p(x=1|c)`.
/// Needs at least two classes and N > 0.
pub fn mutual_information(counts: &ClassCounts) -> Result<Vec<f64>> {
    check_counts(counts)?;
    let n = counts.total();
    let prior: Vec<f64> = counts.class.iter().map(|&nc| nc / n).collect();
    let mut theta = counts.on.clone();
    for (c, mut row) in theta.rows_mut().into_iter().enumerate() {
        let denom = counts.class[c] + 2.0;
        row.mapv_inplace(|n1| (n1 + 1.0) / denom);
    }
    Ok(mi_from_parameters(&theta, &prior))
}

/// Mutual information (bits) of each feature under a Bernoulli NB with class probabilities
/// `prior` (normalised here) and theta[c, d] = p(x_d = 1 | c). Used by Algorithm 2 on the
/// noisy parameters of Algorithm 1; with the add-one parameters it equals [`mutual_information`].
pub fn mi_from_parameters(theta: &Array2<f64>, prior: &[f64]) -> Vec<f64> {
    let z: f64 = prior.iter().sum();
    let (k, d) = theta.dim();
    let mut out = vec![0.0; d];
    for (j, o) in out.iter_mut().enumerate() {
        let p1: f64 = (0..k).map(|c| prior[c] / z * theta[[c, j]]).sum();
        let p0 = 1.0 - p1;
        let mut i = 0.0;
        for c in 0..k {
            let pc = prior[c] / z;
            let t = theta[[c, j]];
            i += pc * (xlog2(t, p1) + xlog2(1.0 - t, p0));
        }
        *o = i.max(0.0);
    }
    out
}

/// p log2(p / q) with 0 log 0 = 0.
#[inline]
fn xlog2(p: f64, q: f64) -> f64 {
    if p > 0.0 { p * (p / q).log2() } else { 0.0 }
}

/// Binary entropy in bits, h(w) = -w log2 w - (1 - w) log2(1 - w), with h(0) = h(1) = 0.
fn binary_entropy_bits(w: f64) -> f64 {
    -xlog2(w, 1.0) - xlog2(1.0 - w, 1.0)
}

/// The thesis's MI sensitivity (Table 3.2, Figure 3.9): Delta_I(N) = (1/N) log2 N +
/// ((N-1)/N) log2(N/(N-1)) = h(1/N), 1 bit for N < 2. Derived for *plain* MI; the add-one smoothed
/// score of SPEC 4 needs [`mi_sensitivity`], which every mechanism uses. Kept for Figure 3.9.
pub fn thesis_mi_sensitivity(n: f64) -> f64 {
    if n.is_nan() || n < 2.0 {
        return 1.0;
    }
    binary_entropy_bits(1.0 / n)
}

/// Proven sensitivity of the add-one smoothed MI score ([`mutual_information`]) of one binary
/// feature, for a run on N examples (N public, K >= 2 classes fixed by the schema):
///
/// * add/remove: Delta(N) = h(1/N) + 1/N bits (the thesis's Delta_I(N) plus 1/N);
/// * replace-one: 2 Delta(N + 1);
///
/// both capped at 1 bit (the score of a binary feature lies in [0, 1]).
///
/// **Lemma.** If X' is X (N examples) plus one example, w = 1/(N + 1), then
/// |I(X') - I(X)| <= h(w) + w I(X) <= h(w) + w.
///
/// *Proof.* The score is the mutual information I_P(C; X) of the joint law
/// P(c, x) = pi_c theta_c(x) with pi_c = N_c/N and theta_c(1) = (N1(c) + 1)/(N_c + 2).
/// Let the added example have class k and bit b, m = N_k, a = N1(k). Then
/// 1. P' = (1 - w) P + w Q exactly, where Q(c, x) = [c = k] q(x) and
///    q(1) = (m + 1) theta'_k(1) - m theta_k(1) = (2(a + 1) + b (m + 1)(m + 2)) / ((m + 2)(m + 3)),
///    which lies in (0, 1) because a <= m: for classes c != k, pi'_c = (1 - w) pi_c and theta_c is
///    unchanged; for k, pi'_k theta'_k(x) = (m theta_k(x) + q(x)) / (N + 1) for x = 1 (and so for
///    x = 0, both sides summing to (m + 1)/(N + 1)). (The smoothed model updates like an empirical
///    law that received one "soft" example of class k.)
/// 2. Let Z ~ Bernoulli(w) pick Q (Z = 1) or P (Z = 0), so (C, X) ~ P'. The chain rule written
///    two ways, I(C; X, Z) = I(C; Z) + I(C; X | Z) = I(C; X) + I(C; Z | X), gives
///    I_P'(C; X) = I(C; X | Z) + I(C; Z) - I(C; Z | X), with
///    I(C; X | Z) = (1 - w) I_P + w I_Q = (1 - w) I_P (C is constant under Q), and
///    0 <= I(C; Z), I(C; Z | X) <= H(Z) = h(w).
/// 3. Hence -h(w) - w I_P <= I_P' - I_P <= h(w) - w I_P, and I_P <= H(X) <= 1 bit. QED.
///
/// Add/remove on a run of N examples: the neighbour has N + 1 (w = 1/(N + 1)) or N - 1
/// (w = 1/N) examples; h(w) + w increases on (0, 1/2] (derivative log2((1 - w)/w) + 1 > 0 for
/// w < 2/3), so the larger w = 1/N is the worst case. Replace-one (N to N): both datasets are
/// one removal from their union of N + 1 examples, so the triangle inequality gives
/// 2 (h(1/(N + 1)) + 1/(N + 1)).
///
/// The bound is within 1.1x of the thesis's value at the sizes used (N = 900 ... 32,561);
/// tests/sensitivity_properties.rs searches neighbouring datasets (exhaustively for small N,
/// class balance and counts near 0 and N at the dataset sizes) and asserts it.
pub fn mi_sensitivity(n: f64, relation: Relation) -> f64 {
    let bound = |m: f64| {
        if m.is_nan() || m < 2.0 {
            1.0
        } else {
            (binary_entropy_bits(1.0 / m) + 1.0 / m).min(1.0)
        }
    };
    match relation {
        Relation::AddRemove => bound(n),
        Relation::ReplaceOne => (2.0 * bound(n + 1.0)).min(1.0),
    }
}

/// Count score of eq. 3.22 (two classes only): `q_d = max(|N1[1,d] - N1[0,d]|, |N0[1,d] - N0[0,d]|)`.
/// Sensitivity 1 ([`COUNT_SENSITIVITY`]).
pub fn count_scores(counts: &ClassCounts) -> Result<Vec<f64>> {
    check_counts(counts)?;
    if counts.n_classes() != 2 {
        return Err(Error::param(
            "score",
            format!(
                "the count score needs exactly two classes, got {}",
                counts.n_classes()
            ),
        ));
    }
    Ok((0..counts.n_features())
        .map(|d| {
            let on = (counts.on[[1, d]] - counts.on[[0, d]]).abs();
            let off = (counts.off(1, d) - counts.off(0, d)).abs();
            on.max(off)
        })
        .collect())
}

/// Sensitivity of one count score under add/remove: adding or removing an example changes one of
/// `N1[c,d]`, `N0[c,d]` by 1, so each of the two differences, and their max, moves by at most 1.
pub const COUNT_SENSITIVITY: f64 = 1.0;

/// Sensitivity of one count score under `relation`: 1 for add/remove; 2 for replace-one
/// (remove then add; attained when an example with x_d = 1 moves from class 1 to class 0,
/// which moves `N1[1,d] - N1[0,d]` by 2).
pub fn count_sensitivity(relation: Relation) -> f64 {
    relation.doubled_for_replace(COUNT_SENSITIVITY)
}

fn check_counts(counts: &ClassCounts) -> Result<()> {
    if counts.n_classes() < 2 {
        return Err(Error::param(
            "counts",
            format!(
                "feature scores need >= 2 classes, got {}",
                counts.n_classes()
            ),
        ));
    }
    if counts.on.nrows() != counts.n_classes() {
        return Err(Error::param("counts", "on-count rows != number of classes"));
    }
    let n = counts.total();
    if n.is_nan() || n <= 0.0 {
        return Err(Error::param("counts", "no examples"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn mi_by_hand() {
        // One feature, perfectly split classes of 2 each: theta = (3/4, 1/4), p1 = 1/2.
        let counts = ClassCounts {
            class: vec![2.0, 2.0],
            on: array![[2.0, 1.0], [0.0, 1.0]],
        };
        let mi = mutual_information(&counts).unwrap();
        let expect = 0.75 * (1.5f64).log2() + 0.25 * (0.5f64).log2();
        assert!((mi[0] - expect).abs() < 1e-12, "{}", mi[0]);
        assert!(mi[1].abs() < 1e-12);
        // Many classes are fine.
        let three = ClassCounts {
            class: vec![2.0, 2.0, 3.0],
            on: array![[2.0], [0.0], [1.0]],
        };
        assert!(mutual_information(&three).unwrap()[0] > 0.0);
        assert!(count_scores(&three).is_err());
        let one = ClassCounts {
            class: vec![2.0],
            on: array![[1.0]],
        };
        assert!(mutual_information(&one).is_err());
    }

    #[test]
    fn count_score_by_hand() {
        let counts = ClassCounts {
            class: vec![10.0, 4.0],
            on: array![[3.0, 9.0], [4.0, 0.0]],
        };
        // d0: |4-3| = 1, |0-7| = 7; d1: |0-9| = 9, |4-1| = 3.
        assert_eq!(count_scores(&counts).unwrap(), vec![7.0, 9.0]);
    }

    #[test]
    fn mi_sensitivity_values() {
        let ar = Relation::AddRemove;
        // Thesis: N = 2: 1/2 + 1/2 log2 2 = 1.
        assert!((thesis_mi_sensitivity(2.0) - 1.0).abs() < 1e-15);
        assert_eq!(thesis_mi_sensitivity(1.0), 1.0);
        // Proven bound = thesis + 1/N, capped at 1 bit.
        for n in [3.0, 900.0, 32_561.0] {
            let want = (thesis_mi_sensitivity(n) + 1.0 / n).min(1.0);
            assert!((mi_sensitivity(n, ar) - want).abs() < 1e-15, "{n}");
        }
        assert!(mi_sensitivity(900.0, ar) < 0.02);
        assert!(mi_sensitivity(900.0, ar) < 1.1 * thesis_mi_sensitivity(900.0));
        assert!(mi_sensitivity(900.0, ar) > mi_sensitivity(9000.0, ar));
        assert_eq!(mi_sensitivity(2.0, ar), 1.0);
        assert_eq!(mi_sensitivity(f64::NAN, ar), 1.0);
        let rep = mi_sensitivity(900.0, Relation::ReplaceOne);
        assert!((rep - 2.0 * mi_sensitivity(901.0, ar)).abs() < 1e-15);
        assert_eq!(count_sensitivity(ar), 1.0);
        assert_eq!(count_sensitivity(Relation::ReplaceOne), 2.0);
    }
}
