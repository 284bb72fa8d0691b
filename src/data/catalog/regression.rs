//! CSV datasets with a real-valued regression target (`target_bounds`): the label column is
//! read as a number and clipped to public bounds, and every row belongs to one class.

use super::{ClassDef, CsvDef, FileSet, Label};
use crate::error::Result;
use std::path::Path;

/// The single class every row of a regression dataset belongs to.
pub(super) fn one_class() -> [ClassDef; 1] {
    [ClassDef {
        label: Label::Text(String::new()),
        name: "all rows".into(),
        subsample: None,
    }]
}

/// Refuses `target_bounds` that are not finite with lo < hi, or that come with `classes` or
/// `subset` (a regression target has no classes to list or drop).
pub(super) fn check_def(set: &FileSet, def: &CsvDef, [lo, hi]: [f64; 2]) -> Result<()> {
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(set.err(format!(
            "`target_bounds` [{lo}, {hi}] must be finite with lo < hi"
        )));
    }
    if !def.classes.is_empty() || def.subset {
        return Err(set.err(
            "`target_bounds` makes the label column a regression target: leave `classes` \
             empty and `subset` unset"
                .into(),
        ));
    }
    Ok(())
}

/// The label cells of `file` as numbers clipped to `[lo, hi]`; a cell that is not a finite
/// number is an error naming the row and the file.
pub(super) fn parse_targets(
    set: &FileSet,
    cells: &[String],
    [lo, hi]: [f64; 2],
    file: &Path,
) -> Result<Vec<f64>> {
    cells
        .iter()
        .enumerate()
        .map(|(i, cell)| match cell.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v.clamp(lo, hi)),
            _ => Err(set.err(format!(
                "regression target `{cell}` (row {} of {}) is not a finite number",
                i + 1,
                file.display()
            ))),
        })
        .collect()
}
