//! `provenance.json` in each results folder: what produced the trials (spec hash, git commit,
//! epsilab and key crate versions, data checksums, threads, wall time, smoke flag).

use crate::data::DatasetDef;
use crate::error::{Error, Result};
use crate::spec::Spec;
use crate::store::{DEFINITION, Inputs};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

pub const PROVENANCE_FILE: &str = "provenance.json";

/// The lock file the binary was built with.
const CARGO_LOCK: &str = include_str!("../Cargo.lock");

/// Crates whose versions can change results or figures.
const KEY_CRATES: &[&str] = &[
    "rand",
    "rand_pcg",
    "rand_distr",
    "ndarray",
    "linfa",
    "rayon",
    "serde_json",
    "toml",
    "plotters",
    "sha2",
];

/// Versions of `KEY_CRATES` from the embedded Cargo.lock (`[[package]]` name/version pairs).
pub fn crate_versions() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut name: Option<&str> = None;
    for line in CARGO_LOCK.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"'));
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take())
            && KEY_CRATES.contains(&n)
        {
            // Several versions of one crate: keep them all.
            let v = v.trim_matches('"').to_string();
            out.entry(n.to_string())
                .and_modify(|e: &mut String| {
                    e.push_str(", ");
                    e.push_str(&v)
                })
                .or_insert(v);
        }
    }
    out
}

/// The commit the running binary was built from (`-dirty` when its code differed from it;
/// "unknown" when built outside a git checkout).
pub const BUILD_COMMIT: &str = env!("EPSILAB_BUILD_COMMIT");

/// `git rev-parse HEAD` of the working directory, or "unknown": the checkout at the time of
/// writing, which a long run may outlive (see [`BUILD_COMMIT`] for the code that ran).
pub fn git_commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// SHA-256 of each file a dataset is read from, as the run's manifest hashed them (`inputs`,
/// by dataset, then by file; pinned by the catalog or computed from the file), or how it is
/// made.
fn data_checksums(spec: &Spec, name: &str, inputs: &BTreeMap<String, Inputs>) -> Value {
    // The files of `name`'s entry whose keys start with `prefix`, the prefix stripped.
    let files = |prefix: &str| -> Value {
        let hashes = inputs.get(name).into_iter().flatten();
        json!(
            hashes
                .filter(|(k, _)| k.as_str() != DEFINITION)
                .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?, v)))
                .collect::<BTreeMap<_, _>>()
        )
    };
    match spec.catalog.get(name) {
        Some(DatasetDef::Libsvm(_) | DatasetDef::Csv(_) | DatasetDef::CsvColumn(_)) => files(""),
        Some(DatasetDef::NbProxy(d)) => {
            json!({ "synthetic": "nb_proxy", "of": files(&format!("{}/", d.of)) })
        }
        Some(DatasetDef::NbSampled(_)) => json!("synthetic: nb_sampled (seeded)"),
        Some(DatasetDef::ToyGaussian(_)) => json!("synthetic: toy_gaussian (seeded)"),
        Some(DatasetDef::LogisticBall(_)) => json!("synthetic: logistic_ball (seeded)"),
        Some(DatasetDef::GaussianMixture(_)) => json!("synthetic: gaussian_mixture (seeded)"),
        Some(DatasetDef::TableI(_)) => json!("built in: the review's Table I"),
        Some(DatasetDef::NoData(_)) => json!("no data"),
        Some(
            DatasetDef::Uniform(_)
            | DatasetDef::Beta(_)
            | DatasetDef::Contaminated(_)
            | DatasetDef::StudentT(_),
        ) => json!("synthetic scalar source (seeded)"),
        None => Value::Null,
    }
}

/// Writes `dir/<file>` (`provenance.json`, or a shard's own so array tasks never write one
/// file); `inputs` are the run manifest's input hashes.
pub fn write(
    spec: &Spec,
    inputs: &BTreeMap<String, Inputs>,
    dir: &Path,
    file: &str,
    threads: usize,
    seconds: f64,
    smoke: bool,
) -> Result<()> {
    let data: BTreeMap<&str, Value> = spec
        .experiment
        .datasets
        .iter()
        .map(|d| (d.as_str(), data_checksums(spec, d, inputs)))
        .collect();
    let v = json!({
        "experiment": spec.experiment.name,
        "spec": spec.path.display().to_string(),
        "spec_hash": spec.hash,
        "git_commit": git_commit(),
        "binary_commit": BUILD_COMMIT,
        "epsilab_version": env!("CARGO_PKG_VERSION"),
        "crate_versions": crate_versions(),
        "data_sha256": data,
        "threads": threads,
        "wall_seconds": seconds,
        "smoke": smoke,
    });
    let p = dir.join(file);
    let text = serde_json::to_string_pretty(&v).expect("json") + "\n";
    std::fs::write(&p, text).map_err(|e| Error::io(&p, e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn lock_file_versions_are_found() {
        let v = super::crate_versions();
        assert!(v.contains_key("rand") && v.contains_key("rayon"), "{v:?}");
    }
}
