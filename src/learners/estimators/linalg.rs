//! The small dense linear algebra the regression, PCA and k-means learners need (d at most a
//! few hundred): a symmetric eigensolver (cyclic Jacobi), a symmetric solve through it, and
//! Gram–Schmidt. Written out rather than pulling a LAPACK binding into the build.

use ndarray::{Array1, Array2, Axis};

/// Eigenvalues (descending) and eigenvectors (columns, same order) of the symmetric `a`, by
/// cyclic Jacobi rotations until the off-diagonal mass is below 1e-22 of the total.
pub fn symmetric_eigen(a: &Array2<f64>) -> (Array1<f64>, Array2<f64>) {
    let n = a.nrows();
    let mut m = a.clone();
    let mut v = Array2::<f64>::eye(n);
    let total: f64 = m.iter().map(|x| x * x).sum::<f64>().max(f64::MIN_POSITIVE);
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[[i, j]] * m[[i, j]])
            .sum();
        if off <= 1e-22 * total {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                rotate(&mut m, &mut v, p, q);
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| m[[j, j]].total_cmp(&m[[i, i]]));
    let values = order.iter().map(|&i| m[[i, i]]).collect();
    let vectors = v.select(Axis(1), &order);
    (values, vectors)
}

/// One Jacobi rotation zeroing m[p, q] (and m[q, p]); v accumulates the rotations.
fn rotate(m: &mut Array2<f64>, v: &mut Array2<f64>, p: usize, q: usize) {
    let apq = m[[p, q]];
    if apq.abs() < 1e-300 {
        return;
    }
    let theta = (m[[q, q]] - m[[p, p]]) / (2.0 * apq);
    let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
    let t = if theta == 0.0 { 1.0 } else { t };
    let c = 1.0 / (t * t + 1.0).sqrt();
    let s = t * c;
    let n = m.nrows();
    for k in 0..n {
        let (mkp, mkq) = (m[[k, p]], m[[k, q]]);
        m[[k, p]] = c * mkp - s * mkq;
        m[[k, q]] = s * mkp + c * mkq;
    }
    for k in 0..n {
        let (mpk, mqk) = (m[[p, k]], m[[q, k]]);
        m[[p, k]] = c * mpk - s * mqk;
        m[[q, k]] = s * mpk + c * mqk;
    }
    for k in 0..n {
        let (vkp, vkq) = (v[[k, p]], v[[k, q]]);
        v[[k, p]] = c * vkp - s * vkq;
        v[[k, q]] = s * vkp + c * vkq;
    }
}

/// The solution of `a w = b` for symmetric `a` through its eigendecomposition, dropping the
/// eigen-directions whose eigenvalue is not above `floor` (a pseudo-inverse: Zhang et al.
/// 2012's repair of a noisy objective that is not positive definite).
pub fn symmetric_solve(a: &Array2<f64>, b: &Array1<f64>, floor: f64) -> Array1<f64> {
    let (values, vectors) = symmetric_eigen(a);
    let mut w = Array1::zeros(b.len());
    for (k, &l) in values.iter().enumerate() {
        if l > floor {
            let u = vectors.column(k);
            w.scaled_add(u.dot(b) / l, &u);
        }
    }
    w
}

/// Orthonormalises the columns of `x` in place (modified Gram–Schmidt); a column that becomes
/// zero stays zero.
pub fn orthonormalise(x: &mut Array2<f64>) {
    for j in 0..x.ncols() {
        for i in 0..j {
            let proj = x.column(i).dot(&x.column(j));
            let ci = x.column(i).to_owned();
            x.column_mut(j).scaled_add(-proj, &ci);
        }
        let norm = x.column(j).dot(&x.column(j)).sqrt();
        if norm > 0.0 {
            x.column_mut(j).mapv_inplace(|v| v / norm);
        }
    }
}

/// Adds `noise()` to each upper-triangle entry of `a`, row by row (the order every
/// symmetric-matrix release draws in); the lower triangle is left as it was.
pub fn add_to_upper(a: &mut Array2<f64>, mut noise: impl FnMut() -> f64) {
    for i in 0..a.nrows() {
        for j in i..a.ncols() {
            a[[i, j]] += noise();
        }
    }
}

/// The upper triangle of `a`, row by row (what a symmetric-matrix release perturbs).
pub fn mirror_upper(a: &mut Array2<f64>) {
    for i in 0..a.nrows() {
        for j in 0..i {
            a[[i, j]] = a[[j, i]];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn jacobi_recovers_a_known_spectrum_and_solves() {
        let a = array![[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]];
        let (l, v) = symmetric_eigen(&a);
        // Eigenvalues of this matrix: 3 + sqrt(3), 3, 3 - sqrt(3).
        let s3 = 3f64.sqrt();
        for (got, want) in l.iter().zip([3.0 + s3, 3.0, 3.0 - s3]) {
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
        let back = v.dot(&Array2::from_diag(&l)).dot(&v.t());
        assert!((&back - &a).iter().all(|x| x.abs() < 1e-12));
        let b = array![1.0, 2.0, 3.0];
        let w = symmetric_solve(&a, &b, 0.0);
        assert!((a.dot(&w) - &b).iter().all(|x| x.abs() < 1e-12));
    }
}
