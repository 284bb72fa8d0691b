//! Feature scores (SPEC 4): mutual information in bits and the two-class count score.

use crate::counts::ClassCounts;
use crate::error::{Error, Result};
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

/// Sensitivity of the MI score of a binary feature for add/remove neighbours (Table 3.2):
/// Delta_I(N) = (1/N) log2 N + ((N-1)/N) log2(N/(N-1)). For N < 2 it returns 1 bit (an upper
/// bound on the MI of a binary feature). N is treated as public.
pub fn mi_sensitivity(n: f64) -> f64 {
    if n.is_nan() || n < 2.0 {
        return 1.0;
    }
    n.log2() / n + (n - 1.0) / n * (n / (n - 1.0)).log2()
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

/// L1 sensitivity of one count score: adding an example changes one of `N1[c,d]`, `N0[c,d]` by 1.
pub const COUNT_SENSITIVITY: f64 = 1.0;

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
        // N = 2: 1/2 + 1/2 log2 2 = 1.
        assert!((mi_sensitivity(2.0) - 1.0).abs() < 1e-15);
        assert!(mi_sensitivity(900.0) < 0.02);
        assert!(mi_sensitivity(900.0) > mi_sensitivity(9000.0));
        assert_eq!(mi_sensitivity(1.0), 1.0);
        assert_eq!(mi_sensitivity(f64::NAN), 1.0);
    }
}
