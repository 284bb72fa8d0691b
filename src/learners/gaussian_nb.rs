//! Gaussian Naive Bayes on real-valued features: `gnb` (scikit-learn's `GaussianNB`, the
//! non-private reference) and `private_gnb` (Vaidya et al. 2013's Gaussian model as diffprivlib
//! 0.6.6 ships it, without reading the private class sizes).
//!
//! The model: class c has prior pi_c and, per feature j, a normal N(theta_cj, var_cj); a row x
//! is assigned argmax_c ln pi_c - 1/2 sum_j [ln(2 pi var_cj) + (x_j - theta_cj)^2 / var_cj]
//! (scikit-learn's joint log-likelihood; ties go to the lowest class index, as `np.argmax`).
//!
//! # `private_gnb`: relation, sensitivity, proof
//!
//! Rows are clipped to the dataset's public bounds [lo_j, hi_j] at load and mapped to
//! u_j = (x_j - lo_j) / (hi_j - lo_j) in [0, 1]: a per-example map with public constants. Three
//! releases, each pure (eps/3)-DP, so the fit is eps-DP by sequential composition (the second
//! and third read earlier releases, which is adaptive composition, still additive):
//!
//! 1. Class counts n_c + Lap(r / (eps/3)), the vector over classes. Adding or removing one
//!    example changes one count by 1 (L1 sensitivity 1); replacing one may move it between two
//!    classes (2). r = 1 under add/remove, 2 under replace-one.
//! 2. Class sums S_cj = sum of u_j over class c, the C x D vector + Lap(r D / (eps/3)). One
//!    example adds at most 1 to each of the D sums of its class: L1 sensitivity D (2D if a
//!    replacement moves it between classes). This equals diffprivlib's per-feature split
//!    (eps/3/D each, sensitivity lo..hi's width) after the public rescaling.
//!    Released mean: mu_cj = clamp(S~_cj / n~_c, 0, 1) (post-processing).
//! 3. Scaled squared deviations Q_cj = sum over class c of (u_j - mu_cj)^2 / s_cj^2 with the
//!    released mu and s_cj = max(mu_cj, 1 - mu_cj) (diffprivlib's local bound), + Lap(r D /
//!    (eps/3)). Each term lies in [0, 1]: L1 sensitivity D (2D under replace-one).
//!    Released variance: clamp(Q~_cj s_cj^2 / n~_c, 0, s_cj^2) (post-processing).
//!
//! No noise scale reads the private number of rows: diffprivlib divides by noisy counts too, but
//! also forces them to sum to the exact training size (its `_noisy_class_counts`), which under
//! add/remove is private; here the noisy counts are only floored at 1. The variance floor
//! `var_smoothing` is a public constant in rescaled units: var_smoothing (hi_j - lo_j)^2 is added
//! to feature j's variance (diffprivlib adds var_smoothing itself, in raw units; scikit-learn a
//! multiple of the data's largest variance, which reads the data). With the default 1e-9 a
//! noisy variance clamped at 0 leaves a near-zero variance, as in diffprivlib.

use super::{Accounted, Classifier};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::privacy::{Laplace, Ledger};
use crate::rng::Rng;
use ndarray::{Array2, ArrayView2};

/// A fitted Gaussian Naive Bayes model over the columns `cols` of the dataset it was fitted on.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianNb {
    /// Class-conditional means, classes x features (raw units).
    pub theta: Array2<f64>,
    /// Class-conditional variances (raw units, smoothing included).
    pub var: Array2<f64>,
    /// ln pi_c; -inf for a class with no weight.
    pub log_prior: Vec<f64>,
    /// Dataset columns the features are (all columns when fitted without a selection).
    pub cols: Vec<usize>,
}

impl GaussianNb {
    /// The class of one row (its values at `cols`, in order).
    pub fn predict_values(&self, x: impl Fn(usize) -> f64) -> u16 {
        let mut best = (f64::NEG_INFINITY, 0u16);
        for (c, &lp) in self.log_prior.iter().enumerate() {
            if lp == f64::NEG_INFINITY {
                continue;
            }
            let mut jll = lp;
            let (theta, var) = (self.theta.row(c), self.var.row(c));
            for j in 0..self.cols.len() {
                let d = x(j) - theta[j];
                jll -= 0.5 * ((2.0 * std::f64::consts::PI * var[j]).ln() + d * d / var[j]);
            }
            if jll > best.0 || (c == 0 && best.0 == f64::NEG_INFINITY) {
                best = (jll, c as u16);
            }
        }
        best.1
    }
}

impl Classifier for GaussianNb {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        let x = dense(data)?;
        Ok(rows
            .iter()
            .map(|&r| {
                let row = x.row(r as usize);
                self.predict_values(|j| row[self.cols[j]])
            })
            .collect())
    }
}

/// linfa's predict: one class index per record row (all columns).
impl<D: ndarray::Data<Elem = f64>>
    linfa::traits::PredictInplace<ndarray::ArrayBase<D, ndarray::Ix2>, ndarray::Array1<usize>>
    for GaussianNb
{
    fn predict_inplace(
        &self,
        x: &ndarray::ArrayBase<D, ndarray::Ix2>,
        y: &mut ndarray::Array1<usize>,
    ) {
        for (row, out) in x.rows().into_iter().zip(y.iter_mut()) {
            *out = usize::from(self.predict_values(|j| row[self.cols[j]]));
        }
    }

    fn default_target(&self, x: &ndarray::ArrayBase<D, ndarray::Ix2>) -> ndarray::Array1<usize> {
        ndarray::Array1::zeros(x.nrows())
    }
}

/// The dense features of a real-valued dataset, or an error naming it.
pub(crate) fn dense(data: &Dataset) -> Result<ArrayView2<'_, f64>> {
    match &data.features {
        crate::data::Features::Dense(x) => Ok(x.view()),
        crate::data::Features::Binary(_) => Err(Error::Data {
            dataset: data.name.clone(),
            reason: "Gaussian NB, trees and RFF learners read real-valued features; declare the \
                     dataset's public `bounds`"
                .into(),
        }),
    }
}

/// The training rows a fit reads: the records, which rows, their class indices and columns.
#[derive(Clone, Copy)]
pub struct TrainRows<'a> {
    pub x: ArrayView2<'a, f64>,
    pub rows: &'a [u32],
    /// Class index of every record (indexed by row number).
    pub labels: &'a [u16],
    pub n_classes: usize,
    pub cols: &'a [usize],
}

#[cfg(test)]
impl<'a> TrainRows<'a> {
    /// Two columns, two classes: the shape of the tree and NB unit tests' toy sets.
    pub(crate) fn two_columns(x: ArrayView2<'a, f64>, rows: &'a [u32], labels: &'a [u16]) -> Self {
        TrainRows {
            x,
            rows,
            labels,
            n_classes: 2,
            cols: &[0, 1],
        }
    }
}

impl TrainRows<'_> {
    pub(crate) fn value(&self, r: u32, j: usize) -> f64 {
        self.x[[r as usize, self.cols[j]]]
    }

    pub(crate) fn check(&self) -> Result<()> {
        super::check_feature_indices(self.cols, self.x.ncols())
    }
}

/// Validated parameters of the non-private Gaussian NB.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianNbValidParams {
    var_smoothing: f64,
}

/// Parameters of the non-private Gaussian NB (scikit-learn's defaults: `var_smoothing` 1e-9,
/// a fraction of the largest feature variance added to every variance).
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianNbParams(GaussianNbValidParams);

impl Default for GaussianNbParams {
    fn default() -> Self {
        GaussianNbParams(GaussianNbValidParams {
            var_smoothing: 1e-9,
        })
    }
}

setters!(GaussianNbParams {
    /// The fraction of the largest feature variance added to every variance.
    var_smoothing: f64,
});

param_guard!(GaussianNbParams => GaussianNbValidParams, |p| {
    check_smoothing(p.var_smoothing)
});

fn check_smoothing(v: f64) -> Result<()> {
    super::check_non_negative("var_smoothing", v)
}

impl GaussianNbValidParams {
    /// scikit-learn's fit: priors n_c / n, per-class means and population variances, plus
    /// `var_smoothing` times the largest variance of a feature over all training rows.
    pub fn fit_rows(&self, t: &TrainRows) -> Result<GaussianNb> {
        t.check()?;
        let (k, d) = (t.n_classes, t.cols.len());
        let mut n = vec![0.0; k];
        let mut theta = Array2::zeros((k, d));
        for &r in t.rows {
            let c = usize::from(t.labels[r as usize]);
            n[c] += 1.0;
            for j in 0..d {
                theta[[c, j]] += t.value(r, j);
            }
        }
        for (mut row, &nc) in theta.rows_mut().into_iter().zip(&n) {
            row.mapv_inplace(|s| s / nc);
        }
        let mut var = Array2::zeros((k, d));
        for &r in t.rows {
            let c = usize::from(t.labels[r as usize]);
            for j in 0..d {
                let dv = t.value(r, j) - theta[[c, j]];
                var[[c, j]] += dv * dv;
            }
        }
        for (mut row, &nc) in var.rows_mut().into_iter().zip(&n) {
            row.mapv_inplace(|s| s / nc);
        }
        let floor = self.var_smoothing * largest_variance(t);
        var.mapv_inplace(|v| v + floor);
        let total: f64 = n.iter().sum();
        Ok(GaussianNb {
            theta,
            var,
            log_prior: n.iter().map(|&nc| (nc / total).ln()).collect(),
            cols: t.cols.to_vec(),
        })
    }
}

/// The largest population variance of one feature over all training rows (two passes).
fn largest_variance(t: &TrainRows) -> f64 {
    let n = t.rows.len() as f64;
    (0..t.cols.len())
        .map(|j| {
            let mean = t.rows.iter().map(|&r| t.value(r, j)).sum::<f64>() / n;
            t.rows
                .iter()
                .map(|&r| (t.value(r, j) - mean).powi(2))
                .sum::<f64>()
                / n
        })
        .fold(0.0, f64::max)
}

private_params! {
    /// Validated parameters of the private Gaussian NB.
    PrivateGnbValidParams;
    /// Parameters of the private Gaussian NB (eps-DP; `var_smoothing` 1e-9, as diffprivlib's
    /// default, but in rescaled units: times the squared public width of each feature).
    PrivateGnbParams {
        /// A public constant added to every released variance in rescaled units (so
        /// var_smoothing (hi_j - lo_j)^2 in raw units).
        var_smoothing: f64 = 1e-9,
    }
    |p| { check_smoothing(p.var_smoothing) }
}

/// Public per-feature bounds of the columns a private fit reads.
pub struct Bounds<'a> {
    pub lo: &'a [f64],
    pub hi: &'a [f64],
}

impl Bounds<'_> {
    /// The bounds of the columns `cols`, in that order, for a model to keep.
    pub fn columns(&self, cols: &[usize]) -> ColumnBounds {
        ColumnBounds {
            lo: cols.iter().map(|&c| self.lo[c]).collect(),
            hi: cols.iter().map(|&c| self.hi[c]).collect(),
        }
    }
}

/// The public bounds of the columns a fitted model reads (column j of the model, not of the
/// dataset), with the scaling into them that the random Fourier map and the ID3 bins share.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnBounds {
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
}

impl ColumnBounds {
    /// Where `v` lies in column `j`'s range, (v - lo) / (hi - lo) clamped into [0, 1]; 0 for a
    /// constant column (hi <= lo).
    pub fn unit(&self, j: usize, v: f64) -> f64 {
        let width = self.hi[j] - self.lo[j];
        if width > 0.0 {
            ((v - self.lo[j]) / width).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

impl Bounds<'static> {
    /// The unit square: the public bounds of two-column toy sets (the unit tests', the
    /// audit's).
    pub(crate) const UNIT_SQUARE: Self = Bounds {
        lo: &[0.0, 0.0],
        hi: &[1.0, 1.0],
    };
}

/// The three releases of a private fit, in the rescaled units u in [0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct Released {
    /// n~_c, floored at 1.
    pub counts: Vec<f64>,
    pub mean: Array2<f64>,
    pub var: Array2<f64>,
}

/// The releases as proven, or one of the audit's planted mutants of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Planted {
    /// The ε-DP fit.
    None,
    /// The class counts released exact.
    ExactCounts,
    /// The class sums calibrated for sensitivity 1 instead of D.
    SumsAtUnitSensitivity,
}

impl PrivateGnbValidParams {
    /// The eps-DP fit (module docs): three Laplace releases charged to `ledger` as step
    /// `train`, each at eps/3, then the model in raw units.
    pub fn fit_rows(
        &self,
        t: &TrainRows,
        bounds: &Bounds,
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<GaussianNb> {
        let released = self.release(t, bounds, rng, ledger, Planted::None)?;
        Ok(self.model(&released, t.cols, bounds))
    }

    /// The three releases (module docs, steps 1 to 3).
    pub(crate) fn release(
        &self,
        t: &TrainRows,
        bounds: &Bounds,
        rng: &mut Rng,
        ledger: &mut Ledger,
        planted: Planted,
    ) -> Result<Released> {
        t.check()?;
        let (k, d) = (t.n_classes, t.cols.len());
        let third = self.epsilon / 3.0;
        let relation = ledger.relation();
        let unit = |r: u32, j: usize| {
            let (lo, hi) = (bounds.lo[t.cols[j]], bounds.hi[t.cols[j]]);
            ((t.value(r, j) - lo) / (hi - lo)).clamp(0.0, 1.0)
        };
        // 1. Class counts.
        let mut counts = vec![0.0; k];
        for &r in t.rows {
            counts[usize::from(t.labels[r as usize])] += 1.0;
        }
        if planted != Planted::ExactCounts {
            let lap = Laplace::new(relation.doubled_for_replace(1.0), third, relation)?;
            let mut charge = ledger.charge("train", "laplace (Gaussian NB class counts)", lap)?;
            for c in counts.iter_mut() {
                *c += charge.sample(rng);
            }
        }
        counts.iter_mut().for_each(|c| *c = c.max(1.0));
        // 2. Class sums of the rescaled features.
        let mut mean: Array2<f64> = Array2::zeros((k, d));
        for &r in t.rows {
            let c = usize::from(t.labels[r as usize]);
            for j in 0..d {
                mean[[c, j]] += unit(r, j);
            }
        }
        let sens = relation.doubled_for_replace(d as f64);
        let sums_sens = match planted {
            Planted::SumsAtUnitSensitivity => relation.doubled_for_replace(1.0),
            _ => sens,
        };
        let lap = Laplace::new(sums_sens, third, relation)?;
        let mut charge = ledger.charge("train", "laplace (Gaussian NB class sums)", lap)?;
        for ((c, _), s) in mean.indexed_iter_mut() {
            let noisy: f64 = *s + charge.sample(rng);
            *s = (noisy / counts[c]).clamp(0.0, 1.0);
        }
        // 3. Squared deviations from the released means, scaled into [0, 1].
        let scale = mean.mapv(|m: f64| m.max(1.0 - m).powi(2));
        let mut var: Array2<f64> = Array2::zeros((k, d));
        for &r in t.rows {
            let c = usize::from(t.labels[r as usize]);
            for j in 0..d {
                var[[c, j]] += (unit(r, j) - mean[[c, j]]).powi(2) / scale[[c, j]];
            }
        }
        let lap = Laplace::new(sens, third, relation)?;
        let mut charge = ledger.charge("train", "laplace (Gaussian NB squared deviations)", lap)?;
        for ((c, j), q) in var.indexed_iter_mut() {
            let s2 = scale[[c, j]];
            *q = ((*q + charge.sample(rng)) * s2 / counts[c]).clamp(0.0, s2);
        }
        Ok(Released { counts, mean, var })
    }

    /// The model in raw units from the releases (post-processing).
    fn model(&self, r: &Released, cols: &[usize], bounds: &Bounds) -> GaussianNb {
        let width = |j: usize| bounds.hi[cols[j]] - bounds.lo[cols[j]];
        let theta = Array2::from_shape_fn(r.mean.raw_dim(), |(c, j)| {
            bounds.lo[cols[j]] + r.mean[[c, j]] * width(j)
        });
        let var = Array2::from_shape_fn(r.var.raw_dim(), |(c, j)| {
            (r.var[[c, j]] + self.var_smoothing) * width(j).powi(2)
        });
        let total: f64 = r.counts.iter().sum();
        GaussianNb {
            theta,
            var,
            log_prior: r.counts.iter().map(|&n| (n / total).ln()).collect(),
            cols: cols.to_vec(),
        }
    }
}

linfa_fit!(GaussianNbValidParams => GaussianNb, |p, ds| {
    let (x, labels, k) = linfa_rows(ds)?;
    let rows: Vec<u32> = (0..x.nrows() as u32).collect();
    let cols: Vec<usize> = (0..x.ncols()).collect();
    p.fit_rows(&TrainRows { x: x.view(), rows: &rows, labels: &labels, n_classes: k, cols: &cols })
});

/// The records, class indices and class count of a linfa dataset.
fn linfa_rows<D, T>(
    ds: &linfa::dataset::DatasetBase<ndarray::ArrayBase<D, ndarray::Ix2>, T>,
) -> Result<(ArrayView2<'_, f64>, Vec<u16>, usize)>
where
    D: ndarray::Data<Elem = f64>,
    T: linfa::dataset::AsSingleTargets<Elem = usize>,
{
    use linfa::dataset::AsSingleTargets;
    let y = ds.as_single_targets();
    let labels: Vec<u16> = y.iter().map(|&c| c as u16).collect();
    let k = y.iter().max().map_or(0, |&m| m + 1);
    if k == 0 {
        return Err(Error::param("records", "no training rows"));
    }
    Ok((ds.records.view(), labels, k))
}

/// The linfa face of the private fit: bounds are the records' public box `[lo, hi]` given at
/// construction, the classes the params' declared count; the ledger kept beside the model.
pub struct PrivateGnbWithBounds {
    pub params: PrivateGnbValidParams,
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
}

impl PrivateGnbWithBounds {
    /// Fits on `x` (clipped to the bounds) with class indices `y`.
    pub fn fit(&self, x: ArrayView2<f64>, y: &[usize]) -> Result<Accounted<GaussianNb>> {
        let k = self.params.declared_classes(y)?;
        let labels: Vec<u16> = y.iter().map(|&c| c as u16).collect();
        let rows: Vec<u32> = (0..x.nrows() as u32).collect();
        let cols: Vec<usize> = (0..x.ncols()).collect();
        let t = TrainRows {
            x: x.view(),
            rows: &rows,
            labels: &labels,
            n_classes: k,
            cols: &cols,
        };
        let b = Bounds {
            lo: &self.lo,
            hi: &self.hi,
        };
        Accounted::fit("private_gnb", self.params.seed, |rng, ledger| {
            self.params.fit_rows(&t, &b, rng, ledger)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Relation;
    use crate::rng::rng_from;
    use linfa::ParamGuard;
    use linfa::dataset::DatasetBase;
    use linfa::traits::{Fit, Predict};
    use ndarray::{Array1, array};

    fn two_blobs(n: usize) -> (Array2<f64>, Vec<u16>) {
        let mut rng = rng_from(&["gnb-test"]);
        let x = Array2::from_shape_fn((n, 2), |(i, j)| {
            let centre = if i % 2 == 0 { 0.3 } else { 0.7 };
            let u: f64 = rand::Rng::r#gen(&mut rng);
            (centre + 0.4 * (u - 0.5) + 0.05 * j as f64).clamp(0.0, 1.0)
        });
        (x, (0..n).map(|i| (i % 2) as u16).collect())
    }

    /// The hand-computed model of four rows: means, population variances, priors.
    #[test]
    fn non_private_fit_is_the_closed_form() {
        let x = array![[1.0, 2.0], [3.0, 2.0], [10.0, 0.0], [14.0, 4.0]];
        let ds = DatasetBase::new(x.clone(), array![0usize, 0, 1, 1]);
        let m = GaussianNbParams::default()
            .var_smoothing(0.0)
            .fit(&ds)
            .unwrap();
        assert_eq!(m.theta, array![[2.0, 2.0], [12.0, 2.0]]);
        assert_eq!(m.var, array![[1.0, 0.0], [4.0, 4.0]]);
        assert_eq!(m.log_prior, vec![0.5f64.ln(); 2]);
        let smoothed = GaussianNbParams::default()
            .var_smoothing(0.5)
            .fit(&ds)
            .unwrap();
        // Largest variance over all rows: feature 0, mean 7, (36 + 16 + 9 + 49) / 4 = 27.5.
        assert_eq!(smoothed.var[[0, 1]], 13.75);
        let y: Array1<usize> = Predict::predict(&smoothed, &x);
        assert_eq!(y.to_vec(), vec![0, 0, 1, 1]);
        assert!(
            GaussianNbParams::default()
                .var_smoothing(-1.0)
                .check()
                .is_err()
        );
    }

    /// Three charges of eps/3 each (sum eps), sensitivities 1, D, D under add/remove and
    /// doubled under replace-one; a huge eps recovers the exact means.
    #[test]
    fn private_fit_spends_eps_in_three_laplace_releases() {
        let (x, y) = two_blobs(400);
        let rows: Vec<u32> = (0..400).collect();
        let t = TrainRows::two_columns(x.view(), &rows, &y);
        let b = Bounds::UNIT_SQUARE;
        for (relation, factor) in [(Relation::AddRemove, 1.0), (Relation::ReplaceOne, 2.0)] {
            let p = PrivateGnbParams::new(0.9).check().unwrap();
            let mut ledger = Ledger::new(relation);
            p.fit_rows(&t, &b, &mut rng_from(&["g"]), &mut ledger)
                .unwrap();
            assert_eq!(ledger.entries.len(), 3);
            assert!((ledger.total_epsilon() - 0.9).abs() < 1e-12);
            assert!(ledger.is_private_within(Some(0.9)));
            let sens: Vec<f64> = ledger
                .entries
                .iter()
                .map(|e| e.sensitivity.unwrap())
                .collect();
            assert_eq!(sens, vec![factor, 2.0 * factor, 2.0 * factor]);
        }
        let exact = GaussianNbParams::default()
            .check()
            .unwrap()
            .fit_rows(&t)
            .unwrap();
        let big = PrivateGnbParams::new(1e9).check().unwrap();
        let m = big
            .fit_rows(&t, &b, &mut rng_from(&["h"]), &mut Ledger::default())
            .unwrap();
        for (a, e) in m.theta.iter().zip(exact.theta.iter()) {
            assert!((a - e).abs() < 1e-6, "{a} vs {e}");
        }
        for (a, e) in m.var.iter().zip(exact.var.iter()) {
            assert!((a - e).abs() < 1e-6, "{a} vs {e}");
        }
    }

    /// At eps = 1 on 20,000 rows the private model still separates the blobs (accuracy > 0.9 on
    /// its own training rows; the exact model reaches about 0.98).
    #[test]
    fn private_fit_learns_at_moderate_epsilon() {
        let (x, y) = two_blobs(20_000);
        let yu: Vec<usize> = y.iter().map(|&c| usize::from(c)).collect();
        let fit = PrivateGnbWithBounds {
            params: PrivateGnbParams::new(1.0)
                .classes(2)
                .seed(3)
                .check()
                .unwrap(),
            lo: vec![0.0, 0.0],
            hi: vec![1.0, 1.0],
        }
        .fit(x.view(), &yu)
        .unwrap();
        let pred: Array1<usize> = Predict::predict(&fit.model, &x);
        let right = pred.iter().zip(&yu).filter(|(a, b)| a == b).count();
        assert!(right as f64 / 20_000.0 > 0.9, "{right}");
        assert!(fit.ledger.is_private_within(Some(1.0)));
    }
}
