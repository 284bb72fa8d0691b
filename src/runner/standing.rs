//! Whether the stored results of a spec are still its results: `run`'s judgement, for `report`
//! and `status`.

use super::{manifest_of, unplanned};
use crate::data::DataDir;
use crate::error::{Error, Result};
use crate::plan::plan;
use crate::spec::Spec;

/// How the stored results of a spec stand against the spec, its data and its programs as they
/// are now, judged as `run` judges them but without writing anything: `report` refuses and
/// `status` flags what `run` would refuse.
#[derive(Debug, Clone, Default)]
pub struct Standing {
    /// Why `run` would refuse the stored results: they were computed from another spec, other
    /// data or another program, or hold cells the spec no longer plans.
    pub stale: Option<String>,
    /// Datasets whose files could not be read (not found in `--data-dir`), each with why: their
    /// stored results could not be checked against them.
    pub unchecked_data: Vec<String>,
    /// Pipelines whose stored trials predate checksums of their external programs.
    pub unchecked_programs: Vec<String>,
    /// What an unfinished forced run (or `--rerun`) left: its staging files.
    pub staging: Option<crate::store::Staging>,
    /// Whether `run --force` would resume that staging file (same spec, data and programs)
    /// rather than start afresh.
    pub staging_resumes: bool,
}

/// [`Standing`] of the results of `spec` in `dir` (`results_dir`), its data in `data_dir`.
pub fn standing(
    spec: &Spec,
    data_dir: &DataDir,
    dir: &std::path::Path,
    smoke: bool,
) -> Result<Standing> {
    let (manifest, unchecked_data) = manifest_of(spec, data_dir, true)?;
    let staging = crate::store::unfinished_staging(dir)?;
    let staging_resumes = unchecked_data.is_empty()
        && (staging.as_ref().and_then(|s| s.manifest.as_ref()))
            .is_some_and(|m| m.same_run(&manifest));
    let mut standing = Standing {
        unchecked_data,
        staging,
        staging_resumes,
        ..Standing::default()
    };
    let stored = match crate::store::inspect(dir, &manifest, false) {
        Ok(stored) => stored,
        Err(Error::Store { reason, .. }) => {
            standing.stale = Some(reason);
            return Ok(standing);
        }
        Err(e) => return Err(e),
    };
    standing.stale = unplanned(&plan(spec, smoke), &stored);
    standing.unchecked_programs = stored.unpinned;
    Ok(standing)
}
