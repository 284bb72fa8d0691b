//! The checks of a run's (pipeline, dataset) pairs before anything is written.

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::plan::{Cell, Plan};
use crate::spec::Spec;

/// Checks dataset `d` (loaded as `data`) with every pipeline that runs on it, before the
/// first trial runs.
pub(crate) fn preflight(spec: &Spec, plan: &Plan, d: usize, data: &Dataset) -> Result<()> {
    crate::pipeline::check_public_n(spec, &data.name, data.train_size())?;
    for combo in plan.combos.iter().filter(|c| c.dataset == d) {
        let c = &combo.cell(0);
        let pipeline = &spec.pipelines[c.pipeline];
        check_sizes(spec, c, data)?;
        let releases = matches!(pipeline.step, crate::spec::Step::Release(_));
        if releases != data.is_scalar() {
            let reason = if releases {
                format!(
                    "{} `{}` reads a scalar source; dataset `{}` is a classification dataset",
                    pipeline.kind(),
                    pipeline.name,
                    data.name
                )
            } else {
                format!(
                    "dataset `{}` is a scalar source (one column, no classes): only `release` and `attack` pipelines read it",
                    data.name
                )
            };
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline `{}`", pipeline.name),
                reason,
            });
        }
        if releases {
            continue;
        }
        if let Some(kind) = pipeline.learner() {
            // Every parameter the kind derives for a cell, and whether its learner can fit
            // the dataset at all, is checked before anything runs.
            kind.learner(&c.at, &c.budget)?.check_data(data)?;
        }
        let needs_binary =
            pipeline.learner().is_none_or(|k| k.needs_binary()) || pipeline.selection.is_some();
        if needs_binary && data.features.as_binary().is_none() {
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline `{}`", pipeline.name),
                reason: format!(
                    "pipeline `{}` needs binary features; dataset `{}` is real-valued",
                    pipeline.name, data.name
                ),
            });
        }
    }
    Ok(())
}

/// The cell's `n_train` and feature count T fit the dataset.
fn check_sizes(spec: &Spec, c: &Cell, data: &Dataset) -> Result<()> {
    let pipeline = &spec.pipelines[c.pipeline];
    if let Some(n) = c.at.n_train
        && n > data.n_rows()
    {
        return Err(Error::Spec {
            file: spec.path.clone(),
            field: "grid.n_train".into(),
            reason: format!(
                "n_train = {n} exceeds dataset `{}`'s {} rows",
                data.name,
                data.n_rows()
            ),
        });
    }
    if let Some(t) = c.at.features
        && t > data.n_features()
    {
        return Err(Error::Spec {
            file: spec.path.clone(),
            field: format!("pipeline `{}`: features", pipeline.name),
            reason: format!(
                "T = {t} exceeds dataset `{}`'s {} features",
                data.name,
                data.n_features()
            ),
        });
    }
    Ok(())
}
