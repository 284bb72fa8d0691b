//! Sufficient statistics of binary data: per-class sizes and per-class on-counts.
//!
//! Naive Bayes and every feature score of the thesis are functions of these counts only, so the
//! runner computes them once per (dataset, split) and every pipeline of that trial reuses them.

use crate::data::BinaryMatrix;
use crate::error::{Error, Result};
use linfa::dataset::{AsSingleTargets, DatasetBase};
use ndarray::{Array2, ArrayBase, ArrayView2, Data, Ix2};

/// Number of classes of class-index targets: the largest index plus one. For non-private fits
/// only: a private fit takes [`declared_classes`].
pub fn n_classes_of(y: &[usize]) -> usize {
    y.iter().max().map_or(0, |&m| m + 1)
}

/// The class count a private linfa fit releases over: the one declared in its parameters
/// (public, as the runner's dataset `class_names`), never the labels' largest value. Under
/// add/remove, one added example of a new class would lengthen every released class vector, so
/// the outputs on the two neighbours could not overlap and no epsilon would hold. Refuses an
/// undeclared count (0) and labels outside the declared classes.
pub fn declared_classes(classes: usize, y: &[usize]) -> Result<usize> {
    if classes == 0 {
        return Err(Error::param(
            "classes",
            "a private fit needs its number of classes declared (the params' `classes`): \
             taking it from the labels would reveal whether a new class is present"
                .to_string(),
        ));
    }
    match y.iter().find(|&&c| c >= classes) {
        Some(c) => Err(Error::param(
            "targets",
            format!("class {c} is not among the {classes} declared classes"),
        )),
        None => Ok(classes),
    }
}

/// N_c and N1[c, d] of SPEC notation; N0[c, d] = N_c - N1[c, d].
#[derive(Debug, Clone, PartialEq)]
pub struct ClassCounts {
    /// N_c: examples per class.
    pub class: Vec<f64>,
    /// N1[c, d]: how often feature d is 1 in class c (C x D).
    pub on: Array2<f64>,
}

impl ClassCounts {
    /// Counts over the chosen rows of a sparse binary matrix.
    pub fn from_rows(x: &BinaryMatrix, labels: &[u16], rows: &[u32], n_classes: usize) -> Self {
        let (class, on) = x.class_counts(labels, rows, n_classes);
        ClassCounts { class, on }
    }

    /// Counts of a linfa dataset of 0/1 records and class-index targets, over the class count
    /// `classes` gives for its labels: their own ([`n_classes_of`], non-private fits) or one
    /// declared beforehand ([`declared_classes`], private fits).
    pub fn from_linfa<D, T>(
        dataset: &DatasetBase<ArrayBase<D, Ix2>, T>,
        classes: impl FnOnce(&[usize]) -> Result<usize>,
    ) -> Result<Self>
    where
        D: Data<Elem = f64>,
        T: AsSingleTargets<Elem = usize>,
    {
        let y: Vec<usize> = dataset.as_single_targets().iter().copied().collect();
        Self::from_dense(dataset.records().view(), &y, classes(&y)?)
    }

    /// Counts of a dense 0/1 matrix (linfa interop); any other value is an error.
    pub fn from_dense(x: ArrayView2<f64>, y: &[usize], n_classes: usize) -> Result<Self> {
        let mut class = vec![0.0; n_classes];
        let mut on = Array2::zeros((n_classes, x.ncols()));
        for (row, &c) in x.rows().into_iter().zip(y) {
            if c >= n_classes {
                return Err(Error::param("targets", format!("class {c} >= {n_classes}")));
            }
            class[c] += 1.0;
            for (d, &v) in row.iter().enumerate() {
                if v == 1.0 {
                    on[[c, d]] += 1.0;
                } else if v != 0.0 {
                    return Err(Error::param("records", format!("value {v} is not binary")));
                }
            }
        }
        Ok(ClassCounts { class, on })
    }

    pub fn n_classes(&self) -> usize {
        self.class.len()
    }

    pub fn n_features(&self) -> usize {
        self.on.ncols()
    }

    /// N, the number of examples.
    pub fn total(&self) -> f64 {
        self.class.iter().sum()
    }

    /// N0[c, d] = N_c - N1[c, d].
    pub fn off(&self, c: usize, d: usize) -> f64 {
        self.class[c] - self.on[[c, d]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn sparse_and_dense_counts_agree() {
        let mut m = BinaryMatrix::new(3);
        m.push_row(&[0, 2]);
        m.push_row(&[1]);
        m.push_row(&[0, 1, 2]);
        m.push_row(&[]);
        let labels = [0u16, 1, 1, 0];
        let sparse = ClassCounts::from_rows(&m, &labels, &[0, 1, 2, 3], 2);
        assert_eq!(sparse.class, vec![2.0, 2.0]);
        assert_eq!(sparse.on, array![[1.0, 0.0, 1.0], [1.0, 2.0, 1.0]]);
        assert_eq!(sparse.off(0, 1), 2.0);
        let dense =
            ClassCounts::from_dense(m.to_dense(&[0, 1, 2, 3]).view(), &[0, 1, 1, 0], 2).unwrap();
        assert_eq!(sparse, dense);
        let sub = ClassCounts::from_rows(&m, &labels, &[2], 2);
        assert_eq!(sub.total(), 1.0);
    }
}
