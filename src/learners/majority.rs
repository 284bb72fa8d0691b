//! The majority-class baseline: predicts the most frequent training class.

use super::Classifier;
use crate::data::Dataset;
use crate::error::Result;

/// Always predicts one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Majority {
    pub class: u16,
}

impl Majority {
    /// The most frequent class among `rows` (ties: the lowest index).
    pub fn fit_rows(data: &Dataset, rows: &[u32]) -> Self {
        let sizes = data.class_sizes(rows);
        let mut best = 0;
        for (c, &n) in sizes.iter().enumerate() {
            if n > sizes[best] {
                best = c;
            }
        }
        Majority { class: best as u16 }
    }
}

impl Classifier for Majority {
    fn predict(&self, _data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        Ok(vec![self.class; rows.len()])
    }
}
