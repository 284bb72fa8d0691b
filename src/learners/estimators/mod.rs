//! Learners that are scored by their own test metrics rather than by predicted classes:
//! linear regression (`mse`, `r2`), PCA (`captured_variance`) and k-means (`kmeans_cost`,
//! `ari`).
//!
//! The extension to the classification pipeline is one default method,
//! [`Classifier::scores`]: a fitted model wrapped in [`Scored`] answers it with its named
//! metrics on the test rows, and `pipeline.rs` records them in place of accuracy. The pipeline
//! still knows no kind by name; a [`Learner`](super::Learner) of this family returns
//! `Box::new(Scored(...))` from `fit`.
//!
//! Every learner here reads real-valued features with public `bounds` and maps each value to
//! `[-1, 1]` through them ([`unit_box`]): a per-example map with public constants, so the
//! sensitivities below hold for any data.

pub mod kmeans;
pub mod linalg;
pub mod linreg;
pub mod pca;

use super::Classifier;
use crate::data::{Dataset, Features};
use crate::error::{Error, Result};
use ndarray::{Array1, Array2};
use std::collections::BTreeMap;

/// A fitted regression, subspace or clustering model: its metrics on a set of rows.
pub trait Estimator: Send + Sync {
    /// Named metrics of the model on `rows` (the test set).
    fn score(&self, data: &Dataset, rows: &[u32]) -> Result<BTreeMap<String, f64>>;
}

/// An [`Estimator`] as the pipeline's [`Classifier`]: it predicts no class and answers
/// [`Classifier::scores`] instead.
pub struct Scored(pub Box<dyn Estimator>);

impl Classifier for Scored {
    fn predict(&self, data: &Dataset, _: &[u32]) -> Result<Vec<u16>> {
        Err(Error::Data {
            dataset: data.name.clone(),
            reason: "a regression, PCA or k-means model predicts no class".into(),
        })
    }

    fn scores(&self, data: &Dataset, rows: &[u32]) -> Option<Result<BTreeMap<String, f64>>> {
        Some(self.0.score(data, rows))
    }
}

/// Refuses data this family cannot read: binary features, or real-valued ones without public
/// bounds (sensitivities need them), naming the dataset.
pub fn check_real(data: &Dataset) -> Result<()> {
    match (&data.features, &data.bounds) {
        (Features::Dense(_), Some(_)) => Ok(()),
        _ => Err(Error::Data {
            dataset: data.name.clone(),
            reason: "regression, PCA and k-means learners read real-valued features with public \
                     `bounds`"
                .into(),
        }),
    }
}

/// Refuses data without a regression target (`target_bounds` in the catalog).
pub fn check_target(data: &Dataset) -> Result<()> {
    check_real(data)?;
    if data.targets.is_none() {
        return Err(Error::Data {
            dataset: data.name.clone(),
            reason: "regression learners need a real-valued target (`target_bounds` in the \
                     dataset's definition)"
                .into(),
        });
    }
    Ok(())
}

/// The chosen rows with each feature mapped to `[-1, 1]` by its public bounds:
/// u = (2 x - lo - hi) / (hi - lo).
pub fn unit_box(data: &Dataset, rows: &[u32]) -> Result<Array2<f64>> {
    check_real(data)?;
    let (Features::Dense(x), Some(b)) = (&data.features, &data.bounds) else {
        unreachable!("checked by check_real");
    };
    let x = x.view();
    let d = x.ncols();
    let mut out = Array2::zeros((rows.len(), d));
    for (r, &i) in rows.iter().enumerate() {
        for j in 0..d {
            out[[r, j]] = (2.0 * x[[i as usize, j]] - b.lo[j] - b.hi[j]) / (b.hi[j] - b.lo[j]);
        }
    }
    Ok(out)
}

/// The targets of `rows` mapped to `[-1, 1]` by their public bounds, and the map back
/// (`y = mid + half * t`).
pub fn unit_targets(data: &Dataset, rows: &[u32]) -> Result<(Array1<f64>, (f64, f64))> {
    check_target(data)?;
    let t = data.targets.as_ref().expect("checked");
    let (mid, half) = ((t.hi + t.lo) / 2.0, (t.hi - t.lo) / 2.0);
    let values = rows
        .iter()
        .map(|&i| (t.values[i as usize] - mid) / half)
        .collect();
    Ok((values, (mid, half)))
}
