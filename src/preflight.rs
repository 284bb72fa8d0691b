//! The checks of a run's (pipeline, dataset) pairs before anything is written.

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::plan::{Cell, Plan};
use crate::privacy::Ledger;
use crate::spec::{Spec, Step};

/// Checks dataset `d` (loaded as `data`) with every pipeline that runs on it, before the
/// first trial runs.
pub(crate) fn preflight(spec: &Spec, plan: &Plan, d: usize, data: &Dataset) -> Result<()> {
    crate::pipeline::check_public_n(spec, &data.name, data.train_size())?;
    for combo in plan.combos.iter().filter(|c| c.dataset == d) {
        let c = &combo.cell(0);
        let pipeline = &spec.pipelines[c.pipeline];
        check_sizes(spec, c, data)?;
        let releases = matches!(pipeline.step, Step::Release(_));
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
                    "pipeline `{}` reads dataset `{}`, a scalar source (one column, no classes): only `release` and `attack` pipelines read it",
                    pipeline.name, data.name
                )
            };
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline[{}]", c.pipeline),
                reason,
            });
        }
        check_run(spec, c, data)?;
        if releases {
            continue;
        }
        if let Some(kind) = pipeline.learner() {
            // Every parameter the kind derives for a cell, and whether its learner can fit
            // the dataset at all, is checked before anything runs.
            kind.learner(&c.at, &c.budget)?.check_data(data)?;
        }
        // The key that needs binary features, if any: the probe, the learner, or the
        // selection in front of a learner that takes real ones.
        let needs_binary = match pipeline.learner() {
            None if matches!(pipeline.step, Step::Probe(_)) => Some("probe"),
            Some(k) if !k.needs_binary() => pipeline.selection.is_some().then_some("selection"),
            _ => Some("learner"),
        };
        if let Some(at) = needs_binary
            && data.features.as_binary().is_none()
        {
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline[{}].{at}", c.pipeline),
                reason: format!(
                    "pipeline `{}` needs binary features; dataset `{}` is real-valued",
                    pipeline.name, data.name
                ),
            });
        }
    }
    Ok(())
}

/// The cell's `n_train` and feature count T fit the dataset. `n_train` is a subset of the
/// trial's training split, so it is compared with the split's size, not the file's rows: a
/// larger value ran on the whole split while its records said `n_train` (and duplicated the
/// cell of the split's size).
fn check_sizes(spec: &Spec, c: &Cell, data: &Dataset) -> Result<()> {
    let pipeline = &spec.pipelines[c.pipeline];
    if let Some(n) = c.at.n_train
        && n > data.train_size()
    {
        let field = match spec
            .grid
            .n_train
            .as_ref()
            .and_then(|v| v.iter().position(|&m| m == n))
        {
            Some(i) => format!("grid.n_train[{i}]"),
            None => "grid.n_train".into(),
        };
        return Err(Error::Spec {
            file: spec.path.clone(),
            field,
            reason: format!(
                "n_train = {n} exceeds the {} training rows of dataset `{}` ({} rows in all); \
                 a cell trains on a subset of the training split",
                data.train_size(),
                data.name,
                data.n_rows()
            ),
        });
    }
    if let Some(t) = c.at.features
        && t > data.n_features()
    {
        let field = match (pipeline.features, &spec.grid.features) {
            (None, Some(grid)) => match grid.iter().position(|&g| g == t) {
                Some(i) => format!("grid.features[{i}]"),
                None => "grid.features".into(),
            },
            _ => format!("pipeline[{}].features", c.pipeline),
        };
        return Err(Error::Spec {
            file: spec.path.clone(),
            field,
            reason: format!(
                "T = {t} exceeds dataset `{}`'s {} features",
                data.name,
                data.n_features()
            ),
        });
    }
    Ok(())
}

/// What the cell's steps read of the run besides its grid values, checked with a scratch
/// ledger holding the cell's relation and public training-set size N: a step that reads N when
/// the run declares none, a relation a mechanism is not proven for, an ε the accountant cannot
/// reach ([`crate::kinds::LearnerKind::check_run`] and its release and selector twins). The
/// refusal names the spec file, the field to change and the pipeline.
fn check_run(spec: &Spec, c: &Cell, data: &Dataset) -> Result<()> {
    let pipeline = &spec.pipelines[c.pipeline];
    let size = crate::pipeline::cell_public_size(spec, c, &data.name, data.train_size())?;
    let mut ledger = Ledger::new(crate::pipeline::relation_of(spec, c)).with_public_size(size);
    let checked = match &pipeline.step {
        Step::Release(release) => release.params.check_run(&mut ledger),
        Step::Probe(probe) => probe.params.check_run(&mut ledger),
        _ => pipeline
            .selection
            .as_ref()
            .map_or(Ok(()), |s| s.params.check_run(&mut ledger))
            .and_then(|()| match pipeline.learner() {
                Some(kind) => kind.check_run(&c.at, &c.budget, &mut ledger),
                None => Ok(()),
            }),
    };
    let Err(Error::Param { name, reason }) = checked else {
        return checked;
    };
    let at = format!(
        "pipeline[{}] `{}` on dataset `{}`{}",
        c.pipeline,
        pipeline.name,
        data.name,
        c.budget
            .total
            .map_or(String::new(), |e| format!(" at epsilon = {e}"))
    );
    let field = match name.as_str() {
        "public_n" if spec.definitions.contains_key(&data.name) => {
            format!("dataset.{}.public_n", data.name)
        }
        "public_n" => format!("pipeline[{}]", c.pipeline),
        "epsilon" => "grid.epsilon".into(),
        "neighbours" if pipeline.neighbours.is_some() => {
            format!("pipeline[{}].neighbours", c.pipeline)
        }
        "neighbours" => "experiment.neighbours".into(),
        other => format!("pipeline[{}].{other}", c.pipeline),
    };
    Err(Error::Spec {
        file: spec.path.clone(),
        field,
        reason: format!("{at}: {reason}"),
    })
}
