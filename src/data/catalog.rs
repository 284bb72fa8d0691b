//! The dataset catalog (`datasets/catalog.toml`, embedded in the binary) and dataset definitions.
//!
//! A definition says where the rows come from (LIBSVM files checked by SHA-256, or a synthetic
//! generator), how labels map to classes, and how the split is drawn. Specs may add their own
//! definitions inline with the same fields.

use super::{Dataset, Features, SplitRule, libsvm, synthetic};
use crate::error::{Error, Result};
use crate::rng::rng_from;
use rand::seq::SliceRandom;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The catalog text shipped with the binary.
pub const CATALOG_TOML: &str = include_str!("../../datasets/catalog.toml");

/// Environment variable naming the data directory.
pub const DATA_ENV: &str = "EPSILAB_DATA";

/// Where dataset files are looked up: `--data-dir`, else `$EPSILAB_DATA`, else `./datasets`.
#[derive(Debug, Clone)]
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn resolve(cli: Option<PathBuf>) -> Self {
        DataDir(
            cli.or_else(|| std::env::var_os(DATA_ENV).map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("datasets")),
        )
    }
}

/// One dataset definition, tagged by `source`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum DatasetDef {
    Libsvm(LibsvmDef),
    ToyGaussian(ToyGaussianDef),
    NbSampled(NbSampledDef),
    NbProxy(NbProxyDef),
}

/// Rows from LIBSVM files.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LibsvmDef {
    pub title: Option<String>,
    pub dimension: usize,
    /// Training file, or the only file when the split is random.
    pub train: PathBuf,
    /// Published test file (a fixed split); absent means a seeded random split.
    pub test: Option<PathBuf>,
    /// Training fraction of the random split (required without `test`).
    pub train_fraction: Option<f64>,
    /// Classes in order; `label` as written in the file.
    pub classes: Vec<ClassDef>,
    /// Keep only rows whose label is listed (otherwise an unlisted label is an error).
    #[serde(default)]
    pub subset: bool,
    /// Seed of the class subsampling (fixed per dataset, so every run sees the same rows).
    #[serde(default)]
    pub subsample_seed: u64,
    /// Feature names, one per line (line i names feature i).
    pub vocabulary: Option<PathBuf>,
    /// Expected SHA-256 (hex) per file path as written above.
    #[serde(default)]
    pub sha256: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassDef {
    pub label: i64,
    pub name: String,
    /// Keep this many rows of the class, chosen at random with `subsample_seed`.
    pub subsample: Option<usize>,
}

/// Toy Gaussian of the thesis appendix A.7: N(0, I) vs N(a 1, I), Bayes accuracy 90%.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyGaussianDef {
    pub title: Option<String>,
    pub dimension: usize,
    pub train: usize,
    pub test: usize,
    #[serde(default)]
    pub seed: u64,
}

/// Binary data sampled from a two-class Naive Bayes model (thesis section 3.4).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NbSampledDef {
    pub title: Option<String>,
    pub dimension: usize,
    /// Base probability that a feature is on, per class (dense: [0.8, 0.5]; sparse: [0.01, 0.03]).
    pub theta: [f64; 2],
    /// Relative uniform jitter per feature: theta_cd = theta_c (1 + U(-jitter, jitter)).
    #[serde(default = "default_jitter")]
    pub jitter: f64,
    pub train: usize,
    pub test: usize,
    #[serde(default)]
    pub seed: u64,
}

fn default_jitter() -> f64 {
    synthetic::DEFAULT_JITTER
}

/// Binary data sampled from the non-private NB fitted on another dataset's training set.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NbProxyDef {
    pub title: Option<String>,
    /// Catalog name of the dataset whose fitted NB generates the rows.
    pub of: String,
    pub train: usize,
    pub test: usize,
    #[serde(default)]
    pub seed: u64,
}

/// The built-in catalog plus any definitions added by a spec.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Name → (definition, folder its relative paths are resolved against; None = data dir).
    entries: BTreeMap<String, (DatasetDef, Option<PathBuf>)>,
}

impl Catalog {
    /// The embedded catalog.
    pub fn builtin() -> Self {
        let raw: BTreeMap<String, DatasetDef> =
            toml::from_str(CATALOG_TOML).expect("embedded datasets/catalog.toml is valid");
        Catalog {
            entries: raw.into_iter().map(|(k, v)| (k, (v, None))).collect(),
        }
    }

    /// Adds (or overrides) a definition whose relative paths resolve against `base`.
    pub fn insert(&mut self, name: &str, def: DatasetDef, base: Option<PathBuf>) {
        self.entries.insert(name.to_string(), (def, base));
    }

    pub fn get(&self, name: &str) -> Option<&DatasetDef> {
        self.entries.get(name).map(|(d, _)| d)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Loads a dataset: reads and checks its files, or generates it.
    pub fn load(&self, name: &str, dir: &DataDir) -> Result<Dataset> {
        let (def, base) = self.entries.get(name).ok_or_else(|| Error::Data {
            dataset: name.into(),
            reason: format!(
                "unknown dataset; known: {}",
                self.names().collect::<Vec<_>>().join(", ")
            ),
        })?;
        let base = base.as_deref().unwrap_or(&dir.0);
        let title = |t: &Option<String>| t.clone().unwrap_or_else(|| name.to_string());
        match def {
            DatasetDef::Libsvm(d) => load_libsvm(name, d, base, &dir.0),
            DatasetDef::ToyGaussian(d) => Ok(synthetic::toy_gaussian(name, &title(&d.title), d)),
            DatasetDef::NbSampled(d) => Ok(synthetic::nb_sampled(name, &title(&d.title), d)),
            DatasetDef::NbProxy(d) => {
                if d.of == name {
                    return Err(Error::Data {
                        dataset: name.into(),
                        reason: "`of` names the dataset itself".into(),
                    });
                }
                let source = self.load(&d.of, dir)?;
                synthetic::nb_proxy(name, &title(&d.title), d, &source)
            }
        }
    }
}

impl Catalog {
    /// SHA-256 of each input file of a dataset, by path as written in its definition: the
    /// catalog's pinned checksum where it has one (loading verifies it), else the hash of the
    /// file's bytes. A derived dataset lists its source's files under `SOURCE/`; generated data
    /// has none. The results store pins these so a changed file is never silently reused.
    pub fn input_hashes(&self, name: &str, dir: &DataDir) -> Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let Some((def, base)) = self.entries.get(name) else {
            return Ok(out);
        };
        match def {
            DatasetDef::Libsvm(d) => {
                let base = base.as_deref().unwrap_or(&dir.0);
                let files = std::iter::once(&d.train)
                    .chain(&d.test)
                    .chain(&d.vocabulary);
                for rel in files {
                    let key = rel.to_string_lossy().to_string();
                    let sha = match d.sha256.get(&key) {
                        Some(pinned) => pinned.to_ascii_lowercase(),
                        None => {
                            let path = base.join(rel);
                            let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
                                std::io::ErrorKind::NotFound => Error::MissingData {
                                    dataset: name.into(),
                                    path: path.clone(),
                                    dir: dir.0.clone(),
                                },
                                _ => Error::io(&path, e),
                            })?;
                            hex(&Sha256::digest(&bytes))
                        }
                    };
                    out.insert(key, sha);
                }
            }
            DatasetDef::NbProxy(d) if d.of != name => {
                for (k, v) in self.input_hashes(&d.of, dir)? {
                    out.insert(format!("{}/{k}", d.of), v);
                }
            }
            _ => {}
        }
        Ok(out)
    }
}

fn load_libsvm(name: &str, def: &LibsvmDef, base: &Path, data_dir: &Path) -> Result<Dataset> {
    let data_err = |reason: String| Error::Data {
        dataset: name.into(),
        reason,
    };
    let read_bytes = |rel: &Path| -> Result<Vec<u8>> {
        let path = base.join(rel);
        let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::MissingData {
                dataset: name.into(),
                path: path.clone(),
                dir: data_dir.into(),
            },
            _ => Error::io(&path, e),
        })?;
        if let Some(expected) = def.sha256.get(&rel.to_string_lossy().to_string()) {
            let actual = hex(&Sha256::digest(&bytes));
            if !actual.eq_ignore_ascii_case(expected) {
                return Err(Error::Checksum {
                    dataset: name.into(),
                    path,
                    expected: expected.clone(),
                    actual,
                });
            }
        }
        Ok(bytes)
    };
    let read = |rel: &Path| -> Result<libsvm::LibsvmData> {
        libsvm::parse(&read_bytes(rel)?, &base.join(rel), def.dimension)
    };
    let feature_names = match &def.vocabulary {
        None => None,
        Some(rel) => {
            let text = String::from_utf8_lossy(&read_bytes(rel)?).into_owned();
            let words: Vec<String> = text.lines().map(str::to_string).collect();
            if words.len() != def.dimension {
                return Err(data_err(format!(
                    "vocabulary {} has {} lines for {} features",
                    rel.display(),
                    words.len(),
                    def.dimension
                )));
            }
            Some(words)
        }
    };
    let train = read(&def.train)?;
    let test = def.test.as_deref().map(read).transpose()?;
    let split = match (&test, def.train_fraction) {
        (Some(_), None) => SplitRule::Fixed {
            n_train: train.labels.len(),
        },
        (None, Some(f)) if f > 0.0 && f < 1.0 => SplitRule::Random { train_fraction: f },
        (None, Some(f)) => return Err(data_err(format!("train_fraction {f} is not in (0, 1)"))),
        (None, None) => return Err(data_err("needs `test` or `train_fraction`".into())),
        (Some(_), Some(_)) => {
            return Err(data_err("give `test` or `train_fraction`, not both".into()));
        }
    };

    let class_of = |label: i64| def.classes.iter().position(|c| c.label == label);
    let mut keep: Vec<(usize, u32, u16)> = Vec::new();
    for (part, file) in std::iter::once(&train).chain(test.iter()).enumerate() {
        for (i, &label) in file.labels.iter().enumerate() {
            match class_of(label) {
                Some(c) => keep.push((part, i as u32, c as u16)),
                None if def.subset => {}
                None => {
                    return Err(data_err(format!(
                        "label {label} (row {} of {}) is not among the catalog's classes",
                        i + 1,
                        if part == 0 {
                            def.train.display()
                        } else {
                            def.test.as_ref().expect("test").display()
                        }
                    )));
                }
            }
        }
    }
    let mut rng = rng_from(&["subsample", name, &def.subsample_seed.to_string()]);
    for (c, class) in def.classes.iter().enumerate() {
        if let Some(n) = class.subsample {
            let mut rows: Vec<usize> = (0..keep.len()).filter(|&k| keep[k].2 == c as u16).collect();
            if n > rows.len() {
                return Err(data_err(format!(
                    "cannot subsample class {} to {n}: it has {} rows",
                    class.name,
                    rows.len()
                )));
            }
            rows.shuffle(&mut rng);
            let mut drop = vec![false; keep.len()];
            for &k in &rows[n..] {
                drop[k] = true;
            }
            let mut k = 0;
            keep.retain(|_| {
                k += 1;
                !drop[k - 1]
            });
        }
    }

    let mut matrix = super::BinaryMatrix::new(def.dimension);
    let mut labels = Vec::with_capacity(keep.len());
    let mut n_train = 0;
    for &(part, i, c) in &keep {
        let file = if part == 0 {
            &train
        } else {
            test.as_ref().expect("test part")
        };
        matrix.push_row(file.features.row(i as usize));
        labels.push(c);
        n_train += usize::from(part == 0);
    }
    let split = match split {
        SplitRule::Fixed { .. } => SplitRule::Fixed { n_train },
        random => random,
    };
    Ok(Dataset {
        name: name.into(),
        title: def.title.clone().unwrap_or_else(|| name.into()),
        features: Features::Binary(matrix),
        labels,
        class_names: def.classes.iter().map(|c| c.name.clone()).collect(),
        feature_names,
        split,
    })
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_has_the_six_thesis_datasets() {
        let c = Catalog::builtin();
        for name in [
            "xwindows",
            "mushrooms",
            "adult",
            "newsgroup1",
            "newsgroup2",
            "newsgroup3",
        ] {
            assert!(c.get(name).is_some(), "{name} missing");
        }
    }

    #[test]
    fn unknown_fields_in_a_definition_are_rejected() {
        let bad = "source = \"toy_gaussian\"\ndimension = 2\ntrain = 4\ntest = 4\nsede = 1\n";
        let err = toml::from_str::<DatasetDef>(bad).unwrap_err().to_string();
        assert!(err.contains("sede"), "{err}");
    }
}
