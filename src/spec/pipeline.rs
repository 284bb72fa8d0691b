//! One `[[pipeline]]`: a learner (or a probe), an optional selection step, T and the budget
//! split, read in two stages: the TOML table first, then each kind's own fields, so a field that
//! belongs to another kind is refused by name ("does not apply to learner `nb`").

use crate::analysis::ProbeKind;
use crate::kinds::variant::{self, Variant};
use crate::kinds::{
    Axis, Chosen, LearnerKind, Refusal, Registered, Registry, ReleaseKind, SelectorKind, Shares,
    find, names,
};
use crate::privacy::Relation;
use serde::de::DeserializeOwned;

/// A validated pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// Series name in tables and figures.
    pub name: String,
    pub step: Step,
    /// Feature selection before training.
    pub selection: Option<Chosen<dyn SelectorKind>>,
    /// T fixed by the pipeline (else it comes from a `features` grid axis).
    pub features: Option<usize>,
    /// How the cell's epsilon is split between the steps.
    pub shares: Shares,
    /// The ablation variant (`variant = "..."`) of the learner or selector that owns it.
    pub variant: Option<&'static Variant>,
    /// A learner pipeline's own neighbouring relation (`neighbours = "..."` on the pipeline),
    /// overriding `[experiment] neighbours`: how a spec run under the thesis's relation shows
    /// the other relation's result beside it, as a labelled variant.
    pub neighbours: Option<Relation>,
}

/// What a pipeline runs after selection.
#[derive(Debug, Clone)]
pub enum Step {
    Learner(Chosen<dyn LearnerKind>),
    /// An analysis probe: records vectors instead of an accuracy.
    Probe(Chosen<dyn ProbeKind>),
    /// A release or an attack on a scalar column: records `release`, `truth`, `abs_error`
    /// (attacks: `success`).
    Release(Chosen<dyn ReleaseKind>),
}

/// A refusal with its field spelt out (relative to the pipeline).
type Refused = (String, String);

impl Pipeline {
    /// The learner's (or probe's) registered name.
    pub fn kind(&self) -> &'static str {
        match &self.step {
            Step::Learner(l) => l.name,
            Step::Probe(p) => p.name,
            Step::Release(r) => r.name,
        }
    }

    pub fn learner(&self) -> Option<&dyn LearnerKind> {
        match &self.step {
            Step::Learner(l) => Some(&*l.params),
            Step::Probe(_) | Step::Release(_) => None,
        }
    }

    fn selection_private(&self) -> bool {
        self.selection.as_ref().is_some_and(|s| s.params.private())
    }

    /// Whether some step spends budget (and so the pipeline varies along `epsilon`).
    pub fn spends(&self) -> bool {
        let step = match &self.step {
            Step::Learner(l) => l.params.private(),
            Step::Probe(p) => p.params.spends(),
            Step::Release(r) => r.params.private(),
        };
        step || self.selection_private()
    }

    /// Whether the pipeline varies along `axis` (when the grid has it).
    pub fn reads(&self, axis: Axis) -> bool {
        match axis {
            Axis::Epsilon => self.spends(),
            Axis::Features => self.selection.is_some() || matches!(self.step, Step::Probe(_)),
            Axis::NTrain => true,
            Axis::Threshold | Axis::Lambda => {
                self.learner().is_some_and(|l| l.axes().contains(&axis))
            }
        }
    }

    /// Whether the release is private end to end: a private learner, after a private
    /// selection step if it has one; a release that spends the grid's ε or states a budget of
    /// its own. Probes and non-private steps are labelled as such.
    pub fn end_to_end_private(&self) -> bool {
        if let Step::Release(r) = &self.step {
            return r.params.private() || r.params.own_budget().is_some();
        }
        self.learner().is_some_and(|l| l.private())
            && self.selection.as_ref().is_none_or(|s| s.params.guarantee())
    }

    /// The not-ε-DP label of a variant that weakens privacy (empty otherwise).
    pub fn weakening_label(&self) -> &'static str {
        self.variant.map_or("", |v| v.excess.label())
    }

    /// The label shown beside the series for its variant: the not-ε-DP label of a weakening
    /// one, else the deviation it makes; for a pipeline with its own relation other than the
    /// published experiment's (`[paper] neighbours`), that relation (empty without either).
    pub fn variant_tag(&self, published: Option<Relation>) -> &'static str {
        match (self.variant, self.neighbours) {
            (Some(v), _) => v.tag(),
            (None, Some(own)) if Some(own) == published => "",
            (None, Some(Relation::AddRemove)) => "variant: add/remove neighbours",
            (None, Some(Relation::ReplaceOne)) => "variant: replace-one neighbours",
            (None, None) => "",
        }
    }

    /// The relation the pipeline's cells run under: its own, else the experiment's.
    pub fn relation(&self, experiment: Relation) -> Relation {
        self.neighbours.unwrap_or(experiment)
    }

    /// Whether it is the majority-class baseline.
    pub fn is_baseline(&self) -> bool {
        self.learner().is_some_and(|l| l.is_baseline())
    }

    /// Relative cost of one cell per row × feature, for the shard partition: a rough, fixed
    /// model (it only has to rank work, and it must not depend on the machine, or shards would
    /// disagree).
    pub fn cost(&self) -> u64 {
        self.learner().map_or(1, |l| l.cost()) + u64::from(self.selection.is_some())
    }

    /// Reads and validates one pipeline table against the registered `kinds`; `grid` lists
    /// the spec's grid axes.
    pub(super) fn parse(
        mut t: toml::Table,
        grid: &[Axis],
        kinds: &Registry,
    ) -> Result<Pipeline, Refused> {
        let name: String = take(&mut t, "name")?
            .ok_or_else(|| refused("name", "missing: give the series a name"))?;
        if name.trim().is_empty() {
            return Err(refused("name", "must not be empty"));
        }
        if let Some(probe) = take::<String>(&mut t, "probe")? {
            return Self::parse_probe(name, &probe, t, kinds);
        }
        // `release` is also a field of learner `private_nb` (which counts it releases).
        let standalone = !t.contains_key("learner");
        for (key, registry) in [("release", &kinds.releases), ("attack", &kinds.attacks)] {
            if !standalone {
                break;
            }
            if let Some(kind) = take::<String>(&mut t, key)? {
                return Self::parse_release(name, key, registry, &kind, t, grid, kinds);
            }
        }
        let learner: String = take(&mut t, "learner")?.ok_or_else(|| {
            refused(
                "learner",
                "give a `learner` (or a `probe`, a `release` or an `attack`)",
            )
        })?;
        let Some(entry) = find(&kinds.learners, &learner) else {
            return Err(refused(
                "learner",
                format!(
                    "unknown learner `{learner}`; known: {}",
                    names(&kinds.learners)
                ),
            ));
        };
        let (variant, to_selector) = route_variant(&mut t, entry.name)?;
        let selection =
            Self::parse_selection(&mut t, to_selector.then_some(variant).flatten(), kinds)?;
        let features = take_features(&mut t, selection.is_some(), grid, kinds)?;
        if let Some(v) = variant.filter(|_| !to_selector) {
            t.insert("variant".into(), v.name.into());
        }
        let shares: Shares = take(&mut t, "budget")?.unwrap_or_default();
        let neighbours: Option<Relation> = take(&mut t, "neighbours")?;
        for key in t.keys() {
            if !entry.fields.contains(&key.as_str()) {
                return Err(misplaced(key, &format!("learner `{learner}`"), kinds));
            }
        }
        let params = parse_kind(entry, t)?;
        params.validate(grid).map_err(owned)?;
        let p = Pipeline {
            name,
            step: Step::Learner(Chosen {
                name: entry.name,
                params,
            }),
            selection,
            features,
            shares,
            variant,
            neighbours,
        };
        p.check_shares()?;
        Ok(p)
    }

    /// A probe pipeline: no learner, selection or budget fields; T optional.
    fn parse_probe(
        name: String,
        probe: &str,
        mut t: toml::Table,
        kinds: &Registry,
    ) -> Result<Pipeline, Refused> {
        let Some(entry) = find(&kinds.probes, probe) else {
            return Err(refused(
                "probe",
                format!("unknown probe `{probe}`; known: {}", names(&kinds.probes)),
            ));
        };
        let features = take(&mut t, "features")?;
        if let Some(key) = t.keys().find(|k| !entry.fields.contains(&k.as_str())) {
            return Err(misplaced(key, &format!("probe `{probe}`"), kinds));
        }
        Ok(Pipeline {
            name,
            step: Step::Probe(Chosen {
                name: entry.name,
                params: parse_kind(entry, t)?,
            }),
            selection: None,
            features,
            shares: Shares::default(),
            variant: None,
            neighbours: None,
        })
    }

    /// A release or attack pipeline: its kind's fields only (no selection, T or budget split).
    fn parse_release(
        name: String,
        key: &str,
        registry: &[Registered<dyn ReleaseKind>],
        kind: &str,
        t: toml::Table,
        grid: &[Axis],
        kinds: &Registry,
    ) -> Result<Pipeline, Refused> {
        let Some(entry) = find(registry, kind) else {
            return Err(refused(
                key,
                format!("unknown {key} `{kind}`; known: {}", names(registry)),
            ));
        };
        if let Some(k) = t.keys().find(|k| !entry.fields.contains(&k.as_str())) {
            return Err(misplaced(k, &format!("{key} `{kind}`"), kinds));
        }
        let params = parse_kind(entry, t)?;
        params.validate(grid).map_err(owned)?;
        Ok(Pipeline {
            name,
            step: Step::Release(Chosen {
                name: entry.name,
                params,
            }),
            selection: None,
            features: None,
            shares: Shares::default(),
            variant: None,
            neighbours: None,
        })
    }

    /// The selection step and its fields, if the table names a selector.
    fn parse_selection(
        t: &mut toml::Table,
        variant: Option<&Variant>,
        kinds: &Registry,
    ) -> Result<Option<Chosen<dyn SelectorKind>>, Refused> {
        let Some(sel) = take::<String>(t, "selection")? else {
            return Ok(None);
        };
        let selectors = &kinds.selectors;
        let Some(entry) = find(selectors, &sel) else {
            return Err(refused(
                "selection",
                format!("unknown selector `{sel}`; known: {}", names(selectors)),
            ));
        };
        let mut own = toml::Table::new();
        if let Some(v) = variant {
            own.insert("variant".into(), v.name.into());
        }
        for key in all_fields(selectors).filter(|k| *k != "variant") {
            if let Some(v) = t.remove(key) {
                if !entry.fields.contains(&key) {
                    let owners: Vec<String> = selectors
                        .iter()
                        .filter(|s| s.fields.contains(&key))
                        .map(|s| format!("`selection = \"{}\"`", s.name))
                        .collect();
                    return Err(refused(
                        key,
                        format!("applies only to {}", owners.join(", ")),
                    ));
                }
                own.insert(key.to_string(), v);
            }
        }
        let params = parse_kind(entry, own)?;
        params.validate().map_err(owned)?;
        Ok(Some(Chosen {
            name: entry.name,
            params,
        }))
    }

    /// The budget rules: shares in [0, 1] summing to 1, a positive share exactly for each step
    /// that spends (a `lambda` share only beside private lambda selection, which runs without
    /// one by parallel composition).
    fn check_shares(&self) -> Result<(), Refused> {
        let s = self.shares;
        let learner_private = self.learner().is_some_and(|l| l.private());
        let private_lambda = self.learner().is_some_and(|l| l.selects_lambda_privately());
        if !private_lambda && s.lambda > 0.0 {
            return Err(refused(
                "budget.lambda",
                "a share only for lambda = \"private\" (give it 0 or leave it out)",
            ));
        }
        for (field, v) in [
            ("budget.selection", s.selection),
            ("budget.train", s.train),
            ("budget.lambda", s.lambda),
        ] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(refused(
                    field,
                    format!("a share must be in [0, 1], got {v}"),
                ));
            }
        }
        let total = s.selection + s.train + s.lambda;
        if (total - 1.0).abs() > 1e-9 {
            return Err(refused(
                "budget",
                format!(
                    "shares must sum to 1 (they split the grid's epsilon), got {} + {} + {} = {total}",
                    s.selection, s.train, s.lambda
                ),
            ));
        }
        self.check_selection_share()?;
        if learner_private && s.train == 0.0 {
            return Err(refused(
                "budget.train",
                "a private learner needs a positive share",
            ));
        }
        if !learner_private && s.train > 0.0 && self.selection_private() {
            return Err(refused(
                "budget.train",
                format!(
                    "learner `{}` spends no budget; give the selection the whole share",
                    self.kind()
                ),
            ));
        }
        Ok(())
    }

    fn check_selection_share(&self) -> Result<(), Refused> {
        let positive = self.shares.selection > 0.0;
        let reason = match (&self.selection, positive) {
            (Some(s), false) if s.params.private() => {
                "a private selection step needs a positive share"
            }
            (Some(s), true) if !s.params.private() => {
                "the non-private selector spends no budget; give it share 0"
            }
            (None, true) => "this pipeline has no selection step to spend it",
            _ => return Ok(()),
        };
        Err(refused("budget.selection", reason))
    }
}

/// Takes `variant` from the table and finds the kind that owns it: the selector (true) or the
/// learner (false). A variant nobody in the pipeline owns is refused with the known ones.
fn route_variant(
    t: &mut toml::Table,
    learner: &str,
) -> Result<(Option<&'static Variant>, bool), Refused> {
    let Some(name) = take::<String>(t, "variant")? else {
        return Ok((None, false));
    };
    let selector = t.get("selection").and_then(|v| v.as_str()).unwrap_or("");
    if let Some(v) = variant::find(selector, &name) {
        return Ok((Some(v), true));
    }
    if let Some(v) = variant::find(learner, &name) {
        return Ok((Some(v), false));
    }
    let mut known = format!("learner `{learner}`: {}", variant::names_of(learner));
    if !selector.is_empty() {
        known.push_str(&format!(
            "; selection `{selector}`: {}",
            variant::names_of(selector)
        ));
    }
    Err(refused(
        "variant",
        format!("unknown variant `{name}` ({known}; `epsilab list` shows them)"),
    ))
}

/// T of a learner pipeline: only with a selection step, set in one place, at least 1.
fn take_features(
    t: &mut toml::Table,
    selects: bool,
    grid: &[Axis],
    kinds: &Registry,
) -> Result<Option<usize>, Refused> {
    let features: Option<usize> = take(t, "features")?;
    if !selects {
        let stray = all_fields(&kinds.selectors).find(|k| t.contains_key(*k));
        return match stray.or(features.map(|_| "features")) {
            Some(key) => Err(refused(key, "applies only with a `selection` step")),
            None => Ok(None),
        };
    }
    match (features, grid.contains(&Axis::Features)) {
        (Some(_), true) => Err(refused(
            "features",
            "is also a grid axis; set it in one place",
        )),
        (None, false) => Err(refused(
            "features",
            "a selection step needs T: set `features` or a `features` grid axis",
        )),
        (Some(0), false) => Err(refused("features", "must be at least 1")),
        _ => Ok(features),
    }
}

fn refused(field: &str, reason: impl Into<String>) -> Refused {
    (field.to_string(), reason.into())
}

fn owned(r: Refusal) -> Refused {
    (r.field.to_string(), r.reason)
}

/// Removes `key` from the table and deserialises it.
fn take<T: DeserializeOwned>(t: &mut toml::Table, key: &str) -> Result<Option<T>, Refused> {
    t.remove(key)
        .map(|v| {
            v.try_into()
                .map_err(|e: toml::de::Error| refused(key, e.message().trim()))
        })
        .transpose()
}

/// Deserialises a kind's own fields. The refusal names the field when it can tell: a missing
/// one, the only one given, or the one whose text value the message quotes (an unknown
/// variant), else the kind.
fn parse_kind<K: ?Sized>(
    entry: &Registered<K>,
    t: toml::Table,
) -> Result<std::sync::Arc<K>, Refused> {
    let keys: Vec<(String, Option<String>)> = t
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().map(|s| format!("`{s}`"))))
        .collect();
    (entry.parse)(t).map_err(|reason| {
        let quoted = keys
            .iter()
            .find(|(_, v)| v.as_ref().is_some_and(|v| reason.contains(v.as_str())));
        let missing = reason
            .strip_prefix("missing field `")
            .and_then(|r| r.split_once('`'))
            .map(|(name, _)| name.to_string());
        let field = missing.unwrap_or_else(|| match (keys.len(), quoted) {
            (1, _) => keys[0].0.clone(),
            (_, Some((k, _))) => k.clone(),
            _ => entry.name.to_string(),
        });
        (field, reason)
    })
}

/// Every field name any kind of a registry reads.
fn all_fields<K: ?Sized>(
    registry: &[Registered<K>],
) -> impl Iterator<Item = &'static str> + use<K> {
    let mut all: Vec<&'static str> = registry
        .iter()
        .flat_map(|r| r.fields.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    all.into_iter()
}

/// A field the chosen kind does not read: another kind's, or unknown.
fn misplaced(key: &str, kind: &str, kinds: &Registry) -> Refused {
    let known = all_fields(&kinds.learners)
        .chain(all_fields(&kinds.selectors))
        .chain(all_fields(&kinds.releases))
        .chain(all_fields(&kinds.attacks))
        .chain([
            "selection",
            "features",
            "budget",
            "learner",
            "probe",
            "variant",
            "release",
            "attack",
            "neighbours",
        ])
        .any(|k| k == key);
    if known {
        refused(key, format!("does not apply to {kind}"))
    } else {
        refused(key, format!("unknown field `{key}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn try_parse(text: &str, grid: &[Axis]) -> Result<Pipeline, Refused> {
        Pipeline::parse(toml::from_str(text).unwrap(), grid, &Registry::builtin())
    }

    fn parse(text: &str, grid: &[Axis]) -> Pipeline {
        try_parse(text, grid).unwrap()
    }

    /// The reason a pipeline is refused, after checking the refusal names `field`.
    fn refused_at(text: &str, field: &str) -> String {
        let (f, reason) = try_parse(text, &[]).unwrap_err();
        assert_eq!(f, field, "{reason}");
        reason
    }

    #[test]
    fn fields_are_refused_by_the_kind_they_do_not_belong_to() {
        let nb = "name = \"p\"\nlearner = \"nb\"\n";
        let r = refused_at(&format!("{nb}solver = \"newton\""), "solver");
        assert_eq!(r, "does not apply to learner `nb`");
        let r = refused_at(&format!("{nb}alpah = 1"), "alpah");
        assert_eq!(r, "unknown field `alpah`");
        let mask = "selection = \"mask\"\nfeatures = 2\nsparse_threshold = 1";
        let r = refused_at(&format!("{nb}{mask}"), "sparse_threshold");
        assert_eq!(r, "applies only to `selection = \"sparse\"`");
        let probe = "name = \"p\"\nprobe = \"mi_sorted\"\nbudget = { train = 1 }";
        assert_eq!(
            refused_at(probe, "budget"),
            "does not apply to probe `mi_sorted`"
        );
        let r = refused_at(&format!("{nb}alpha = \"one\""), "alpha");
        assert!(r.contains("invalid type"), "{r}");
    }

    #[test]
    fn a_pipeline_relation_overrides_the_experiment_and_is_labelled() {
        let own = "\nneighbours = \"add_remove\"";
        for (extra, relation, tag) in [
            (own, Relation::AddRemove, "variant: add/remove neighbours"),
            ("", Relation::ReplaceOne, ""),
        ] {
            let text = format!("name = \"p\"\nlearner = \"lr_output\"\nlambda = 1.0{extra}");
            let p = parse(&text, &[Axis::Epsilon]);
            assert_eq!(p.relation(Relation::ReplaceOne), relation, "{text}");
            assert_eq!(p.variant_tag(None), tag);
        }
        // The published experiment's own relation is not a variant.
        let own = parse(
            &format!("name = \"p\"\nlearner = \"lr_output\"\nlambda = 1.0{own}"),
            &[Axis::Epsilon],
        );
        assert_eq!(own.variant_tag(Some(Relation::AddRemove)), "");
        assert_eq!(
            own.variant_tag(Some(Relation::ReplaceOne)),
            "variant: add/remove neighbours"
        );
        let swap = "name = \"p\"\nlearner = \"nb\"\nneighbours = \"swap\"";
        let r = refused_at(swap, "neighbours");
        assert!(r.contains("\"add_remove\" or \"replace_one\""), "{r}");
        let probe = "name = \"p\"\nprobe = \"mi_sorted\"\nneighbours = \"add_remove\"";
        assert_eq!(
            refused_at(probe, "neighbours"),
            "does not apply to probe `mi_sorted`"
        );
    }

    #[test]
    fn variants_are_routed_to_the_kind_that_owns_them() {
        let mask = parse(
            "name = \"p\"\nlearner = \"private_nb\"\nselection = \"mask\"\nscore = \"count\"\n\
             variant = \"delta_q\"\nfeatures = 3\nbudget = { selection = 0.5, train = 0.5 }",
            &[Axis::Epsilon],
        );
        assert_eq!(mask.variant.map(|v| v.name), Some("delta_q"));
        assert_eq!(
            mask.selection.as_ref().unwrap().params.selector(),
            crate::selection::Selector::MaskSamplingPerFeature {
                score: crate::selection::Score::Count
            }
        );
        assert!(mask.weakening_label().contains("T × claimed"));
        let out = parse(
            "name = \"p\"\nlearner = \"lr_output\"\nlambda = 1\nvariant = \"lambda_twice\"",
            &[Axis::Epsilon],
        );
        assert_eq!(out.variant.map(|v| v.kind), Some("lr_output"));
        assert!(out.weakening_label().contains("N × claimed"));
        let faithful = parse("name = \"p\"\nlearner = \"lr_output\"\nlambda = 1", &[]);
        assert_eq!((faithful.variant, faithful.weakening_label()), (None, ""));
        let r = refused_at(
            "name = \"p\"\nlearner = \"lr_objective\"\nlambda = 1\nvariant = \"lambda_twice\"",
            "variant",
        );
        assert!(
            r.contains("unknown variant `lambda_twice`")
                && r.contains("`lr_objective`: larger_eps_prime"),
            "{r}"
        );
        // A variant that keeps privacy is named beside the series but stays private.
        let obj = parse(
            "name = \"p\"\nlearner = \"lr_objective\"\nlambda = 1\nvariant = \"larger_eps_prime\"",
            &[Axis::Epsilon],
        );
        assert_eq!(obj.weakening_label(), "");
        assert!(obj.variant_tag(None).contains("larger-ε′ branch"));
        assert!(obj.end_to_end_private());
        assert_eq!(out.variant_tag(None), out.weakening_label());
        let r = refused_at(
            "name = \"p\"\nlearner = \"nb\"\nselection = \"gumbel\"\nfeatures = 2\n\
             variant = \"delta_q\"\nbudget = { selection = 1, train = 0 }",
            "variant",
        );
        assert!(r.contains("selection `gumbel`: none"), "{r}");
    }

    #[test]
    fn axes_budget_and_labels_come_from_the_kinds() {
        let lr = parse(
            "name = \"p\"\nlearner = \"lr_objective\"\nselection = \"nonprivate\"\nfeatures = 3",
            &[Axis::Epsilon, Axis::Lambda],
        );
        assert!(lr.spends() && lr.reads(Axis::Lambda) && lr.reads(Axis::Features));
        assert!(!lr.reads(Axis::Threshold));
        assert!(!lr.end_to_end_private(), "a non-private selection step");
        assert_eq!((lr.kind(), lr.cost()), ("lr_objective", 21));
        let nb = parse("name = \"p\"\nlearner = \"nb\"", &[Axis::Epsilon]);
        assert!(!nb.spends() && !nb.reads(Axis::Epsilon) && !nb.end_to_end_private());
        let probe = parse("name = \"p\"\nprobe = \"perturbed_mi\"", &[Axis::Epsilon]);
        assert!(probe.spends() && probe.reads(Axis::Features) && !probe.end_to_end_private());
        let private = parse(
            "name = \"p\"\nlearner = \"private_nb\"\nselection = \"gumbel\"\nfeatures = 3\n\
             budget = { selection = 0.5, train = 0.5 }",
            &[Axis::Epsilon, Axis::Threshold],
        );
        assert!(private.end_to_end_private() && private.reads(Axis::Threshold));
        assert_eq!(private.shares.selection, 0.5);
        // Algorithm 4 spends its share but gives no guarantee: not labelled private.
        let iterative = parse(
            "name = \"p\"\nlearner = \"private_nb\"\nselection = \"iterative\"\nfeatures = 3\n\
             budget = { selection = 0.5, train = 0.5 }",
            &[Axis::Epsilon, Axis::Threshold],
        );
        assert!(iterative.spends() && !iterative.end_to_end_private());
    }
}
