//! Which datasets a run holds from its checks to its cells: a small one stays loaded, one of
//! [`HOLD_BYTES`] or more is checked, dropped and read or drawn again just before its cells, so
//! a run never holds two such datasets at once.

use super::{RunOptions, pool};
use crate::data::Dataset;
use crate::error::Result;
use crate::plan::Plan;
use crate::preflight::preflight;
use crate::spec::Spec;
use std::sync::Arc;

/// A dataset of the run as [`super::prepare`] leaves it.
pub(super) enum Held {
    /// Loaded and checked, held for its cells (or an empty stand-in the run never reads).
    Data(Arc<Dataset>),
    /// Loaded and checked, then dropped: as large as [`HOLD_BYTES`] or larger, it is read or drawn again
    /// (the same bits, from its own stream) just before its cells run and dropped after them,
    /// so a run holds one such dataset at a time. Appendix B held all of its toy datasets from
    /// the start, D = 1000's 8.5 GB and D = 1500's 12.7 GB together.
    Later,
}

/// Datasets whose values take this many bytes or more are not held from [`super::prepare`] to their
/// cells ([`Held::Later`]); drawing one again costs seconds (appendix B's D = 1000 and 1500:
/// 13 and 20 s of one core) against minutes of cells.
pub const HOLD_BYTES: usize = 1 << 30;

/// Bytes of `data`'s feature values, for [`HOLD_BYTES`] (dense: 8 a value; a binary matrix
/// holds only its ones and is never that large).
fn feature_bytes(data: &Dataset) -> usize {
    match &data.features {
        crate::data::Features::Dense(x) => x.nrows() * x.ncols() * 8,
        crate::data::Features::Binary(_) => 0,
    }
}

/// The `needed` datasets, each read or drawn (unless `loaded` already) and checked
/// ([`preflight`]) in the spec's order, the first failure reported; those of `hold_bytes` or
/// more are dropped again ([`Held::Later`]). The others get empty stand-ins.
pub(super) fn load_checked(
    spec: &Spec,
    plan: &Plan,
    opts: &RunOptions,
    needed: &[bool],
    mut loaded: Vec<Option<Arc<Dataset>>>,
    hold_bytes: usize,
) -> Result<Vec<Held>> {
    let pool = pool(opts.threads)?;
    let mut held = Vec::with_capacity(needed.len());
    for (d, name) in spec.experiment.datasets.iter().enumerate() {
        if !needed[d] {
            held.push(Held::Data(Arc::new(crate::data::scalar::no_data(
                name, name,
            ))));
            continue;
        }
        let data = match loaded[d].take() {
            Some(data) => data,
            None => Arc::new(pool.install(|| load_one(spec, plan, opts, d))?),
        };
        preflight(spec, plan, d, &data)?;
        held.push(if feature_bytes(&data) >= hold_bytes {
            Held::Later
        } else {
            Held::Data(data)
        });
    }
    Ok(held)
}

/// Reads or draws dataset `d` of the spec (its rows up to the plan's largest `n_train`).
fn load_one(spec: &Spec, plan: &Plan, opts: &RunOptions, d: usize) -> Result<Dataset> {
    crate::profile::time("load", || {
        spec.catalog.load_for(
            &spec.experiment.datasets[d],
            &opts.data_dir,
            plan.max_n_train(d),
        )
    })
}

impl Held {
    /// The dataset, read or drawn again if it was dropped.
    pub(super) fn get(
        &self,
        spec: &Spec,
        plan: &Plan,
        opts: &RunOptions,
        d: usize,
    ) -> Result<Arc<Dataset>> {
        match self {
            Held::Data(data) => Ok(Arc::clone(data)),
            Held::Later => Ok(Arc::new(load_one(spec, plan, opts, d)?)),
        }
    }
}
