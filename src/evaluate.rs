//! Evaluation of a fitted model on a set of rows.

use crate::data::Dataset;
use crate::error::Result;
use crate::learners::Classifier;

/// Fraction of `rows` whose predicted class equals the label (NaN for no rows).
pub fn accuracy(model: &dyn Classifier, data: &Dataset, rows: &[u32]) -> Result<f64> {
    let pred = model.predict(data, rows)?;
    let correct = pred
        .iter()
        .zip(rows)
        .filter(|&(&p, &i)| p == data.labels[i as usize])
        .count();
    Ok(correct as f64 / rows.len() as f64)
}
