//! Random Fourier features (Rahimi & Recht 2007) for the private kernel SVM `svm_rff`
//! (Chaudhuri, Monteleoni & Sarwate 2011, section 6: a private linear learner on the features
//! of a data-independent map approximates a private RBF-kernel learner).
//!
//! The map: each feature is min-max scaled by its public bounds, u = (x - lo) / (hi - lo) (a
//! constant column to 0), then z(u) = sqrt(1/D) (cos(w_1.u + b_1), ..., cos(w_D.u + b_D)) with
//! w_j ~ N(0, 2 gamma I) and b_j ~ U(0, 2 pi), so that E z(u).z(v) = exp(-gamma ||u - v||^2) / 2.
//! The weights are scikit-learn's `RBFSampler` convention; its features are sqrt(2/D) cos(...),
//! ours that divided by sqrt(2), so that ||z(u)||^2 = (1/D) sum_j cos^2 <= 1: the rows are in the
//! unit ball the linear-ERM sensitivity proofs assume.
//!
//! Privacy: the map reads a row and public values only (bounds, gamma, D, a public seed), so it
//! is a per-example transformation: neighbouring datasets map to neighbouring datasets under
//! the same relation, and a mechanism that is eps-DP on the features is eps-DP on the rows.

use crate::learners::gaussian_nb::ColumnBounds;
use crate::rng::Rng;
use ndarray::{Array2, ArrayView2};
use rand::Rng as _;
use rand_distr::{Distribution, StandardNormal};

/// A drawn map: `w` is d x D (input columns x components), `b` the D phases, `bounds` the
/// public bounds of the d input columns.
#[derive(Debug, Clone, PartialEq)]
pub struct RffMap {
    pub w: Array2<f64>,
    pub b: Vec<f64>,
    pub bounds: ColumnBounds,
}

impl RffMap {
    /// Draws `components` features for inputs with public bounds `lo`/`hi` from `rng` (public
    /// randomness: the caller seeds it from public values only).
    pub fn draw(lo: &[f64], hi: &[f64], components: usize, gamma: f64, rng: &mut Rng) -> Self {
        let scale = (2.0 * gamma).sqrt();
        let w = Array2::from_shape_fn((lo.len(), components), |_| {
            let z: f64 = StandardNormal.sample(rng);
            scale * z
        });
        let b = (0..components)
            .map(|_| rng.r#gen::<f64>() * std::f64::consts::TAU)
            .collect();
        let bounds = ColumnBounds {
            lo: lo.to_vec(),
            hi: hi.to_vec(),
        };
        RffMap { w, b, bounds }
    }

    /// The scaled inputs u of one row (its values at the map's columns).
    pub fn scaled(&self, x: impl Fn(usize) -> f64) -> Vec<f64> {
        (0..self.bounds.lo.len())
            .map(|j| self.bounds.unit(j, x(j)))
            .collect()
    }

    /// The features z of `rows` of `x` restricted to `cols` (one row of z per row).
    pub fn features(&self, x: ArrayView2<f64>, rows: &[u32], cols: &[usize]) -> Array2<f64> {
        let d = self.b.len();
        let norm = (1.0 / d as f64).sqrt();
        let mut z = Array2::zeros((rows.len(), d));
        for (i, &r) in rows.iter().enumerate() {
            let u = self.scaled(|j| x[[r as usize, cols[j]]]);
            for (k, out) in z.row_mut(i).iter_mut().enumerate() {
                let dot: f64 = u.iter().zip(self.w.column(k)).map(|(a, w)| a * w).sum();
                *out = norm * (dot + self.b[k]).cos();
            }
        }
        z
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use ndarray::array;

    /// Every feature row is in the unit ball, and z(u).z(v) approximates exp(-gamma
    /// ||u - v||^2) / 2 (D = 20,000: the average of D bounded terms, s.d. below 0.005; checked
    /// at 0.02).
    #[test]
    fn features_are_unit_bounded_and_approximate_the_rbf_kernel() {
        let x = array![[0.0, 10.0], [0.5, 20.0], [1.0, 15.0]];
        let (lo, hi) = ([0.0, 10.0], [1.0, 20.0]);
        let gamma = 1.5;
        let map = RffMap::draw(&lo, &hi, 20_000, gamma, &mut rng_from(&["rff-test"]));
        let z = map.features(x.view(), &[0, 1, 2], &[0, 1]);
        for row in z.rows() {
            assert!(row.dot(&row) <= 1.0 + 1e-12);
        }
        let u: [[f64; 2]; 3] = [[0.0, 0.0], [0.5, 1.0], [1.0, 0.5]];
        for (a, b) in [(0, 1), (0, 2), (1, 2)] {
            let d2: f64 = (0..2).map(|j| (u[a][j] - u[b][j]).powi(2)).sum();
            let kernel = (-gamma * d2).exp() / 2.0;
            let approx = z.row(a).dot(&z.row(b));
            assert!(
                (approx - kernel).abs() < 0.02,
                "{a},{b}: {approx} vs {kernel}"
            );
        }
    }
}
