//! The dataset catalog (`datasets/catalog.toml`, embedded in the binary) and dataset definitions.
//!
//! A definition says where the rows come from (LIBSVM files checked by SHA-256, or a synthetic
//! generator), how labels map to classes, and how the split is drawn. Specs may add their own
//! definitions inline with the same fields.

pub use super::scalar::{
    BetaDef, ContaminatedDef, CsvColumnDef, NoDataDef, StudentTDef, TableIDef, UniformDef,
};
pub use super::synthetic::{LogisticBallDef, NbProxyDef, NbSampledDef, ToyGaussianDef};
use super::{
    BinaryMatrix, Dataset, Features, PublicBounds, SplitRule, csv_source, files, libsvm, scalar,
    synthetic,
};
use crate::error::{Error, Result};
use crate::rng::rng_from;
use ndarray::Array2;
use rand::seq::SliceRandom;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod regression;

/// The catalog text shipped with the binary.
pub const CATALOG_TOML: &str = include_str!("../../datasets/catalog.toml");

/// Environment variable naming the data directory.
pub const DATA_ENV: &str = "EPSILAB_DATA";

/// Where dataset files are looked up: `--data-dir`, else `$EPSILAB_DATA`, else the datasets
/// shipped with epsilab ([`DataDir::shipped`]).
#[derive(Debug, Clone)]
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn resolve(cli: Option<PathBuf>) -> Self {
        cli.or_else(|| {
            std::env::var_os(DATA_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .map_or_else(Self::shipped, DataDir)
    }

    /// The shipped datasets: `./datasets` when run from the repository root, else the
    /// `datasets/` folder of the checkout epsilab was built from (so tests and a binary run
    /// from elsewhere find them too).
    pub fn shipped() -> Self {
        let local = PathBuf::from("datasets");
        if local.join("catalog.toml").is_file() {
            DataDir(local)
        } else {
            DataDir(Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"))
        }
    }
}

/// Declares [`DatasetDef`] and [`check_body`] from one list, so that a source's spec name,
/// variant and definition type are written once.
macro_rules! sources {
    ($($(#[$doc:meta])* $name:literal => $variant:ident($def:ty),)*) => {
        /// One dataset definition, tagged by `source`.
        #[derive(Debug, Clone, Deserialize)]
        #[serde(tag = "source")]
        pub enum DatasetDef {
            $($(#[$doc])* #[serde(rename = $name)] $variant($def),)*
        }

        /// Deserializes `body`, the fields of one `[dataset.NAME]` table with its `source` key
        /// removed, as the definition `source` names, for the parser's error and its position:
        /// an error in a `source`-tagged table is reported at the table's header, since the tag
        /// is read first. Ok for an unknown source (the tag's own error names it).
        pub fn check_body(source: &str, body: &str) -> std::result::Result<(), toml::de::Error> {
            match source {
                $($name => toml::from_str::<$def>(body).map(drop),)*
                _ => Ok(()),
            }
        }
    };
}

sources! {
    "libsvm" => Libsvm(LibsvmDef),
    "csv" => Csv(CsvDef),
    "toy_gaussian" => ToyGaussian(ToyGaussianDef),
    "logistic_ball" => LogisticBall(LogisticBallDef),
    "nb_sampled" => NbSampled(NbSampledDef),
    "nb_proxy" => NbProxy(NbProxyDef),
    "uniform" => Uniform(UniformDef),
    "beta" => Beta(BetaDef),
    "contaminated" => Contaminated(ContaminatedDef),
    "student_t" => StudentT(StudentTDef),
    "table_i" => TableI(TableIDef),
    "csv_column" => CsvColumn(CsvColumnDef),
    /// No rows.
    "none" => NoData(NoDataDef),
    /// Issue 49: a Gaussian mixture for k-means and PCA (`data::mixture`).
    "gaussian_mixture" => GaussianMixture(super::mixture::GaussianMixtureDef),
}

impl DatasetDef {
    /// (rows, features) when the definition states them (generated sources), so that sizing a
    /// plan never generates data; `None` for sources known only once read.
    pub fn size(&self) -> Option<(usize, usize)> {
        match self {
            DatasetDef::ToyGaussian(d) => Some((d.train.saturating_add(d.test), d.dimension)),
            DatasetDef::LogisticBall(d) => Some((d.train.saturating_add(d.test), d.dimension)),
            DatasetDef::NbSampled(d) => Some((d.train.saturating_add(d.test), d.dimension)),
            DatasetDef::GaussianMixture(d) => Some((d.train.saturating_add(d.test), d.dimension)),
            _ => None,
        }
    }

    /// The first field of the definition that cannot make a dataset, as (field, reason), the
    /// field relative to `[dataset.NAME]` (`theta[1]`, `classes[2].name`). Checked when a spec
    /// is read, so that a bad parameter is refused before any trial instead of panicking,
    /// exhausting memory or being silently clamped in the middle of a run.
    pub fn problem(&self) -> Option<(String, String)> {
        match self {
            DatasetDef::ToyGaussian(d) => {
                sizes_problem(d.dimension, d.train, d.test).or_else(|| {
                    let first = d.first_train();
                    (first == 0 || first > d.train).then(|| {
                        let why = format!("{first} must be in 1..=train ({})", d.train);
                        ("first_train".into(), why)
                    })
                })
            }
            DatasetDef::LogisticBall(d) => {
                sizes_problem(d.dimension, d.train, d.test).or_else(|| {
                    // s is the margin's standard deviation: a negative one would flip the model's
                    // sign, and NaN or an infinity gives no probabilities at all.
                    d.signal.filter(|s| !(s.is_finite() && *s >= 0.0)).map(|s| {
                        let why = format!(
                            "the margin's standard deviation must be finite and >= 0, got {s}"
                        );
                        ("signal".into(), why)
                    })
                })
            }
            DatasetDef::NbSampled(d) => sizes_problem(d.dimension, d.train, d.test)
                .or_else(|| nb_theta_problem(d.theta, d.jitter)),
            DatasetDef::NbProxy(d) => sizes_problem(1, d.train, d.test),
            DatasetDef::GaussianMixture(d) => too_large(d.train, d.test, d.dimension),
            DatasetDef::Uniform(super::scalar::UniformDef { n, .. })
            | DatasetDef::Beta(super::scalar::BetaDef { n, .. })
            | DatasetDef::Contaminated(super::scalar::ContaminatedDef { n, .. })
            | DatasetDef::StudentT(super::scalar::StudentTDef { n, .. }) => {
                super::size_problem(*n as u64, 1).map(|r| ("n".into(), r))
            }
            DatasetDef::Csv(d) => {
                duplicate(d.features.as_deref().unwrap_or_default(), |a, b| a == b)
                    .map(|(i, j)| {
                        let why = format!("repeats features[{j}]: each column is a feature once");
                        (format!("features[{i}]"), why)
                    })
                    .or_else(|| classes_problem(&d.classes))
                    .or_else(|| stray_checksum(&d.sha256, &[Some(&d.train), d.test.as_ref()]))
                    .or_else(|| {
                        bounds_problem(d.bounds.as_ref(), d.features.as_ref().map(Vec::len))
                    })
            }
            DatasetDef::Libsvm(d) => classes_problem(&d.classes)
                .or_else(|| {
                    let files = [Some(&d.train), d.test.as_ref(), d.vocabulary.as_ref()];
                    stray_checksum(&d.sha256, &files)
                })
                .or_else(|| bounds_problem(d.bounds.as_ref(), Some(d.dimension))),
            DatasetDef::CsvColumn(d) => stray_checksum(&d.sha256, &[Some(&d.file)]),
            _ => None,
        }
    }

    /// Whether the training set's size N is public, and why: generated sources fix it in
    /// their definition; a file source declares it with `public_n` (checked against the data
    /// when a cell runs); `None` when nothing declares it (then N is private under add/remove).
    pub fn public_train(&self) -> Option<PublicTrain> {
        match self {
            DatasetDef::Libsvm(d) => d.public_n.map(PublicTrain::Declared),
            DatasetDef::Csv(d) => d.public_n.map(PublicTrain::Declared),
            DatasetDef::CsvColumn(d) => d.public_n.map(PublicTrain::Declared),
            DatasetDef::NoData(_) => None,
            _ => Some(PublicTrain::Generated),
        }
    }

    /// The display title the definition gives, if any.
    pub fn title(&self) -> Option<&str> {
        match self {
            DatasetDef::Libsvm(d) => d.title.as_deref(),
            DatasetDef::Csv(d) => d.title.as_deref(),
            DatasetDef::ToyGaussian(d) => d.title.as_deref(),
            DatasetDef::LogisticBall(d) => d.title.as_deref(),
            DatasetDef::NbSampled(d) => d.title.as_deref(),
            DatasetDef::NbProxy(d) => d.title.as_deref(),
            DatasetDef::Uniform(d) => d.title.as_deref(),
            DatasetDef::Beta(d) => d.title.as_deref(),
            DatasetDef::Contaminated(d) => d.title.as_deref(),
            DatasetDef::StudentT(d) => d.title.as_deref(),
            DatasetDef::TableI(d) => d.title.as_deref(),
            DatasetDef::CsvColumn(d) => d.title.as_deref(),
            DatasetDef::NoData(d) => d.title.as_deref(),
            DatasetDef::GaussianMixture(d) => d.title.as_deref(),
        }
    }
}

/// A generated source with no training or test rows, no features, or more values than
/// memory holds ([`super::size_problem`]).
fn sizes_problem(dimension: usize, train: usize, test: usize) -> Option<(String, String)> {
    let zero = [("dimension", dimension), ("train", train), ("test", test)]
        .into_iter()
        .find(|&(_, v)| v == 0);
    if let Some((field, _)) = zero {
        return Some((field.into(), "must be at least 1".into()));
    }
    too_large(train, test, dimension)
}

/// [`super::size_problem`] of `train + test` rows of `dimension` features, naming `train` or
/// `dimension`, whichever is the larger factor.
fn too_large(train: usize, test: usize, dimension: usize) -> Option<(String, String)> {
    let (rows, cols) = ((train as u64).saturating_add(test as u64), dimension as u64);
    let field = if rows > u64::from(u32::MAX) || rows >= cols {
        "train"
    } else {
        "dimension"
    };
    super::size_problem(rows, cols).map(|r| (field.into(), r))
}

/// `nb_sampled`'s per-class theta and relative jitter: every feature's probability
/// theta_c (1 + U(-jitter, jitter)) must stay in [0, 1] (it was clamped, silently changing the
/// model the spec states).
fn nb_theta_problem(theta: [f64; 2], jitter: f64) -> Option<(String, String)> {
    if let Some(c) = theta.iter().position(|t| !(0.0..=1.0).contains(t)) {
        let why = format!("a probability must be in [0, 1], got {}", theta[c]);
        return Some((format!("theta[{c}]"), why));
    }
    if !(0.0..=1.0).contains(&jitter) {
        let why = format!("a relative jitter must be in [0, 1], got {jitter}");
        return Some(("jitter".into(), why));
    }
    let c = theta.iter().position(|t| t * (1.0 + jitter) > 1.0)?;
    let why = format!(
        "theta[{c}] = {} with jitter {jitter} reaches {}, above 1: lower jitter to at most {} \
         (or set it to 0)",
        theta[c],
        theta[c] * (1.0 + jitter),
        1.0 / theta[c] - 1.0
    );
    Some(("jitter".into(), why))
}

/// Two classes of one name or one label: rows of the second could never be told from the
/// first (a repeated label also made every row's lookup report a misleading mismatch).
fn classes_problem(classes: &[ClassDef]) -> Option<(String, String)> {
    if let Some((i, j)) = duplicate(classes, |a, b| a.name == b.name) {
        let why = format!("`{}` is already the name of classes[{j}]", classes[i].name);
        return Some((format!("classes[{i}].name"), why));
    }
    duplicate(classes, |a, b| a.label.same(&b.label)).map(|(i, j)| {
        let why = format!(
            "label `{}` is already classes[{j}]'s: a row's label names one class",
            classes[i].label
        );
        (format!("classes[{i}].label"), why)
    })
}

/// A `sha256` key that names none of the definition's `files` (as written): its checksum
/// would never be checked, so a typo in the path would leave the file unverified in silence.
fn stray_checksum(
    sha256: &BTreeMap<String, String>,
    files: &[Option<&PathBuf>],
) -> Option<(String, String)> {
    let files: Vec<String> = (files.iter().flatten())
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    let key = sha256.keys().find(|k| !files.contains(k))?;
    let why = format!(
        "`{key}` is not a file of this dataset (its files: {}), so its checksum would never be \
         checked",
        files.join(", ")
    );
    Some((format!("sha256.\"{key}\""), why))
}

/// Public `bounds` that cannot serve the definition's features: a pair that is not finite
/// with lo < hi, or per-feature pairs of another count than `dimension` where the definition
/// fixes it (a LIBSVM `dimension`, a CSV `features` list), so the spec is refused before a
/// file is read.
fn bounds_problem(
    bounds: Option<&BoundsDef>,
    dimension: Option<usize>,
) -> Option<(String, String)> {
    let b = bounds?;
    let listed = match b {
        BoundsDef::All(_) => 1,
        BoundsDef::PerFeature(v) => v.len(),
    };
    let why = b.resolve(dimension.unwrap_or(listed)).err()?;
    Some(("bounds".into(), why))
}

/// The first (i, j), j < i, whose items are the same by `same`.
fn duplicate<T>(items: &[T], same: impl Fn(&T, &T) -> bool) -> Option<(usize, usize)> {
    (0..items.len()).find_map(|i| {
        items[..i]
            .iter()
            .position(|b| same(&items[i], b))
            .map(|j| (i, j))
    })
}

/// How a dataset definition makes its training-set size public ([`DatasetDef::public_train`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublicTrain {
    /// A generated source: its size fields are part of the definition.
    Generated,
    /// `public_n = N` in the definition: the training split must have exactly N rows.
    Declared(usize),
}

source_def! { file
    /// Rows from LIBSVM files.
    LibsvmDef {
        pub dimension: usize,
        /// Classes in order; `label` as written in the file.
        pub classes: Vec<ClassDef>,
        /// Feature names, one per line (line i names feature i).
        pub vocabulary: Option<PathBuf>,
    }
}

source_def! { file
    /// Rows from CSV files: one label column, numeric feature columns.
    CsvDef {
        /// The label column: a header name, or a column number counted from 1.
        pub label: Column,
        /// Feature columns in order [default: every column but the label].
        pub features: Option<Vec<Column>>,
        /// Whether the first line names the columns.
        #[serde(default = "yes")]
        pub header: bool,
        /// Field separator, one ASCII character ("\t" for tabs) [default: ","].
        pub delimiter: Option<String>,
        /// Classes in order; `label` as written in the label column (text or number). Empty (or
        /// absent) only with `target_bounds`.
        #[serde(default)]
        pub classes: Vec<ClassDef>,
        /// Public `[lo, hi]` of a real-valued regression target: the `label` column is then that
        /// target (read as a number, clipped to these bounds), `classes` must be empty and every
        /// row belongs to one class. Like `bounds`, part of the mechanism's definition, not the
        /// data's.
        pub target_bounds: Option<[f64; 2]>,
    }
}

fn yes() -> bool {
    true
}

/// A CSV column: by header name or by number (from 1).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a column: its header name (text) or its number from 1"
)]
pub enum Column {
    Number(usize),
    Name(String),
}

/// A class label as written in a file: a number (LIBSVM, CSV) or text (CSV).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, expecting = "expected a class label: an integer or text")]
pub enum Label {
    Int(i64),
    Text(String),
}

impl Label {
    fn matches_int(&self, v: i64) -> bool {
        match self {
            Label::Int(i) => *i == v,
            Label::Text(t) => t.trim().parse::<i64>() == Ok(v),
        }
    }

    /// Whether a label in a file could match both: the same number or text, or a text
    /// spelling of the number.
    fn same(&self, other: &Label) -> bool {
        match (self, other) {
            (Label::Int(a), Label::Int(b)) => a == b,
            (Label::Text(a), Label::Text(b)) => a == b,
            (Label::Int(i), Label::Text(t)) | (Label::Text(t), Label::Int(i)) => {
                t.trim().parse::<i64>() == Ok(*i) || Label::Int(*i).matches_text(t)
            }
        }
    }

    fn matches_text(&self, s: &str) -> bool {
        match self {
            Label::Text(t) => t == s,
            Label::Int(i) => s.parse::<f64>().is_ok_and(|v| v == *i as f64),
        }
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Int(i) => write!(f, "{i}"),
            Label::Text(t) => write!(f, "{t}"),
        }
    }
}

/// Public bounds of real-valued features: `[lo, hi]` for all, or one `[lo, hi]` per feature.
///
/// They must not be derived from the data: they are part of the mechanism's definition
/// (e.g. the instrument's range, a domain limit), so clipping each value to them is a
/// per-example map with public constants and keeps every guarantee.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    expecting = "expected one [lo, hi] pair for all features, or a list of [lo, hi] pairs, one per feature"
)]
pub enum BoundsDef {
    All([f64; 2]),
    PerFeature(Vec<[f64; 2]>),
}

impl BoundsDef {
    /// Lower and upper bound per feature; an error names the bad entry.
    pub fn resolve(&self, dimension: usize) -> std::result::Result<(Vec<f64>, Vec<f64>), String> {
        let pairs: Vec<[f64; 2]> = match self {
            BoundsDef::All(b) => vec![*b; dimension],
            BoundsDef::PerFeature(v) if v.len() == dimension => v.clone(),
            BoundsDef::PerFeature(v) => {
                return Err(format!(
                    "`bounds` lists {} [lo, hi] pairs for {dimension} features (give one pair \
                     per feature, or a single [lo, hi] for all)",
                    v.len()
                ));
            }
        };
        for (j, [lo, hi]) in pairs.iter().enumerate() {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(format!(
                    "`bounds` of feature {}: [{lo}, {hi}] must be finite with lo < hi",
                    j + 1
                ));
            }
        }
        Ok(pairs.iter().map(|b| (b[0], b[1])).unzip())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassDef {
    pub label: Label,
    pub name: String,
    /// Keep this many rows of the class, chosen at random with `subsample_seed`.
    pub subsample: Option<usize>,
}

/// The built-in catalog plus any definitions added by a spec.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Name → (definition, folder its relative paths are resolved against; None = data dir).
    entries: BTreeMap<String, (DatasetDef, Option<PathBuf>)>,
    /// Name → the spec file defining it, for a spec's dataset: a missing file of it is an
    /// error naming that file and the field (`dataset.NAME.train`).
    origins: BTreeMap<String, PathBuf>,
}

impl Catalog {
    /// The embedded catalog.
    pub fn builtin() -> Self {
        let raw: BTreeMap<String, DatasetDef> =
            toml::from_str(CATALOG_TOML).expect("embedded datasets/catalog.toml is valid");
        Catalog {
            entries: raw.into_iter().map(|(k, v)| (k, (v, None))).collect(),
            origins: BTreeMap::new(),
        }
    }

    /// Adds (or overrides) a definition whose relative paths resolve against `base`.
    pub fn insert(&mut self, name: &str, def: DatasetDef, base: Option<PathBuf>) {
        self.entries.insert(name.to_string(), (def, base));
        self.origins.remove(name);
    }

    /// [`Self::insert`] of a definition in the spec file `spec`, whose paths are relative to
    /// its folder.
    pub fn insert_from(&mut self, name: &str, def: DatasetDef, spec: &Path) {
        self.insert(name, def, spec.parent().map(Path::to_path_buf));
        self.origins.insert(name.to_string(), spec.to_path_buf());
    }

    /// An error loading `name`, a spec's dataset, as a spec error naming the spec file and
    /// the field: a missing file by the field that names it (`dataset.NAME.train`, `.test`,
    /// `.vocabulary` or `.file`); a checksum mismatch as one of the spec's `sha256` (the
    /// catalog's wording would blame the catalog); a refused value by its field where the
    /// reason names one ([`data_field`]), else as `dataset.NAME`. A catalog dataset's error is
    /// returned as it is.
    fn in_spec(&self, name: &str, e: Error) -> Error {
        let Some(file) = self.origins.get(name) else {
            return e;
        };
        let spec_error = |field: Option<&str>, reason: String| Error::Spec {
            file: file.clone(),
            field: field.map_or_else(
                || format!("dataset.{name}"),
                |f| format!("dataset.{name}.{f}"),
            ),
            reason,
        };
        match e {
            Error::Data { reason, .. } => {
                let field = data_field(&reason);
                let prefix = field.map(|f| format!("`{f}`: "));
                let reason = match prefix.as_deref().and_then(|p| reason.strip_prefix(p)) {
                    Some(rest) => rest.to_string(),
                    None => reason,
                };
                spec_error(field, reason)
            }
            Error::Parse { path, line, reason } => {
                let field = [("label column", "label"), ("feature column", "features")]
                    .into_iter()
                    .find_map(|(lead, f)| reason.starts_with(lead).then_some(f));
                spec_error(field, format!("{}:{line}: {reason}", path.display()))
            }
            e => self.missing_in_spec(e),
        }
    }

    /// [`Self::in_spec`] for a missing file or a checksum mismatch.
    fn missing_in_spec(&self, e: Error) -> Error {
        if let Error::Checksum {
            dataset,
            path,
            expected,
            actual,
        } = &e
            && let Some(file) = self.origins.get(dataset)
        {
            return Error::Spec {
                file: file.clone(),
                field: format!("dataset.{dataset}.sha256"),
                reason: format!(
                    "{} has SHA-256 {actual}, the spec's checksum is {expected}: the file is \
                     corrupt or a different version, or the checksum is wrong",
                    path.display()
                ),
            };
        }
        let Error::MissingData { dataset, path, .. } = &e else {
            return e;
        };
        let (Some(file), Some((def, _))) = (self.origins.get(dataset), self.entries.get(dataset))
        else {
            return e;
        };
        let rel = |p: &PathBuf| path.ends_with(p);
        let field = match def {
            DatasetDef::Libsvm(d) => [
                ("train", Some(&d.train)),
                ("test", d.test.as_ref()),
                ("vocabulary", d.vocabulary.as_ref()),
            ]
            .into_iter()
            .find_map(|(f, p)| p.is_some_and(rel).then_some(f)),
            DatasetDef::Csv(d) => [("train", Some(&d.train)), ("test", d.test.as_ref())]
                .into_iter()
                .find_map(|(f, p)| p.is_some_and(rel).then_some(f)),
            DatasetDef::CsvColumn(_) => Some("file"),
            _ => None,
        };
        Error::Spec {
            file: file.clone(),
            field: field.map_or_else(
                || format!("dataset.{dataset}"),
                |f| format!("dataset.{dataset}.{f}"),
            ),
            reason: e.to_string(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&DatasetDef> {
        self.entries.get(name).map(|(d, _)| d)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Loads a dataset: reads and checks its files, or generates it.
    pub fn load(&self, name: &str, dir: &DataDir) -> Result<Dataset> {
        self.load_for(name, dir, None)
    }

    /// As [`Self::load`] for a plan whose cells read at most `max_n_train` training rows: a
    /// grown toy Gaussian whose first block covers them is generated without its later rows
    /// (8.5 GB at D = 1000, N = 2^20), which are drawn after the test rows and so change
    /// neither the rows, the test set nor the nested subsets of the first block.
    pub fn load_for(
        &self,
        name: &str,
        dir: &DataDir,
        max_n_train: Option<usize>,
    ) -> Result<Dataset> {
        self.load_sized(name, dir, max_n_train)
            .map_err(|e| self.in_spec(name, e))
    }

    fn load_sized(&self, name: &str, dir: &DataDir, max_n_train: Option<usize>) -> Result<Dataset> {
        // A spec refuses these when read; a caller loading a definition directly is refused
        // here, before anything is generated.
        if let Some((field, reason)) = self.get(name).and_then(DatasetDef::problem) {
            return Err(Error::Data {
                dataset: name.into(),
                reason: format!("`{field}`: {reason}"),
            });
        }
        if let (Some(DatasetDef::ToyGaussian(d)), Some(m)) = (self.get(name), max_n_train)
            && m <= d.first_train()
            && d.first_train() < d.train
        {
            let head = synthetic::ToyGaussianDef {
                train: d.first_train(),
                first_train: None,
                ..d.clone()
            };
            let title = d.title.clone().unwrap_or_else(|| name.to_string());
            return synthetic::toy_gaussian(name, &title, &head);
        }
        self.load_unbounded(name, dir)
    }

    fn load_unbounded(&self, name: &str, dir: &DataDir) -> Result<Dataset> {
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
            DatasetDef::Csv(d) => load_csv(name, d, base, &dir.0),
            DatasetDef::ToyGaussian(d) => synthetic::toy_gaussian(name, &title(&d.title), d),
            DatasetDef::LogisticBall(d) => Ok(synthetic::logistic_ball(name, &title(&d.title), d)),
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
            DatasetDef::Uniform(d) => scalar::uniform(name, &title(&d.title), d),
            DatasetDef::Beta(d) => scalar::beta(name, &title(&d.title), d),
            DatasetDef::Contaminated(d) => scalar::contaminated(name, &title(&d.title), d),
            DatasetDef::StudentT(d) => scalar::student_t(name, &title(&d.title), d),
            DatasetDef::TableI(d) => Ok(scalar::table_i(name, &title(&d.title))),
            DatasetDef::NoData(d) => Ok(scalar::no_data(name, &title(&d.title))),
            DatasetDef::CsvColumn(d) => scalar::csv_column(name, &title(&d.title), d, base, dir),
            DatasetDef::GaussianMixture(d) => {
                super::mixture::gaussian_mixture(name, &title(&d.title), d)
            }
        }
    }
}

/// The fields a file-backed dataset (LIBSVM or CSV) shares.
struct FileSet<'a> {
    name: &'a str,
    title: &'a Option<String>,
    train: &'a Path,
    test: Option<&'a Path>,
    train_fraction: Option<f64>,
    classes: &'a [ClassDef],
    subset: bool,
    subsample_seed: u64,
    sha256: &'a BTreeMap<String, String>,
    bounds: Option<&'a BoundsDef>,
}

/// One parsed file: the class of each row (`None` = unlisted label, dropped by `subset`) and
/// its features.
struct Part {
    classes: Vec<Option<u16>>,
    features: libsvm::RawFeatures,
}

impl FileSet<'_> {
    fn err(&self, reason: String) -> Error {
        Error::Data {
            dataset: self.name.into(),
            reason,
        }
    }

    /// Reads `rel` (plain or `.gz`) and checks its SHA-256 (of the decompressed bytes).
    fn read_bytes(&self, rel: &Path, base: &Path, data_dir: &Path) -> Result<(Vec<u8>, PathBuf)> {
        let path = base.join(rel);
        let found = files::locate(&path).ok_or_else(|| Error::MissingData {
            dataset: self.name.into(),
            path: path.clone(),
            dir: data_dir.into(),
        })?;
        let bytes = files::read(&found).map_err(|e| Error::io(&found, e))?;
        if let Some(expected) = self.sha256.get(&rel.to_string_lossy().to_string()) {
            let actual = files::sha256_hex(&bytes);
            if !actual.eq_ignore_ascii_case(expected) {
                return Err(Error::Checksum {
                    dataset: self.name.into(),
                    path: found,
                    expected: expected.clone(),
                    actual,
                });
            }
        }
        Ok((bytes, found))
    }

    /// Maps each row's label to its class; an unlisted label is an error unless `subset`.
    fn classes_of<L: std::fmt::Display>(
        &self,
        labels: &[L],
        matches: impl Fn(&Label, &L) -> bool,
        file: &Path,
    ) -> Result<Vec<Option<u16>>> {
        labels
            .iter()
            .enumerate()
            .map(
                |(i, l)| match self.classes.iter().position(|c| matches(&c.label, l)) {
                    Some(c) => Ok(Some(c as u16)),
                    None if self.subset => Ok(None),
                    None => Err(self.err(format!(
                        "label `{l}` (row {} of {}) is not among the dataset's classes ({})",
                        i + 1,
                        file.display(),
                        self.classes
                            .iter()
                            .map(|c| c.label.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))),
                },
            )
            .collect()
    }

    /// Drops rows of the classes with a `subsample` size, chosen by the dataset's fixed seed.
    fn subsample(&self, keep: &mut Vec<(usize, u32, u16)>) -> Result<()> {
        let mut rng = rng_from(&["subsample", self.name, &self.subsample_seed.to_string()]);
        for (c, class) in self.classes.iter().enumerate() {
            if let Some(n) = class.subsample {
                let mut rows: Vec<usize> =
                    (0..keep.len()).filter(|&k| keep[k].2 == c as u16).collect();
                if n > rows.len() {
                    return Err(self.err(format!(
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
        Ok(())
    }

    /// The kept rows' features: a sparse binary matrix, or dense values clipped to the public
    /// bounds (with the count of clipped values per row).
    fn features(
        &self,
        parts: &[(Part, PathBuf)],
        keep: &[(usize, u32, u16)],
        dimension: usize,
    ) -> Result<(Features, Option<PublicBounds>)> {
        Ok(match self.bounds {
            None => {
                let mut matrix = BinaryMatrix::new(dimension);
                for &(p, i, _) in keep {
                    match &parts[p].0.features {
                        libsvm::RawFeatures::Binary(m) => matrix.push_row(m.row(i as usize)),
                        libsvm::RawFeatures::Real { .. } => {
                            unreachable!("files are read as binary without bounds")
                        }
                    }
                }
                (Features::Binary(matrix), None)
            }
            Some(b) => {
                let (lo, hi) = b.resolve(dimension).map_err(|r| self.err(r))?;
                let n = keep.len();
                let mut x = Array2::zeros((n, dimension));
                let mut clipped = Vec::with_capacity(n);
                for (r, &(p, i, _)) in keep.iter().enumerate() {
                    let libsvm::RawFeatures::Real { values, .. } = &parts[p].0.features else {
                        unreachable!("files are read as real with bounds")
                    };
                    let src = &values[i as usize * dimension..(i as usize + 1) * dimension];
                    let mut k = 0u32;
                    for (j, &v) in src.iter().enumerate() {
                        let c = v.clamp(lo[j], hi[j]);
                        k += u32::from(c != v);
                        x[[r, j]] = c;
                    }
                    clipped.push(k);
                }
                (
                    Features::Dense(x.into()),
                    Some(PublicBounds { lo, hi, clipped }),
                )
            }
        })
    }

    /// The split the definition asks for (a fixed split's size is set once rows are counted).
    fn split_rule(&self) -> Result<SplitRule> {
        Ok(match (self.test, self.train_fraction) {
            (Some(_), None) => SplitRule::Fixed { n_train: 0 },
            (None, Some(f)) if f > 0.0 && f < 1.0 => SplitRule::Random { train_fraction: f },
            (None, Some(f)) => {
                return Err(self.err(format!("train_fraction {f} is not in (0, 1)")));
            }
            (None, None) => return Err(self.err("needs `test` or `train_fraction`".into())),
            (Some(_), Some(_)) => {
                return Err(self.err("give `test` or `train_fraction`, not both".into()));
            }
        })
    }

    /// Refuses a split that leaves the training or test set, or a class's training rows, empty
    /// (`keep`: the (part, row, class) of every row kept).
    fn check_split(
        &self,
        split: SplitRule,
        parts: &[(Part, PathBuf)],
        keep: &[(usize, u32, u16)],
    ) -> Result<()> {
        let n_train = keep.iter().filter(|k| k.0 == 0).count();
        let n = keep.len();
        let train_file = &parts[0].1;
        match split {
            SplitRule::Fixed { .. } | SplitRule::Grown { .. } => {
                let test_file = &parts[1].1;
                if n_train == 0 {
                    return Err(self.err(format!(
                        "the training set is empty: no row of {} has a listed class",
                        train_file.display()
                    )));
                }
                if n == n_train {
                    return Err(self.err(format!(
                        "the test set is empty: no row of {} has a listed class",
                        test_file.display()
                    )));
                }
                if let Some(c) = self.class_without_rows(keep.iter().filter(|k| k.0 == 0)) {
                    return Err(self.err(format!(
                        "class `{}` (label {}) has no training rows in {}",
                        c.name,
                        c.label,
                        train_file.display()
                    )));
                }
            }
            SplitRule::Random { train_fraction } => {
                let n_tr = (train_fraction * n as f64).round() as usize;
                if n_tr == 0 || n_tr == n {
                    return Err(self.err(format!(
                        "{} has {n} usable rows: a {train_fraction} split leaves the training or \
                     the test set empty",
                        train_file.display()
                    )));
                }
                if n_tr < self.classes.len() {
                    return Err(self.err(format!(
                        "{} has {n} usable rows: a {train_fraction} split trains on {n_tr}, \
                     fewer than the {} classes, so a class has no training rows",
                        train_file.display(),
                        self.classes.len()
                    )));
                }
                if let Some(c) = self.class_without_rows(keep.iter()) {
                    return Err(self.err(format!(
                        "class `{}` (label {}) has no rows in {}, so no training rows",
                        c.name,
                        c.label,
                        train_file.display()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The first class with no row among the kept `rows` ((part, row, class)): a class the
    /// split could never train on.
    fn class_without_rows<'k>(
        &self,
        rows: impl Iterator<Item = &'k (usize, u32, u16)>,
    ) -> Option<&ClassDef> {
        let mut per_class = vec![0usize; self.classes.len()];
        for k in rows {
            per_class[k.2 as usize] += 1;
        }
        let c = per_class.iter().position(|&m| m == 0)?;
        Some(&self.classes[c])
    }

    /// Checks the parts, subsamples classes, assembles the shared matrix and applies bounds.
    fn assemble(
        &self,
        parts: Vec<(Part, PathBuf)>,
        dimension: usize,
        feature_names: Option<Vec<String>>,
    ) -> Result<Dataset> {
        for (part, file) in &parts {
            if part.features.n_rows() == 0 {
                return Err(self.err(format!("{} is empty: it has no rows", file.display())));
            }
        }
        if self.classes.is_empty() {
            return Err(self.err("`classes` lists no class".into()));
        }
        let split = self.split_rule()?;
        let mut keep: Vec<(usize, u32, u16)> = Vec::new();
        for (p, (part, _)) in parts.iter().enumerate() {
            for (i, c) in part.classes.iter().enumerate() {
                if let Some(c) = c {
                    keep.push((p, i as u32, *c));
                }
            }
        }
        self.subsample(&mut keep)?;
        let n_train = keep.iter().filter(|k| k.0 == 0).count();
        self.check_split(split, &parts, &keep)?;
        let split = match split {
            SplitRule::Fixed { .. } => SplitRule::Fixed { n_train },
            random => random,
        };
        let labels: Vec<u16> = keep.iter().map(|k| k.2).collect();
        let (features, bounds) = self.features(&parts, &keep, dimension)?;
        Ok(Dataset {
            feature_names,
            bounds,
            ..Dataset::new(
                self.name.into(),
                self.title.clone().unwrap_or_else(|| self.name.into()),
                features,
                labels,
                self.classes.iter().map(|c| c.name.clone()).collect(),
                split,
            )
        })
    }
}

/// The [`FileSet`] of a LIBSVM or CSV definition (both name these fields alike).
macro_rules! file_set {
    ($name:expr, $def:expr) => {
        FileSet {
            name: $name,
            title: &$def.title,
            train: &$def.train,
            test: $def.test.as_deref(),
            train_fraction: $def.train_fraction,
            classes: &$def.classes,
            subset: $def.subset,
            subsample_seed: $def.subsample_seed,
            sha256: &$def.sha256,
            bounds: $def.bounds.as_ref(),
        }
    };
}

fn load_libsvm(name: &str, def: &LibsvmDef, base: &Path, data_dir: &Path) -> Result<Dataset> {
    let set = file_set!(name, def);
    let real = def.bounds.is_some();
    let feature_names = match &def.vocabulary {
        None => None,
        Some(rel) => {
            let (bytes, _) = set.read_bytes(rel, base, data_dir)?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let words: Vec<String> = text.lines().map(str::to_string).collect();
            if words.len() != def.dimension {
                return Err(set.err(format!(
                    "vocabulary {} has {} lines for {} features",
                    rel.display(),
                    words.len(),
                    def.dimension
                )));
            }
            Some(words)
        }
    };
    let mut parts = Vec::new();
    for rel in std::iter::once(set.train).chain(set.test) {
        let (bytes, found) = set.read_bytes(rel, base, data_dir)?;
        let data = libsvm::parse(&bytes, &found, def.dimension, real)?;
        let classes = set.classes_of(&data.labels, |c, &l| c.matches_int(l), &found)?;
        parts.push((
            Part {
                classes,
                features: data.features,
            },
            found,
        ));
    }
    set.assemble(parts, def.dimension, feature_names)
}

fn load_csv(name: &str, def: &CsvDef, base: &Path, data_dir: &Path) -> Result<Dataset> {
    let one_class = regression::one_class();
    let mut set = file_set!(name, def);
    if let Some(b) = def.target_bounds {
        regression::check_def(&set, def, b)?;
        set.classes = &one_class;
    } else if def.classes.is_empty() {
        return Err(set.err(
            "`classes` is empty: list each label of the label column, e.g. classes = \
             [{ label = \"yes\", name = \"yes\" }, { label = \"no\", name = \"no\" }], or \
             give `target_bounds` for a regression target"
                .into(),
        ));
    }
    let mut targets = Vec::new();
    let delimiter = match def.delimiter.as_deref().unwrap_or(",") {
        "\\t" | "\t" => b'\t',
        d if d.len() == 1 && d.is_ascii() => d.as_bytes()[0],
        d => {
            return Err(set.err(format!(
                "`delimiter` must be one ASCII character (or \"\\t\"), found `{d}`"
            )));
        }
    };
    let layout = csv_source::CsvLayout {
        label: &def.label,
        features: def.features.as_deref(),
        header: def.header,
        delimiter,
        delimiter_field: true,
        real: def.bounds.is_some(),
    };
    let mut parts = Vec::new();
    let mut names: Option<Vec<String>> = None;
    for rel in std::iter::once(set.train).chain(set.test) {
        let (bytes, found) = set.read_bytes(rel, base, data_dir)?;
        let data = csv_source::parse(&bytes, &found, &layout)?;
        match &names {
            None => names = Some(data.feature_names.clone()),
            Some(n) if *n != data.feature_names => {
                return Err(set.err(format!(
                    "{} has feature columns {:?}, the training file {:?}",
                    found.display(),
                    data.feature_names,
                    n
                )));
            }
            Some(_) => {}
        }
        let classes = match def.target_bounds {
            None => set.classes_of(&data.labels, |c, l| c.matches_text(l), &found)?,
            Some(b) => {
                targets.extend(regression::parse_targets(&set, &data.labels, b, &found)?);
                vec![Some(0); data.labels.len()]
            }
        };
        parts.push((
            Part {
                classes,
                features: data.features,
            },
            found,
        ));
    }
    let names = names.unwrap_or_default();
    let dimension = names.len();
    let mut data = set.assemble(parts, dimension, def.header.then_some(names))?;
    if let Some([lo, hi]) = def.target_bounds {
        data.targets = Some(super::Targets {
            values: targets,
            lo,
            hi,
        });
    }
    Ok(data)
}

impl Catalog {
    /// SHA-256 of each input file of a dataset, by path as written in its definition: the
    /// catalog's pinned checksum where it has one (of the decompressed content; loading
    /// verifies it), else the hash of the file's bytes as found (`path`, else `path.gz`). A
    /// derived dataset lists its source's files under `SOURCE/`; generated data has none. The
    /// results store pins these so a changed file is never silently reused.
    pub fn input_hashes(&self, name: &str, dir: &DataDir) -> Result<BTreeMap<String, String>> {
        self.file_hashes(name, dir)
            .map_err(|e| self.in_spec(name, e))
    }

    fn file_hashes(&self, name: &str, dir: &DataDir) -> Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let Some((def, base)) = self.entries.get(name) else {
            return Ok(out);
        };
        let base = base.as_deref().unwrap_or(&dir.0);
        let (files, pinned): (Vec<&PathBuf>, _) = match def {
            DatasetDef::Libsvm(d) => (
                std::iter::once(&d.train)
                    .chain(&d.test)
                    .chain(&d.vocabulary)
                    .collect(),
                &d.sha256,
            ),
            DatasetDef::Csv(d) => (
                std::iter::once(&d.train).chain(&d.test).collect(),
                &d.sha256,
            ),
            DatasetDef::CsvColumn(d) => (vec![&d.file], &d.sha256),
            DatasetDef::NbProxy(d) if d.of != name => {
                for (k, v) in self.input_hashes(&d.of, dir)? {
                    out.insert(format!("{}/{k}", d.of), v);
                }
                return Ok(out);
            }
            _ => return Ok(out),
        };
        for rel in files {
            let key = rel.to_string_lossy().to_string();
            let sha = match pinned.get(&key) {
                Some(sha) => sha.to_ascii_lowercase(),
                None => {
                    let path = base.join(rel);
                    let found = files::locate(&path).ok_or_else(|| Error::MissingData {
                        dataset: name.into(),
                        path: path.clone(),
                        dir: dir.0.clone(),
                    })?;
                    let bytes = std::fs::read(&found).map_err(|e| Error::io(&found, e))?;
                    files::sha256_hex(&bytes)
                }
            };
            out.insert(key, sha);
        }
        Ok(out)
    }
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The dataset field a load error's reason is about, where it says: a backticked field at
/// its start (`` `bounds`: ... ``), or a reason that opens with the field's name.
fn data_field(reason: &str) -> Option<&'static str> {
    const FIELDS: [&str; 4] = ["train_fraction", "delimiter", "classes", "bounds"];
    // Named only in backticks: a bare `train ` or `test ` may begin any sentence.
    const QUOTED: [&str; 5] = ["clusters", "dimension", "train", "test", "spread"];
    let quoted = |f: &&str| reason.starts_with(&format!("`{f}`"));
    FIELDS
        .into_iter()
        .find(|f| quoted(f) || reason.starts_with(&format!("{f} ")))
        .or_else(|| QUOTED.into_iter().find(quoted))
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
    fn a_generated_definition_states_the_size_it_generates() {
        // The partition of a sharded run sizes these from the definition without generating
        // them; a different size would deal the groups to other shards.
        let mut c = Catalog::builtin();
        for (name, def) in [
            (
                "toy",
                "source = \"toy_gaussian\"\ndimension = 3\ntrain = 40\nfirst_train = 10\ntest = 7\n",
            ),
            (
                "ball",
                "source = \"logistic_ball\"\ndimension = 4\ntrain = 30\ntest = 5\n",
            ),
            (
                "nb",
                "source = \"nb_sampled\"\ndimension = 6\ntheta = [0.8, 0.5]\ntrain = 20\ntest = 9\n",
            ),
        ] {
            c.insert(name, toml::from_str::<DatasetDef>(def).unwrap(), None);
        }
        let dir = DataDir(std::env::temp_dir());
        for name in ["toy", "ball", "nb"] {
            let data = c.load(name, &dir).unwrap();
            let size = c.get(name).unwrap().size();
            assert_eq!(size, Some((data.n_rows(), data.n_features())), "{name}");
        }
        assert_eq!(c.get("adult").unwrap().size(), None);
    }

    #[test]
    fn every_built_in_definition_passes_the_spec_checks() {
        let c = Catalog::builtin();
        for name in c.names() {
            assert_eq!(c.get(name).unwrap().problem(), None, "{name}");
        }
    }

    #[test]
    fn unknown_fields_in_a_definition_are_rejected() {
        let bad = "source = \"toy_gaussian\"\ndimension = 2\ntrain = 4\ntest = 4\nsede = 1\n";
        let err = toml::from_str::<DatasetDef>(bad).unwrap_err().to_string();
        assert!(err.contains("sede"), "{err}");
    }
}
