//! Small dense linear algebra on row-major `Vec<f64>` matrices: Cholesky solves and a cyclic
//! Jacobi eigen-solver for symmetric matrices (O(D^3) per sweep, strided: fine to D ~ 100;
//! larger D goes through [`super::eigenspace`]).

/// In-place Cholesky A = L L^T of a symmetric D x D matrix (lower triangle overwritten with L).
/// Returns false if A is not (numerically) positive definite.
pub fn cholesky(a: &mut [f64], d: usize) -> bool {
    for j in 0..d {
        let mut s = a[j * d + j];
        for k in 0..j {
            s -= a[j * d + k] * a[j * d + k];
        }
        if !(s > 0.0 && s.is_finite()) {
            return false;
        }
        let ljj = s.sqrt();
        a[j * d + j] = ljj;
        // Four rows side by side: four independent chains, each adding its terms in the
        // order of the one-row loop (the same bits, several times the throughput).
        let mut i = j + 1;
        while i + 4 <= d {
            let mut s = [
                a[i * d + j],
                a[(i + 1) * d + j],
                a[(i + 2) * d + j],
                a[(i + 3) * d + j],
            ];
            let rj = &a[j * d..j * d + j];
            let r: [&[f64]; 4] = std::array::from_fn(|q| &a[(i + q) * d..(i + q) * d + j]);
            for k in 0..j {
                for q in 0..4 {
                    s[q] -= r[q][k] * rj[k];
                }
            }
            for (q, sq) in s.into_iter().enumerate() {
                a[(i + q) * d + j] = sq / ljj;
            }
            i += 4;
        }
        for i in i..d {
            let mut s = a[i * d + j];
            let (ri, rj) = (&a[i * d..i * d + j], &a[j * d..j * d + j]);
            for k in 0..j {
                s -= ri[k] * rj[k];
            }
            a[i * d + j] = s / ljj;
        }
    }
    true
}

/// Solves L L^T x = b given the factor from [`cholesky`]; b is overwritten with x.
pub fn cholesky_solve(l: &[f64], d: usize, b: &mut [f64]) {
    for i in 0..d {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * d + k] * b[k];
        }
        b[i] = s / l[i * d + i];
    }
    for i in (0..d).rev() {
        let mut s = b[i];
        for k in i + 1..d {
            s -= l[k * d + i] * b[k];
        }
        b[i] = s / l[i * d + i];
    }
}

/// Solves A x = b for symmetric positive definite A (copied); `None` if A is not PD.
pub fn solve_spd(a: &[f64], d: usize, b: &[f64]) -> Option<Vec<f64>> {
    let mut l = a.to_vec();
    if !cholesky(&mut l, d) {
        return None;
    }
    let mut x = b.to_vec();
    cholesky_solve(&l, d, &mut x);
    Some(x)
}

/// Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations.
/// Returns (eigenvalues, eigenvectors as the columns of a row-major D x D matrix), so that
/// A = V diag(values) V^T.
pub fn symmetric_eigen(a: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut m = a.to_vec();
    let mut v = vec![0.0; d * d];
    for i in 0..d {
        v[i * d + i] = 1.0;
    }
    let norm: f64 = m.iter().map(|x| x * x).sum::<f64>().sqrt();
    for _sweep in 0..100 {
        let off: f64 = (0..d)
            .flat_map(|i| (0..d).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[i * d + j] * m[i * d + j])
            .sum::<f64>()
            .sqrt();
        if off <= 1e-15 * norm.max(f64::MIN_POSITIVE) {
            break;
        }
        for p in 0..d {
            for q in p + 1..d {
                let apq = m[p * d + q];
                if apq.abs() <= f64::MIN_POSITIVE {
                    continue;
                }
                let (app, aqq) = (m[p * d + p], m[q * d + q]);
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // A <- J^T A J on rows/columns p and q.
                for k in 0..d {
                    let (akp, akq) = (m[k * d + p], m[k * d + q]);
                    m[k * d + p] = c * akp - s * akq;
                    m[k * d + q] = s * akp + c * akq;
                }
                for k in 0..d {
                    let (apk, aqk) = (m[p * d + k], m[q * d + k]);
                    m[p * d + k] = c * apk - s * aqk;
                    m[q * d + k] = s * apk + c * aqk;
                }
                for k in 0..d {
                    let (vkp, vkq) = (v[k * d + p], v[k * d + q]);
                    v[k * d + p] = c * vkp - s * vkq;
                    v[k * d + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..d).map(|i| m[i * d + i]).collect(), v)
}

/// sum_{l_k > floor} v_k (v_k . b) / l_k over explicit eigenpairs (`vals`, eigenvectors as the
/// columns of the row-major `v`), floor = `rel_floor` max_k |l_k|, and the number of
/// eigenvalues at or below the floor: the minimiser on the positive eigenspace.
pub fn solve_on_eigenpairs(
    vals: &[f64],
    v: &[f64],
    d: usize,
    b: &[f64],
    rel_floor: f64,
) -> (Vec<f64>, usize) {
    let top = vals.iter().fold(0.0f64, |x, &y| x.max(y.abs()));
    let mut x = vec![0.0; d];
    let mut trimmed = 0;
    for (k, &lk) in vals.iter().enumerate() {
        if lk <= rel_floor * top {
            trimmed += 1;
            continue;
        }
        let proj: f64 = (0..d).map(|i| v[i * d + k] * b[i]).sum();
        for i in 0..d {
            x[i] += v[i * d + k] * proj / lk;
        }
    }
    (x, trimmed)
}

/// A d x d symmetric matrix (row-major) with entries uniform in [-1, 1], for tests.
#[cfg(test)]
pub(crate) fn random_symmetric(d: usize, rng: &mut crate::rng::Rng) -> Vec<f64> {
    use rand::Rng as _;
    let mut a = vec![0.0; d * d];
    for i in 0..d {
        for j in i..d {
            let x: f64 = rng.r#gen::<f64>() * 2.0 - 1.0;
            a[i * d + j] = x;
            a[j * d + i] = x;
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use rand::Rng as _;

    /// The four-rows-at-once factorisation rounds exactly as the textbook one-row loop
    /// (entries spanning twelve orders of magnitude, so another summation order would show),
    /// at sizes with and without a remainder of rows.
    #[test]
    fn cholesky_rounds_as_the_one_row_loop() {
        let mut rng = rng_from(&["cholesky-bits"]);
        for d in [1usize, 4, 5, 11, 30] {
            let b: Vec<f64> = (0..d * d)
                .map(|_| (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6)))
                .collect();
            let mut a = vec![0.0; d * d];
            for i in 0..d {
                for j in 0..d {
                    a[i * d + j] = (0..d).map(|k| b[i * d + k] * b[j * d + k]).sum::<f64>();
                }
                a[i * d + i] += 1e-3;
            }
            let mut want = a.clone();
            for j in 0..d {
                let mut s = want[j * d + j];
                for k in 0..j {
                    s -= want[j * d + k] * want[j * d + k];
                }
                let ljj = s.sqrt();
                want[j * d + j] = ljj;
                for i in j + 1..d {
                    let mut s = want[i * d + j];
                    for k in 0..j {
                        s -= want[i * d + k] * want[j * d + k];
                    }
                    want[i * d + j] = s / ljj;
                }
            }
            assert!(cholesky(&mut a, d), "d = {d}");
            for i in 0..d {
                for j in 0..=i {
                    let (x, y) = (a[i * d + j], want[i * d + j]);
                    assert_eq!(x.to_bits(), y.to_bits(), "d = {d}, ({i}, {j}): {x} vs {y}");
                }
            }
        }
    }

    #[test]
    fn jacobi_reconstructs_a_random_symmetric_matrix() {
        let mut rng = rng_from(&["jacobi"]);
        for d in [1usize, 2, 7, 30, 31, 120] {
            let a = random_symmetric(d, &mut rng);
            let (vals, v) = symmetric_eigen(&a, d);
            for i in 0..d {
                for j in 0..d {
                    let r: f64 = (0..d).map(|k| v[i * d + k] * vals[k] * v[j * d + k]).sum();
                    assert!((r - a[i * d + j]).abs() < 1e-10, "d = {d}");
                    let o: f64 = (0..d).map(|k| v[k * d + i] * v[k * d + j]).sum();
                    let e = if i == j { 1.0 } else { 0.0 };
                    assert!((o - e).abs() < 1e-10);
                }
            }
        }
    }

    #[test]
    fn cholesky_solves_and_detects_indefinite() {
        let a = [4.0, 1.0, 1.0, 3.0];
        let x = solve_spd(&a, 2, &[1.0, 2.0]).unwrap();
        assert!((4.0 * x[0] + x[1] - 1.0).abs() < 1e-14);
        assert!((x[0] + 3.0 * x[1] - 2.0).abs() < 1e-14);
        assert!(solve_spd(&[1.0, 2.0, 2.0, 1.0], 2, &[1.0, 1.0]).is_none());
    }
}
