//! The privacy ledger of one trial: every step that touches the data, with what it spent.
//!
//! A step with `private = false` has no DP guarantee (non-private ranking, data-derived scaling,
//! a model fitted without noise...). A trial is end-to-end private only when every step is
//! private and the spend stays within the declared budget (sequential composition: budgets add).
//!
//! A ledger holds one neighbouring relation ([`Relation`]): each step states it, and steps proven
//! under another relation are refused ([`Ledger::record`], [`Ledger::absorb`]), since budgets
//! spent under different relations do not add up to one guarantee.

use super::mechanism::{Charge, Mechanism};
use super::{Measure, PublicSize, Relation};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// One privacy-relevant step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Pipeline step: `selection`, `train`, ...
    pub name: String,
    /// Mechanism or procedure used (e.g. `laplace`, `none (exact counts)`).
    pub mechanism: String,
    /// Epsilon spent; `null` when the step gives no guarantee and draws no noise (a step with
    /// `private = false` that does draw noise, Algorithm 4, states what its draws spent).
    pub epsilon: Option<f64>,
    /// Delta spent, for (epsilon, delta)-DP steps; absent for pure epsilon-DP ones.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delta: Option<f64>,
    /// Privacy measure the step's guarantee is stated in; absent for non-private steps and in
    /// ledgers written before it was recorded.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub measure: Option<Measure>,
    pub private: bool,
    /// Neighbouring relation the guarantee is stated for.
    pub relation: String,
    /// L1 (or stated) sensitivity of the released quantity, when private.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sensitivity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
    /// The epsilon the step claims when that understates its real spend `epsilon` (an
    /// ablation variant that is not eps-DP at its claim); absent for faithful steps.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub claimed: Option<f64>,
}

impl LedgerEntry {
    /// Real epsilon over claimed epsilon for a step that understates its spend.
    pub fn excess(&self) -> Option<f64> {
        Some(self.epsilon? / self.claimed?)
    }

    /// Whether the step can enter a composition: its measure stated (a step recorded as
    /// non-private states none), its spend not understated. A step whose guarantee was
    /// withdrawn ([`Ledger::void_last`]) composes into a step without one.
    fn composable(&self) -> bool {
        self.measure.is_some() && self.claimed.is_none()
    }

    /// The step in words for a message (its Debug form is for programmers): "step `train`
    /// (laplace): ε = 1 under add/remove one example", or "... : not private (why)".
    pub fn describe(&self) -> String {
        let head = format!("step `{}` ({})", self.name, self.mechanism);
        let note = self
            .note
            .as_deref()
            .map_or(String::new(), |n| format!(" ({n})"));
        if !self.private {
            return format!("{head}: not private{note}");
        }
        let eps = self.epsilon.map_or("no ε".into(), |e| format!("ε = {e}"));
        let delta = self.delta.map_or(String::new(), |d| format!(", δ = {d}"));
        format!("{head}: {eps}{delta} under {}{note}", self.relation)
    }
}

/// All steps of one trial.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ledger {
    pub entries: Vec<LedgerEntry>,
    /// The run's relation: mechanisms calibrate for it and every entry states it.
    #[serde(skip)]
    relation: Relation,
    /// The training-set size N as the run declares it public, if it does: the only size a
    /// noise scale, sampling rate, threshold or regulariser may read ([`Ledger::public_size`]).
    #[serde(skip)]
    size: Option<PublicSize>,
}

/// Two ledgers are equal when their steps and relation are: the declared size is the run's
/// context (it is not stored), and every read of it is a step of its own.
impl PartialEq for Ledger {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries && self.relation == other.relation
    }
}

impl Ledger {
    /// An empty ledger for a run under `relation` (`Ledger::default()` is add/remove).
    pub fn new(relation: Relation) -> Self {
        Ledger {
            entries: Vec::new(),
            relation,
            size: None,
        }
    }

    /// The same ledger with the run's public training-set size (`None`: N is not public).
    pub fn with_public_size(mut self, size: Option<PublicSize>) -> Self {
        self.size = size;
        self
    }

    /// Sets the run's public training-set size (the pipeline does, once per cell).
    pub fn set_public_size(&mut self, size: Option<PublicSize>) {
        self.size = size;
    }

    /// The declared public size, if any, without recording a read.
    pub fn declared_size(&self) -> Option<&PublicSize> {
        self.size.as_ref()
    }

    /// N for the mechanism parameter `what` (e.g. "the MI score's sensitivity"): the run's
    /// public size, recorded as a public constant (step `size`, spending nothing, the
    /// declaration and the reader in its note). Never the data's own size: without a public
    /// size this is an error naming the ways to declare one.
    pub fn public_size(&mut self, what: &str) -> Result<usize> {
        let Some(size) = self.size.clone() else {
            return Err(Error::param(
                "public_n",
                format!(
                    "{what} reads the training-set size N, which under add/remove is private; \
                     declare N public (a grid.n_train axis, a generated dataset's size, or \
                     `public_n` in the dataset's definition) or set [experiment] neighbours = \
                     \"replace_one\""
                ),
            ));
        };
        self.public(
            "size",
            &format!("public constant N = {}", size.n),
            &format!("{}; read by {what}", size.declared),
        );
        Ok(size.n)
    }

    /// The relation every mechanism recording here must calibrate for.
    pub fn relation(&self) -> Relation {
        self.relation
    }

    /// An empty ledger under the same relation and public size (scratch ledgers of sub-steps).
    pub fn scratch(&self) -> Self {
        Ledger::new(self.relation).with_public_size(self.size.clone())
    }

    /// A scratch ledger whose mechanisms read `size` instead (a sub-fit on part of the rows).
    pub fn scratch_sized(&self, size: Option<PublicSize>) -> Self {
        Ledger::new(self.relation).with_public_size(size)
    }

    /// A scratch ledger for a fit on one of `k` random parts of the rows: its mechanisms read
    /// the public N / k ([`PublicSize::part`]; `what` names the parts), or no size where the
    /// run declares none.
    pub fn scratch_part(&self, k: usize, what: &str) -> Self {
        self.scratch_sized(self.size.as_ref().map(|s| s.part(k, what)))
    }

    /// The error for composing `what`, proven for the relation `theirs`, into this ledger:
    /// budgets spent under different relations do not add up to one guarantee.
    fn foreign(&self, what: &str, theirs: &str) -> Error {
        Error::param(
            "neighbours",
            format!(
                "cannot compose {what}, proven for \"{theirs}\", into a ledger for \"{}\"",
                self.relation.describe()
            ),
        )
    }

    /// A step under this ledger's relation with no guarantee and nothing else filled in.
    fn blank(&self, name: &str, mechanism: &str) -> LedgerEntry {
        LedgerEntry {
            name: name.into(),
            mechanism: mechanism.into(),
            epsilon: None,
            delta: None,
            measure: None,
            private: false,
            relation: self.relation.describe().into(),
            sensitivity: None,
            note: None,
            claimed: None,
        }
    }

    /// Records one release of `mechanism` as step `name` (described as `label`, e.g.
    /// `laplace (Algorithm 1 counts)`) with the mechanism's measure, epsilon, delta and
    /// sensitivity, and returns the handle through which alone its noise is drawn. Refuses a
    /// mechanism calibrated for another relation than this ledger's.
    pub fn charge<M: Mechanism>(
        &mut self,
        name: &str,
        label: &str,
        mechanism: M,
    ) -> Result<Charge<'_, M>> {
        let map = *mechanism.privacy_map();
        if map.relation != self.relation {
            let what = format!("step `{name}` ({label})");
            return Err(self.foreign(&what, map.relation.describe()));
        }
        let epsilon = if mechanism.charged_per_draw() {
            0.0
        } else {
            map.epsilon
        };
        self.entries.push(LedgerEntry {
            epsilon: Some(epsilon),
            delta: map.delta,
            measure: Some(map.measure),
            private: true,
            sensitivity: Some(map.sensitivity),
            ..self.blank(name, label)
        });
        let entry = self.entries.len() - 1;
        Ok(Charge::new(self, entry, mechanism))
    }

    /// The same steps under another step name and description: post-processing a release
    /// (Algorithm 2 ranks by the MI of Algorithm 1's noisy model) keeps its spend and changes
    /// only what the step is called.
    pub fn renamed(mut self, name: &str, label: &str) -> Ledger {
        for e in &mut self.entries {
            e.name = name.into();
            e.mechanism = label.into();
        }
        self
    }

    /// Appends an entry made elsewhere; refuses one stated for another relation.
    pub fn record(&mut self, entry: LedgerEntry) -> Result<()> {
        if entry.relation != self.relation.describe() {
            let what = format!("step `{}` ({})", entry.name, entry.mechanism);
            return Err(self.foreign(&what, &entry.relation));
        }
        self.entries.push(entry);
        Ok(())
    }

    /// Sequential composition with another ledger's steps; refused across relations.
    pub fn absorb(&mut self, other: Ledger) -> Result<()> {
        if other.relation != self.relation {
            return Err(self.foreign("a ledger", other.relation.describe()));
        }
        other.entries.into_iter().try_for_each(|e| self.record(e))
    }

    /// Parallel composition: `parts` holds steps each run on its own disjoint part of the data
    /// (the nodes of one tree level; a part of several steps enters as one, [`Ledger::composed`]),
    /// chosen by earlier releases and public randomness only. One example is in one part, so it
    /// sees one of them: recorded as one step `name` (`label`) whose epsilon, delta and
    /// sensitivity are the largest of any part's, (ε,δ)-DP if any part is (a pure part is
    /// (ε, 0)-DP), private only when every part is. Refused across relations, or when a part
    /// states no measure or understates its spend. Nothing is recorded for no parts.
    pub fn absorb_parallel(&mut self, parts: Ledger, name: &str, label: &str) -> Result<()> {
        if parts.relation != self.relation {
            return Err(self.foreign("a ledger", parts.relation.describe()));
        }
        if parts.entries.is_empty() {
            return Ok(());
        }
        if !parts.entries.iter().all(LedgerEntry::composable) {
            return Err(Error::param(
                name,
                "parallel composition needs steps that state their measure and spend",
            ));
        }
        let largest = |f: fn(&LedgerEntry) -> Option<f64>| {
            parts.entries.iter().filter_map(f).reduce(f64::max)
        };
        let entry = LedgerEntry {
            epsilon: largest(|e| e.epsilon),
            delta: largest(|e| e.delta),
            measure: Some(widest_measure(&parts.entries)),
            private: parts.entries.iter().all(|e| e.private),
            sensitivity: largest(|e| e.sensitivity),
            note: withdrawn(&parts.entries).map(|why| format!("NOT private: {why}")),
            ..self.blank(name, label)
        };
        self.entries.push(entry);
        Ok(())
    }

    /// Parallel composition of alike parts, kept step by step: `parts` ran the same steps, each
    /// on its own disjoint block, so the first part's steps stand for all of them, each noted
    /// `note`. Private only when every part's steps are: a later part whose guarantee was
    /// withdrawn (a fit short of its minimiser) withdraws the recorded steps', saying why.
    /// Refused across relations, or when a later part spends more than the first (its steps
    /// would then not stand for it). Nothing is recorded for no parts.
    pub fn absorb_alike_parts(&mut self, parts: Vec<Ledger>, note: &str) -> Result<()> {
        let Some(first) = parts.first() else {
            return Ok(());
        };
        let (eps, delta) = (first.total_epsilon(), first.total_delta());
        if let Some(p) = parts.iter().find(|p| p.relation != self.relation) {
            return Err(self.foreign("a ledger", p.relation.describe()));
        }
        if parts
            .iter()
            .any(|p| p.total_epsilon() > eps * SLACK || p.total_delta() > delta * SLACK)
        {
            return Err(Error::param(
                "parts",
                "alike parallel parts spend more in a later part than in the first",
            ));
        }
        let why = parts.iter().find_map(|p| withdrawn(&p.entries));
        for mut e in parts.into_iter().next().into_iter().flat_map(|p| p.entries) {
            e.note = Some(match &why {
                Some(why) => format!("{note}; NOT private: {why}"),
                None => note.to_string(),
            });
            e.private &= why.is_none();
            self.record(e)?;
        }
        Ok(())
    }

    /// This ledger's steps as one step `name` (`label`), by sequential composition: epsilons
    /// and deltas add, (ε,δ)-DP if any step is. The form in which a part of several steps (a
    /// candidate's fit with its public-size read) enters [`Ledger::absorb_parallel`]; the
    /// note lists the steps. Refused for no steps, or a step that states no measure (a
    /// non-private step) or understates its spend; private only when every step is.
    pub fn composed(self, name: &str, label: &str) -> Result<LedgerEntry> {
        if self.entries.is_empty() || !self.entries.iter().all(LedgerEntry::composable) {
            return Err(Error::param(
                name,
                "a composed part needs steps that state their measure and spend",
            ));
        }
        let sum = |f: fn(&LedgerEntry) -> Option<f64>| {
            self.entries.iter().filter_map(f).reduce(|a, b| a + b)
        };
        let steps: Vec<String> = self
            .entries
            .iter()
            .map(|e| format!("{}: {}", e.name, e.mechanism))
            .collect();
        Ok(LedgerEntry {
            epsilon: sum(|e| e.epsilon),
            delta: sum(|e| e.delta),
            measure: Some(widest_measure(&self.entries)),
            private: self.entries.iter().all(|e| e.private),
            sensitivity: match self.entries.as_slice() {
                [one] => one.sensitivity,
                _ => None,
            },
            note: Some(
                steps
                    .into_iter()
                    .chain(withdrawn(&self.entries).map(|why| format!("NOT private: {why}")))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            ..self.blank(name, label)
        })
    }

    /// True when every entry states this ledger's relation (false after entries were pushed
    /// directly with another one).
    pub fn single_relation(&self) -> bool {
        let r = self.relation.describe();
        self.entries.iter().all(|e| e.relation == r)
    }

    /// Marks the last step as understating its spend by `factor` (an ablation variant whose
    /// mechanism is calibrated for a sensitivity `factor` times too small): the entry keeps the
    /// claim in `claimed` and records the real epsilon and sensitivity, and why.
    pub fn understate_last(&mut self, factor: f64, why: &str) {
        if let Some(e) = self.entries.last_mut() {
            e.claimed = e.epsilon;
            e.epsilon = e.epsilon.map(|v| v * factor);
            e.sensitivity = e.sensitivity.map(|v| v * factor);
            e.note = Some(format!(
                "NOT eps-DP as claimed: real eps = {factor} x claimed ({why})"
            ));
        }
    }

    /// Withdraws the last step's guarantee, and says why beside its note: its mechanism's
    /// proof needs a condition the run did not meet (the exact minimiser output and objective
    /// perturbation assume, when the solver stopped short of it).
    pub fn void_last(&mut self, why: &str) {
        if let Some(e) = self.entries.last_mut() {
            e.private = false;
            e.note = Some(match e.note.take() {
                Some(n) => format!("{n}; {why}"),
                None => why.into(),
            });
        }
    }

    /// The largest factor by which a step's real epsilon exceeds its claim (1 when none does).
    pub fn excess(&self) -> f64 {
        self.entries
            .iter()
            .filter_map(LedgerEntry::excess)
            .fold(1.0, f64::max)
    }

    /// Records a step without a privacy guarantee, and why.
    pub fn non_private(&mut self, name: &str, mechanism: &str, why: &str) {
        self.entries.push(LedgerEntry {
            note: Some(why.into()),
            ..self.blank(name, mechanism)
        });
    }

    /// Records a step that touches the data but spends nothing because it only uses public
    /// constants per example (e.g. clipping to declared public bounds), and why.
    pub fn public(&mut self, name: &str, mechanism: &str, why: &str) {
        self.entries.push(LedgerEntry {
            epsilon: Some(0.0),
            measure: Some(Measure::PureDp),
            private: true,
            note: Some(why.into()),
            ..self.blank(name, mechanism)
        });
    }

    /// Sum of the epsilons of the private steps (sequential composition).
    pub fn total_epsilon(&self) -> f64 {
        self.entries.iter().filter_map(|e| e.epsilon).sum()
    }

    /// Sum of the deltas of the (epsilon, delta)-DP steps (basic composition); 0 when all
    /// steps are pure.
    pub fn total_delta(&self) -> f64 {
        self.entries.iter().filter_map(|e| e.delta).sum()
    }

    /// True when every step is private, all under one relation, and the total is within
    /// `budget` (with float slack).
    pub fn is_private_within(&self, budget: Option<f64>) -> bool {
        let all_private = !self.entries.is_empty()
            && self.entries.iter().all(|e| e.private)
            && self.single_relation();
        match budget {
            Some(b) => all_private && self.total_epsilon() <= b * SLACK,
            None => false,
        }
    }
}

/// Relative float slack of a spend compared against a bound.
const SLACK: f64 = 1.0 + 1e-9;

/// Why the first of `entries` whose guarantee was withdrawn has none.
fn withdrawn(entries: &[LedgerEntry]) -> Option<String> {
    let e = entries.iter().find(|e| !e.private)?;
    Some(
        e.note
            .clone()
            .unwrap_or_else(|| format!("step `{}`", e.name)),
    )
}

/// (ε,δ)-DP if any of `entries` is, else pure ε-DP: what their composition is stated in.
fn widest_measure(entries: &[LedgerEntry]) -> Measure {
    if entries.iter().any(|e| e.measure == Some(Measure::ApproxDp)) {
        Measure::ApproxDp
    } else {
        Measure::PureDp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Laplace;

    /// Records a Laplace release of `eps` for L1 sensitivity `sens` (no draw needed).
    fn spend(l: &mut Ledger, name: &str, eps: f64, sens: f64) {
        let lap = Laplace::new(sens, eps, l.relation()).unwrap();
        l.charge(name, "laplace", lap).unwrap();
    }

    /// Parts on disjoint data spend their largest epsilon once; a foreign relation, a
    /// non-private part or an empty set of parts is handled as documented.
    #[test]
    fn parallel_parts_spend_their_largest_epsilon() {
        let mut parts = Ledger::default().scratch();
        spend(&mut parts, "a", 0.25, 1.0);
        spend(&mut parts, "b", 0.5, 2.0);
        spend(&mut parts, "c", 0.5, 1.0);
        let mut l = Ledger::default();
        l.absorb_parallel(parts.clone(), "train", "level 0")
            .unwrap();
        assert_eq!(l.entries.len(), 1);
        assert_eq!(l.total_epsilon(), 0.5);
        assert_eq!(l.entries[0].sensitivity, Some(2.0));
        l.absorb_parallel(Ledger::default(), "train", "none")
            .unwrap();
        assert_eq!(l.entries.len(), 1);
        let mut other = Ledger::new(Relation::ReplaceOne);
        assert!(other.absorb_parallel(parts.clone(), "train", "x").is_err());
        parts.non_private("d", "exact", "test");
        assert!(l.absorb_parallel(parts, "train", "x").is_err());
    }

    /// Alike parts record the first part's steps once, private only when every part's are: a
    /// later part's withdrawn guarantee withdraws them, saying why; a later part that spends
    /// more, or one under another relation, is refused.
    #[test]
    fn alike_parts_are_private_only_when_every_part_is() {
        let part = || {
            let mut p = Ledger::default().scratch();
            spend(&mut p, "fit", 0.5, 1.0);
            p
        };
        let mut l = Ledger::default();
        l.absorb_alike_parts(vec![part(), part(), part()], "disjoint blocks")
            .unwrap();
        assert_eq!((l.entries.len(), l.total_epsilon()), (1, 0.5));
        assert!(l.is_private_within(Some(0.5)), "{l:?}");
        assert_eq!(l.entries[0].note.as_deref(), Some("disjoint blocks"));
        let mut short = part();
        short.void_last("solver stopped early");
        let mut l = Ledger::default();
        l.absorb_alike_parts(vec![part(), short, part()], "disjoint blocks")
            .unwrap();
        assert!(!l.entries[0].private && !l.is_private_within(Some(0.5)));
        assert_eq!(
            l.entries[0].note.as_deref(),
            Some("disjoint blocks; NOT private: solver stopped early")
        );
        let mut more = part();
        spend(&mut more, "fit", 0.5, 1.0);
        assert!(l.absorb_alike_parts(vec![part(), more], "x").is_err());
        let foreign = Ledger::new(Relation::ReplaceOne);
        assert!(l.absorb_alike_parts(vec![foreign], "x").is_err());
        let before = l.entries.len();
        l.absorb_alike_parts(Vec::new(), "x").unwrap();
        assert_eq!(l.entries.len(), before);
    }

    /// A part of several steps enters a parallel composition as their sum ([`Ledger::composed`]):
    /// two parts of 0.25 + 0.25 and 0.5 spend 0.5, not the 0.25 of a step; a pure part beside an
    /// (ε,δ)-DP one gives an (ε,δ)-DP step with the largest of each.
    #[test]
    fn composed_parts_spend_their_sum_in_parallel() {
        let mut one = Ledger::default().scratch();
        one.public("size", "public constant N", "test");
        spend(&mut one, "fit", 0.25, 1.0);
        spend(&mut one, "fit", 0.25, 1.0);
        let mut two = Ledger::default().scratch();
        let gauss = crate::privacy::Gaussian::classic(1.0, 0.4, 1e-6, Relation::AddRemove).unwrap();
        two.charge("fit", "gaussian", gauss).unwrap();
        let mut parts = Ledger::default().scratch();
        let first = one.composed("candidate 1", "two fits").unwrap();
        assert_eq!(
            (first.epsilon, first.delta, first.sensitivity),
            (Some(0.5), None, None)
        );
        assert_eq!(
            first.note.as_deref(),
            Some("size: public constant N; fit: laplace; fit: laplace")
        );
        parts.record(first).unwrap();
        parts
            .record(two.composed("candidate 2", "gaussian").unwrap())
            .unwrap();
        let mut l = Ledger::default();
        l.absorb_parallel(parts, "train", "both").unwrap();
        assert_eq!(l.entries.len(), 1);
        let e = &l.entries[0];
        assert_eq!((e.epsilon, e.delta), (Some(0.5), Some(1e-6)));
        assert_eq!(e.measure, Some(Measure::ApproxDp));
        assert!(Ledger::default().composed("x", "nothing").is_err());
        let mut open = Ledger::default();
        open.non_private("fit", "exact", "test");
        assert!(open.composed("x", "exact").is_err());
        // A part whose guarantee was withdrawn composes into steps without one, saying why.
        let mut short = Ledger::default().scratch();
        spend(&mut short, "fit", 0.25, 1.0);
        short.void_last("solver stopped early");
        let part = short.composed("candidate", "one fit").unwrap();
        assert!(!part.private, "{part:?}");
        assert!(
            part.note
                .as_deref()
                .unwrap()
                .ends_with("NOT private: solver stopped early")
        );
        let mut parts = Ledger::default().scratch();
        parts.record(part).unwrap();
        let mut l = Ledger::default();
        l.absorb_parallel(parts, "train", "one").unwrap();
        assert!(!l.entries[0].private && !l.is_private_within(Some(1.0)));
    }

    #[test]
    fn composition_and_labels() {
        let mut l = Ledger::default();
        spend(&mut l, "selection", 0.05, 1.0);
        spend(&mut l, "train", 0.05, 10.0);
        assert!((l.total_epsilon() - 0.1).abs() < 1e-15);
        assert!(l.is_private_within(Some(0.1)));
        assert!(!l.is_private_within(Some(0.09)));
        assert!(!l.is_private_within(None));
        l.non_private("scaling", "min-max", "bounds from the data");
        assert!(!l.is_private_within(Some(1.0)));
        assert!(!Ledger::default().is_private_within(Some(1.0)));
    }

    #[test]
    fn an_understated_step_records_its_real_spend_beside_the_claim() {
        let mut l = Ledger::default();
        spend(&mut l, "selection", 0.05, 1.0);
        assert_eq!(l.excess(), 1.0);
        l.understate_last(5.0, "test");
        let e = &l.entries[0];
        assert_eq!(
            (e.claimed, e.epsilon, e.sensitivity),
            (Some(0.05), Some(0.25), Some(5.0))
        );
        assert!((e.excess().unwrap() - 5.0).abs() < 1e-12);
        assert!(e.note.as_deref().unwrap().contains("NOT eps-DP"));
        assert!((l.excess() - 5.0).abs() < 1e-12);
        assert!(
            !l.is_private_within(Some(0.1)),
            "the real spend exceeds the budget"
        );
        let json = serde_json::to_string(&l).unwrap();
        assert!(json.contains(r#""claimed":0.05"#), "{json}");
    }

    #[test]
    fn steps_state_the_ledger_relation() {
        let mut l = Ledger::new(Relation::ReplaceOne);
        spend(&mut l, "train", 0.1, 2.0);
        l.non_private("scaling", "min-max", "bounds from the data");
        assert!(
            l.entries
                .iter()
                .all(|e| e.relation == "replace one example")
        );
        assert_eq!(l.scratch().relation(), Relation::ReplaceOne);
        assert_eq!(Ledger::default().relation(), Relation::AddRemove);
    }

    #[test]
    fn composition_across_relations_is_refused() {
        let mut add = Ledger::new(Relation::AddRemove);
        spend(&mut add, "selection", 0.05, 1.0);
        let mut replace = Ledger::new(Relation::ReplaceOne);
        spend(&mut replace, "train", 0.05, 2.0);
        let err = add.clone().absorb(replace.clone()).unwrap_err().to_string();
        assert!(
            err.contains("neighbours") && err.contains("replace one"),
            "{err}"
        );
        let entry = replace.entries[0].clone();
        let err = add.record(entry.clone()).unwrap_err().to_string();
        assert!(err.contains("`train`"), "{err}");
        assert_eq!(add.entries.len(), 1);
        // Same relation composes; a foreign entry pushed directly voids the privacy claim.
        let mut more = add.scratch();
        spend(&mut more, "train", 0.05, 1.0);
        add.absorb(more).unwrap();
        assert!(add.is_private_within(Some(0.1)));
        add.entries.push(entry);
        assert!(!add.single_relation());
        assert!(!add.is_private_within(Some(1.0)));
    }

    #[test]
    fn entries_state_their_measure_and_old_ledgers_still_read() {
        let mut l = Ledger::default();
        spend(&mut l, "train", 0.1, 2.0);
        l.non_private("scaling", "min-max", "bounds from the data");
        assert_eq!(l.entries[0].measure, Some(Measure::PureDp));
        assert_eq!(l.entries[1].measure, None);
        assert_eq!(l.total_delta(), 0.0);
        let json = serde_json::to_string(&l).unwrap();
        assert!(json.contains(r#""measure":"pure ε-DP""#), "{json}");
        assert!(!json.contains("delta"), "{json}");
        // A ledger written before `measure` and `delta` existed reads back without them.
        let old = r#"[{"name":"train","mechanism":"laplace","epsilon":0.1,"private":true,"relation":"add/remove one example","sensitivity":2.0}]"#;
        let back: Ledger = serde_json::from_str(old).unwrap();
        assert_eq!(
            (back.entries[0].measure, back.entries[0].delta),
            (None, None)
        );
        let mut approx = l.entries[0].clone();
        approx.measure = Some(Measure::ApproxDp);
        approx.delta = Some(1e-5);
        l.record(approx).unwrap();
        assert!((l.total_delta() - 1e-5).abs() < 1e-20);
        let json = serde_json::to_string(&l.entries[2]).unwrap();
        assert!(
            json.contains(r#""delta":0.00001"#) && json.contains("(ε,δ)-DP"),
            "{json}"
        );
    }
}
