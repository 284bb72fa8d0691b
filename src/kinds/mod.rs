//! Pipeline kinds: what the `learner`, `selection` and `probe` names of a spec mean.
//!
//! Each kind is a parameter struct that owns its spec fields (deserialised from the pipeline's
//! TOML table), their validation, the grid axes it reads, the budget shares it spends, its
//! privacy statement and its display name. The registries ([`LEARNERS`], [`SELECTORS`] and
//! the probes' `analysis::PROBES`) are the only places a kind is named: `spec`, `plan`,
//! `pipeline`, `report` and `epsilab list` go through them and the traits below.
//!
//! Adding a kind is one file (the struct, [`Described`] and the family's trait) and one line in
//! its registry. Releases and attacks ([`RELEASES`], [`ATTACKS`]) share the [`ReleaseKind`]
//! trait: they read a scalar column instead of a classification dataset.

pub mod attack;
pub mod erm;
pub mod estimators;
pub mod external;
pub mod gaussian_nb;
pub mod logistic;
pub mod majority;
pub mod naive_bayes;
pub mod release;
pub mod robust;
pub mod select;
pub mod survey;
pub mod svm_rff;
pub mod trees;
pub mod variant;

use crate::error::{Error, Result};
use crate::learners::{Learner, Threshold, TrialLog};
use crate::privacy::Ledger;
use crate::selection::Selector;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::sync::Arc;

/// The learners a spec may name (`learner = "..."`).
pub const LEARNERS: &[Registered<dyn LearnerKind>] = &[
    learner::<majority::Majority>(),
    learner::<naive_bayes::Nb>(),
    learner::<naive_bayes::PrivateNb>(),
    learner::<naive_bayes::PartitionedNb>(),
    learner::<logistic::Lr>(),
    learner::<logistic::LrOutput>(),
    learner::<logistic::LrObjective>(),
    learner::<logistic::LrFunctional>(),
    learner::<naive_bayes::VaidyaNb>(),
    learner::<logistic::Svm>(),
    learner::<logistic::SvmOutput>(),
    learner::<logistic::SvmObjective>(),
    learner::<erm::NoisyGd>(),
    learner::<erm::DpSgd>(),
    learner::<erm::InputPerturbation>(),
    learner::<erm::Averaged>(),
    learner::<erm::SubsampleAggregate>(),
    learner::<external::ExternalLearner>(),
    // Real-valued classifiers (issue 50).
    learner::<gaussian_nb::Gnb>(),
    learner::<gaussian_nb::PrivateGnb>(),
    learner::<trees::Tree>(),
    learner::<trees::Forest>(),
    learner::<trees::PrivateRandomTree>(),
    learner::<trees::PrivateForest>(),
    learner::<trees::PrivateId3>(),
    learner::<svm_rff::SvmRff>(),
    learner::<svm_rff::SvmRffOutput>(),
    learner::<svm_rff::SvmRffObjective>(),
    // Issue 49: regression, PCA and k-means (scored by their own metrics).
    learner::<estimators::Linreg>(),
    learner::<estimators::LinregSsp>(),
    learner::<estimators::LinregFunctional>(),
    learner::<estimators::Pca>(),
    learner::<estimators::PcaSulq>(),
    learner::<estimators::PcaAnalyzeGauss>(),
    learner::<estimators::PcaPowerMethod>(),
    learner::<estimators::KMeans>(),
    learner::<estimators::KMeansDpLloyd>(),
    // Issue 49, second part: objective perturbation and sample-and-aggregate k-means.
    learner::<estimators::LinregObjective>(),
    learner::<estimators::KMeansSampleAggregate>(),
];

/// The feature selectors a spec may name (`selection = "..."`).
pub const SELECTORS: &[Registered<dyn SelectorKind>] = &[
    selector::<select::NonPrivate>(),
    selector::<select::NoisyNbMi>(),
    selector::<select::Laplace>(),
    selector::<select::Iterative>(),
    selector::<select::Mask>(),
    selector::<select::Sparse>(),
    selector::<select::Gumbel>(),
];

/// The releases a spec may name (`release = "..."`).
pub const RELEASES: &[Registered<dyn ReleaseKind>] = &[
    release_kind::<release::Additive<false>>(),
    release_kind::<release::Additive<true>>(),
    release_kind::<release::ExponentialMedian>(),
    release_kind::<release::SmoothMedian>(),
    release_kind::<release::GlobalMedian>(),
    release_kind::<release::ComposedAverage>(),
    release_kind::<release::Histogram>(),
    release_kind::<survey::Survey>(),
    release_kind::<release::PNormSamples>(),
    release_kind::<release::Composition>(),
    release_kind::<external::ExternalRelease>(),
    // Issue 50: robust statistics.
    release_kind::<robust::Ptr<false>>(),
    release_kind::<robust::Ptr<true>>(),
    release_kind::<robust::MEstimatorHistogram>(),
];

/// The attacks a spec may name (`attack = "..."`).
pub const ATTACKS: &[Registered<dyn ReleaseKind>] = &[
    release_kind::<attack::Differencing>(),
    release_kind::<attack::MajorityVote>(),
    release_kind::<robust::DeltaLeak>(),
];

/// The kinds a spec may name, by family. [`Registry::builtin`] holds epsilab's own (the
/// registries above); a library user or a test adds a kind of its own with
/// [`Registry::with_learner`] and friends and parses a spec against it
/// ([`crate::spec::Spec::parse_with`]). Nothing is global: a registry is a value.
#[derive(Clone)]
pub struct Registry {
    pub learners: Vec<Registered<dyn LearnerKind>>,
    pub selectors: Vec<Registered<dyn SelectorKind>>,
    pub releases: Vec<Registered<dyn ReleaseKind>>,
    pub attacks: Vec<Registered<dyn ReleaseKind>>,
    pub probes: Vec<Registered<dyn crate::analysis::ProbeKind>>,
}

impl Registry {
    /// epsilab's own kinds.
    pub fn builtin() -> Registry {
        Registry {
            learners: LEARNERS.to_vec(),
            selectors: SELECTORS.to_vec(),
            releases: RELEASES.to_vec(),
            attacks: ATTACKS.to_vec(),
            probes: crate::analysis::PROBES.to_vec(),
        }
    }
}

/// Declares `Registry::$method::<T>()`: the registry with kind `T` added to `$family`, after
/// checking that no entry of the families a spec could confuse it with (`$clash`) has its
/// name (`$what` names the kind in the panic).
macro_rules! adders {
    ($(
        $(#[$doc:meta])*
        $method:ident: $trait:path => $family:ident by $registrar:ident, $what:literal clashes
        with [$($clash:ident),+];
    )*) => {
        impl Registry {$(
            $(#[$doc])*
            pub fn $method<T>(mut self) -> Registry
            where
                T: $trait + Described + DeserializeOwned + 'static,
            {
                let taken = [$(&self.$clash),+].into_iter().flatten().any(|r| r.name == T::NAME);
                assert!(!taken, "{} `{}` is already registered", $what, T::NAME);
                self.$family.push($registrar::<T>());
                self
            }
        )*}
    };
}

adders! {
    /// This registry and learner kind `T`.
    ///
    /// # Panics
    /// If a learner of that name is already registered (a programming error: a spec naming
    /// it could not tell the two apart). A learner name must be new among the learners, a
    /// release name among the releases and attacks: the spec key (`learner`, `release`) tells
    /// the families apart, so one name may be both (`external`).
    with_learner: LearnerKind => learners by learner, "learner" clashes with [learners];
    /// This registry and release kind `T`; panics as [`Self::with_learner`] does, if a
    /// release or attack of that name is already registered.
    with_release: ReleaseKind => releases by release_kind, "release" clashes
        with [releases, attacks];
    /// This registry and selector kind `T`.
    ///
    /// # Panics
    /// If a selector of that name is already registered.
    with_selector: SelectorKind => selectors by selector, "selector" clashes with [selectors];
}

impl Default for Registry {
    fn default() -> Self {
        Registry::builtin()
    }
}

/// A grid axis a pipeline may vary along, in the order the plan nests them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Epsilon,
    Threshold,
    Features,
    Lambda,
    NTrain,
}

impl Axis {
    pub const ALL: [Axis; 5] = [
        Axis::Epsilon,
        Axis::Threshold,
        Axis::Features,
        Axis::Lambda,
        Axis::NTrain,
    ];

    /// The axis's name in `[grid]`, in cell keys and in `report.x`.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Epsilon => "epsilon",
            Axis::Threshold => "threshold",
            Axis::Features => "features",
            Axis::Lambda => "lambda",
            Axis::NTrain => "n_train",
        }
    }
}

/// Why a kind refuses its parameters: the field (within the pipeline) and the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub field: &'static str,
    pub reason: String,
}

/// A [`Refusal`] of `field`.
pub fn refuse(field: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        field,
        reason: reason.into(),
    }
}

/// The grid values of one cell, typed; `None` where the pipeline does not vary along an axis.
/// `features` also holds a T fixed by the pipeline itself.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GridValues {
    pub epsilon: Option<f64>,
    pub threshold: Option<Threshold>,
    pub features: Option<usize>,
    pub lambda: Option<f64>,
    pub n_train: Option<usize>,
}

/// How a pipeline's epsilon is split between its steps (fractions summing to 1).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Shares {
    #[serde(default)]
    pub selection: f64,
    pub train: f64,
    /// Share of private lambda selection (`lambda = "private"`).
    #[serde(default)]
    pub lambda: f64,
}

impl Default for Shares {
    fn default() -> Self {
        Shares {
            selection: 0.0,
            train: 1.0,
            lambda: 0.0,
        }
    }
}

/// The epsilon of each step of one cell: the cell's epsilon times the pipeline's shares. The plan
/// resolves it once per cell; every step spends only its own entry.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CellBudget {
    /// The cell's total budget (the grid's epsilon); `None` for a non-private pipeline.
    pub total: Option<f64>,
    pub selection: Option<f64>,
    pub train: Option<f64>,
    /// Private lambda selection's budget; `None` when its share is 0.
    pub lambda: Option<f64>,
}

impl CellBudget {
    pub fn resolve(total: Option<f64>, shares: &Shares) -> CellBudget {
        CellBudget {
            total,
            selection: total.map(|e| e * shares.selection),
            train: total.map(|e| e * shares.train),
            lambda: total.map(|e| e * shares.lambda).filter(|e| *e > 0.0),
        }
    }

    /// The training budget of a private learner (validation gives its pipeline an epsilon axis).
    pub fn train_of(&self, kind: &str) -> Result<f64> {
        self.train
            .ok_or_else(|| Error::param("epsilon", format!("learner `{kind}` needs an epsilon")))
    }
}

/// A learner kind: its parameters as the spec gives them.
pub trait LearnerKind: Debug + Send + Sync {
    /// Whether it is parametrised by (and spends) the training share of epsilon.
    fn private(&self) -> bool;
    /// Grid axes it reads besides `epsilon` (when private) and `n_train`.
    fn axes(&self) -> &'static [Axis] {
        &[]
    }
    /// Checks the parameters; `grid` lists the axes the spec's `[grid]` defines.
    fn validate(&self, _grid: &[Axis]) -> std::result::Result<(), Refusal> {
        Ok(())
    }
    /// Whether it chooses lambda privately (`lambda = "private"`, Algorithm 3): only then may
    /// the budget give a `lambda` share, for the sequential split.
    fn selects_lambda_privately(&self) -> bool {
        false
    }
    /// The learner of one cell, with its grid values and budget applied.
    fn learner(&self, at: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>>;
    /// Checks, before anything runs, what a cell's fit reads of the run besides its grid
    /// values: the public training-set size N (read through [`Ledger::public_size`], an error
    /// naming the ways to declare it when the run declares none) and what depends on N or on
    /// the relation (whether the accountant reaches the cell's ε). `ledger` is a scratch
    /// ledger with the cell's relation and public size; the preflight calls this for every
    /// grid point. Default: the fit reads neither.
    fn check_run(
        &self,
        _at: &GridValues,
        _budget: &CellBudget,
        _ledger: &mut Ledger,
    ) -> Result<()> {
        Ok(())
    }
    /// Relative cost of one fit, for the shard partition (1 = one Naive Bayes fit).
    fn cost(&self) -> u64 {
        1
    }
    /// Who may schedule its cells together with others, sharing work between their fits
    /// (each fit's result unchanged); `None`: no family of its own ([`crate::schedule`]).
    fn schedule(&self) -> Option<Schedule> {
        None
    }
    /// Whether it is the majority-class baseline every figure already draws.
    fn is_baseline(&self) -> bool {
        false
    }
    /// Whether it reads binary features (class counts), so a real-valued dataset is refused
    /// before the run starts.
    fn needs_binary(&self) -> bool {
        false
    }
}

/// A kind's scheduling hook: its family's scheduler, and how widely that scheduler may group
/// this kind's cells with others (0: never; each level includes those below it; the family
/// says what its levels mean).
#[derive(Clone, Copy)]
pub struct Schedule {
    pub scheduler: &'static dyn crate::schedule::Scheduler,
    pub reach: u8,
}

/// A feature-selection kind: the selector and its spec fields.
pub trait SelectorKind: Debug + Send + Sync {
    /// Whether it spends the `selection` share of the budget (all but `nonprivate` do).
    fn private(&self) -> bool {
        true
    }
    /// Whether what it releases is DP at what it spends: `iterative` (Algorithm 4) spends but
    /// is not, since its walk order reads the exact scores.
    fn guarantee(&self) -> bool {
        self.private()
    }
    fn validate(&self) -> std::result::Result<(), Refusal> {
        Ok(())
    }
    fn selector(&self) -> Selector;
    /// Checks, before anything runs, what the selector reads of the run: a scored private
    /// selector's sensitivity (the MI score's reads the public N). `ledger` is a scratch
    /// ledger with the cell's relation and public size ([`LearnerKind::check_run`]).
    fn check_run(&self, ledger: &mut Ledger) -> Result<()> {
        match self.selector() {
            Selector::NonPrivate { .. } | Selector::NoisyNbMi => Ok(()),
            Selector::LaplaceScores { score }
            | Selector::IterativeSampling { score }
            | Selector::MaskSampling { score }
            | Selector::MaskSamplingPerFeature { score }
            | Selector::Sparse { score, .. }
            | Selector::GumbelTopK { score } => score.sensitivity(ledger).map(drop),
        }
    }
}

/// What a release reads: the rows of the cell (a scalar column, clamped by the release to its
/// public bounds) and the cell's budget.
pub struct ReleaseInput<'a> {
    pub values: &'a [f64],
    /// The grid's epsilon, when the release spends one.
    pub epsilon: Option<f64>,
}

/// What a release records besides its metrics (which go to the trial log): named vectors.
#[derive(Debug, Default)]
pub struct ReleaseOutput {
    pub vectors: std::collections::BTreeMap<String, Vec<f64>>,
}

/// A budget a release states by its own parameters (see [`ReleaseKind::own_budget`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnBudget {
    pub epsilon: f64,
    pub delta: f64,
}

/// A release or attack kind: a query and mechanism on a scalar column, or an adversary.
pub trait ReleaseKind: Debug + Send + Sync {
    /// Whether it takes (and spends) the grid's epsilon.
    fn private(&self) -> bool {
        true
    }
    /// How many times the grid's epsilon a trial spends in all: a release answering several
    /// queries at the grid's epsilon each (sequential composition) states it, so that its
    /// record is private within that total, not within one query's epsilon.
    fn queries(&self) -> u32 {
        1
    }
    /// The (ε, δ) a release spends by its own parameters whatever the grid says (the delta
    /// leak's (0, δ)): its records are private when the ledger stays within it, and its
    /// series are labelled private. `None` (the default) for a release that spends the grid's
    /// ε (`private`) or claims nothing.
    fn own_budget(&self) -> Option<OwnBudget> {
        None
    }
    /// Whether its release estimates the column's location (a mean, a median, a trimmed mean,
    /// an M-estimate): on a source that states its population location the trial then also
    /// records `abs_error_location`.
    fn estimates_location(&self) -> bool {
        false
    }
    fn validate(&self, _grid: &[Axis]) -> std::result::Result<(), Refusal> {
        Ok(())
    }
    /// One trial: draws through `log`'s ledger and streams, records metrics in `log.metrics`.
    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput>;
    /// Checks, before anything runs, what a trial reads of the run besides the column: the
    /// public size n and the relation ([`LearnerKind::check_run`]; `ledger` is a scratch
    /// ledger with the cell's relation and public size). Default: neither.
    fn check_run(&self, _ledger: &mut Ledger) -> Result<()> {
        Ok(())
    }
}

/// A kind's name, its one-line privacy statement and the spec fields its struct reads.
pub trait Described {
    const NAME: &'static str;
    /// Shown by `epsilab list`: what it computes and its guarantee (or why it has none).
    const ABOUT: &'static str;
    const FIELDS: &'static [&'static str];
}

/// A registry entry: the kind's description and how its struct is read from a pipeline table.
pub struct Registered<K: ?Sized + 'static> {
    pub name: &'static str,
    pub about: &'static str,
    pub fields: &'static [&'static str],
    /// Deserialises the kind's fields (the table holds only names in `fields`).
    pub parse: fn(toml::Table) -> std::result::Result<Arc<K>, String>,
}

impl<K: ?Sized> Clone for Registered<K> {
    fn clone(&self) -> Self {
        Registered { ..*self }
    }
}

/// The entry named `name` in a registry.
pub fn find<'r, K: ?Sized>(registry: &'r [Registered<K>], name: &str) -> Option<&'r Registered<K>> {
    registry.iter().find(|r| r.name == name)
}

/// The names of a registry, for "known: ..." messages.
pub fn names<K: ?Sized>(registry: &[Registered<K>]) -> String {
    let names: Vec<&str> = registry.iter().map(|r| r.name).collect();
    names.join(", ")
}

/// Deserialises a kind's struct from its fields.
pub fn parse_fields<T: DeserializeOwned>(t: toml::Table) -> std::result::Result<T, String> {
    toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_string())
}

/// Declares `const fn $name<T>() -> Registered<dyn $trait>`: a registry entry from a kind's
/// [`Described`] constants and its deserialisation (one per family).
macro_rules! registrar {
    ($($name:ident: $trait:path),*) => {$(
        const fn $name<T: $trait + $crate::kinds::Described + serde::de::DeserializeOwned + 'static>()
        -> $crate::kinds::Registered<dyn $trait> {
            $crate::kinds::Registered {
                name: T::NAME,
                about: T::ABOUT,
                fields: T::FIELDS,
                parse: |t| Ok(std::sync::Arc::new($crate::kinds::parse_fields::<T>(t)?)),
            }
        }
    )*};
}
pub(crate) use registrar;

registrar!(learner: LearnerKind, selector: SelectorKind, release_kind: ReleaseKind);

/// Declares a kind's parameter struct and its [`Described`]: serde reads the struct from the
/// pipeline's table and refuses unknown fields, and `FIELDS` are the struct's own field names,
/// so the two cannot drift apart. The family's trait is implemented beside it.
macro_rules! kind {
    (
        $(#[$attr:meta])*
        $kind:ident = $name:literal {
            $( $(#[$fattr:meta])* $field:ident: $ty:ty, )*
        }
        about: $about:expr $(,)?
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $kind {
            $( $(#[$fattr])* $field: $ty, )*
        }

        impl $crate::kinds::Described for $kind {
            const NAME: &'static str = $name;
            const ABOUT: &'static str = $about;
            const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }
    };
}
pub(crate) use kind;

/// A registered kind chosen by a pipeline: its name and its parameters.
#[derive(Debug)]
pub struct Chosen<K: ?Sized> {
    pub name: &'static str,
    pub params: Arc<K>,
}

impl<K: ?Sized> Clone for Chosen<K> {
    fn clone(&self) -> Self {
        Chosen {
            name: self.name,
            params: Arc::clone(&self.params),
        }
    }
}

/// Checks a fixed threshold parameter: valid, and not also a grid axis.
pub fn check_fixed_threshold(
    t: Option<&Threshold>,
    grid: &[Axis],
) -> std::result::Result<(), Refusal> {
    let Some(t) = t else { return Ok(()) };
    if let Some(problem) = t.problem() {
        return Err(refuse("threshold", problem));
    }
    if grid.contains(&Axis::Threshold) {
        return Err(refuse(
            "threshold",
            "is also a grid axis; set it in one place",
        ));
    }
    Ok(())
}

/// Checks that `value` of `field` (a delta, a probability, a share) lies in (0, 1).
pub fn check_open_unit(field: &'static str, value: f64) -> std::result::Result<(), Refusal> {
    if value > 0.0 && value < 1.0 {
        return Ok(());
    }
    Err(refuse(field, format!("must be in (0, 1), got {value}")))
}

/// Checks a smoothing pseudo-count.
pub fn check_alpha(alpha: Option<f64>) -> std::result::Result<(), Refusal> {
    match alpha {
        Some(a) if !(a.is_finite() && a >= 0.0) => {
            Err(refuse("alpha", format!("must be finite and >= 0, got {a}")))
        }
        _ => Ok(()),
    }
}

/// Test helpers shared with the probes' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::Registered;

    /// Each listed field is one its struct reads, and nothing else is: a nested table is a
    /// type error for a read field and an unknown field otherwise.
    pub(crate) fn fields_match_structs<K: ?Sized>(registry: &'static [Registered<K>]) {
        let wrong = || toml::Value::Table(toml::Table::from_iter([("x".into(), 1.into())]));
        for entry in registry {
            for field in entry.fields {
                let t = toml::Table::from_iter([(field.to_string(), wrong())]);
                // Accepted (a free-form table such as an external kind's `params`) or refused
                // for its type or another field, but never as unknown.
                let e = (entry.parse)(t).err().unwrap_or_default();
                assert!(!e.contains("unknown field"), "{}.{field}: {e}", entry.name);
            }
            let t = toml::Table::from_iter([("no_such_field".to_string(), wrong())]);
            let e = (entry.parse)(t).err().unwrap_or_default();
            assert!(e.contains("unknown field"), "{}: {e}", entry.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::fields_match_structs;
    use super::*;

    #[test]
    fn registered_fields_are_the_structs_fields() {
        fields_match_structs(LEARNERS);
        fields_match_structs(SELECTORS);
        fields_match_structs(RELEASES);
        fields_match_structs(ATTACKS);
    }

    /// Unique among the learners, among the releases and attacks, and among the selectors:
    /// `selection = "laplace"` and `release = "laplace"` are different keys, and so are
    /// `learner = "external"` and `release = "external"`.
    #[test]
    fn registry_names_are_unique() {
        let unique = |names: Vec<&str>| {
            let mut all = names.clone();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), names.len(), "{names:?}");
        };
        let releases = RELEASES.iter().chain(ATTACKS).map(|r| r.name);
        unique(LEARNERS.iter().map(|r| r.name).collect());
        unique(releases.collect());
        unique(SELECTORS.iter().map(|r| r.name).collect());
    }

    #[test]
    fn the_cell_budget_splits_the_cell_epsilon_by_the_shares() {
        let shares = Shares {
            selection: 0.25,
            train: 0.5,
            lambda: 0.25,
        };
        let b = CellBudget::resolve(Some(2.0), &shares);
        assert_eq!(
            (b.total, b.selection, b.train, b.lambda),
            (Some(2.0), Some(0.5), Some(1.0), Some(0.5))
        );
        let b = CellBudget::resolve(Some(2.0), &Shares::default());
        assert_eq!((b.train, b.lambda), (Some(2.0), None));
        let none = CellBudget::resolve(None, &shares);
        assert_eq!(none, CellBudget::default());
        assert!(none.train_of("private_nb").is_err());
    }
}
