//! Black-box audit of a spec's release or learner pipeline (`epsilab audit --spec S --pipeline
//! P`): the step runs as the spec states it (an external program through its protocol, or a
//! built-in kind) on two neighbouring datasets, and the audit's lower bound is reported beside
//! the ε (and δ) its ledger declares. Nothing inside the mechanism is read: this is
//! how a declared, not audited, external ledger is tested from outside.
//!
//! Neighbours: by default X = ten 0s and X' = X with one value replaced by 1 (replace-one) or
//! X plus a 1 (add/remove), the worst case of a mean, sum or count on public bounds [0, 1];
//! `--x` and `--x-prime` give others. Statistic: the released value.
//!
//! A learner is audited on a canary ([`canary_neighbours`]): X = ten rows of two binary
//! features, all 0, five of each class; X' = X plus a canary row (both features 1, the second
//! class), or X with its last row replaced by it (replace-one). Statistic: the class the fitted
//! model predicts for a test row equal to the canary, the membership test a leaky learner
//! fails. Each run is one trial of the pipeline with its own seed (drawn from the audit's
//! stream), under the spec's relation and folder.
//!
//! Public size: a run reads the training-set size N only where the spec makes it public, as a
//! cell does ([`audit_size`]): under replace-one N is the neighbours' common size; under
//! add/remove only a spec that declares N public (a `grid.n_train` axis, or datasets that are
//! all generated or declare `public_n`) gets one, X's size, and X' (one row more or less) is
//! run with the same N, as a cell's neighbour is. Elsewhere a mechanism that reads N is refused,
//! as in the spec's own cells.

use super::{Auditable, Claim, Side};
use crate::data::catalog::DatasetDef;
use crate::data::{BinaryMatrix, Dataset, Features, SplitRule};
use crate::error::{Error, Result};
use crate::kinds::{CellBudget, GridValues, ReleaseInput, ReleaseKind};
use crate::learners::{FitInput, Learner, TrialLog};
use crate::privacy::{Ledger, LedgerEntry, PublicSize, Relation};
use crate::rng::Rng;
use crate::spec::{Spec, Step};
use rand::RngCore;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Why `ledger` states no private ε, in words: its non-private steps, else its mixed
/// relations or its steps that spend nothing.
fn no_claim(ledger: &Ledger) -> String {
    let steps = |keep: fn(&LedgerEntry) -> bool| {
        let kept = ledger.entries.iter().filter(|e| keep(e));
        kept.map(LedgerEntry::describe)
            .collect::<Vec<_>>()
            .join("; ")
    };
    if ledger.entries.is_empty() {
        "its ledger has no step".into()
    } else if ledger.entries.iter().any(|e| !e.private) {
        steps(|e| !e.private)
    } else if !ledger.single_relation() {
        format!(
            "its steps are stated under different relations: {}",
            steps(|_| true)
        )
    } else {
        format!("its steps spend ε = 0 in all: {}", steps(|_| true))
    }
}

/// The default neighbours under `relation`: (X, X').
pub fn default_neighbours(relation: Relation) -> (Vec<f64>, Vec<f64>) {
    let x = vec![0.0; 10];
    let mut xp = x.clone();
    match relation {
        Relation::ReplaceOne => xp[9] = 1.0,
        Relation::AddRemove => xp.push(1.0),
    }
    (x, xp)
}

/// The release's neighbours from `--x`/`--x-prime`: both given, checked to neighbour each other
/// under `relation` (else the audit could fail a correct mechanism); X alone, with X' made from
/// it (a 1 added under add/remove, its last value replaced by 1, or by 0 if it is 1, under
/// replace-one); neither, [`default_neighbours`]. The empty column is allowed: under add/remove
/// it neighbours every one-value column.
pub fn column_neighbours(
    relation: Relation,
    given: (Option<Vec<f64>>, Option<Vec<f64>>),
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (x, x_prime) = match given {
        (None, None) => return Ok(default_neighbours(relation)),
        (None, Some(_)) => {
            return Err(Error::param(
                "x",
                "--x-prime needs --x (X' alone does not say which neighbour X is)",
            ));
        }
        (Some(x), Some(x_prime)) => (x, x_prime),
        (Some(x), None) => {
            let mut x_prime = x.clone();
            match (relation, x_prime.last_mut()) {
                (Relation::AddRemove, _) => x_prime.push(1.0),
                (Relation::ReplaceOne, Some(last)) => *last = if *last == 1.0 { 0.0 } else { 1.0 },
                (Relation::ReplaceOne, None) => {
                    return Err(Error::param(
                        "x",
                        "under replace-one the neighbours have the same size: X needs a value",
                    ));
                }
            }
            (x, x_prime)
        }
    };
    if !neighbouring(relation, &x, &x_prime) {
        let pair = match relation {
            Relation::AddRemove => "one column is the other with one value added",
            Relation::ReplaceOne => "the columns have the same size and differ in one value",
        };
        return Err(Error::param(
            "x",
            format!(
                "--x and --x-prime are not neighbours under {}: {pair}",
                relation.describe()
            ),
        ));
    }
    Ok((x, x_prime))
}

/// Whether columns `a` and `b` neighbour each other under `relation`, as multisets (a release
/// reads the column's values, not their order): one is the other plus one value (add/remove),
/// or they differ in one value (replace-one; equal columns are not a pair worth auditing).
fn neighbouring(relation: Relation, a: &[f64], b: &[f64]) -> bool {
    let sorted = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    let (a, b) = (sorted(a), sorted(b));
    // The values both have (a merge of the sorted columns); the rest is each one's own.
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].total_cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => (i, j, common) = (i + 1, j + 1, common + 1),
        }
    }
    let (only_a, only_b) = (a.len() - common, b.len() - common);
    match relation {
        Relation::AddRemove => only_a + only_b == 1,
        Relation::ReplaceOne => only_a == 1 && only_b == 1,
    }
}

/// A learner's neighbours: one dataset (the ten rows, the canary, the probe) and the training
/// rows of X and of X'; the probe (the last row, equal to the canary) is the one test row.
pub struct CanaryNeighbours {
    data: Dataset,
    train: Vec<u32>,
    train_prime: Vec<u32>,
}

/// The canary neighbours under `relation` (see the module's documentation).
pub fn canary_neighbours(relation: Relation) -> CanaryNeighbours {
    let mut x = BinaryMatrix::new(2);
    let mut labels = Vec::new();
    for i in 0..10u16 {
        x.push_row(&[]);
        labels.push(u16::from(i >= 5));
    }
    // Row 10: the canary; row 11: the probe, its copy, never trained on.
    x.push_row(&[0, 1]);
    x.push_row(&[0, 1]);
    labels.extend([1, 1]);
    let train: Vec<u32> = (0..10).collect();
    let train_prime: Vec<u32> = match relation {
        Relation::AddRemove => (0..11).collect(),
        Relation::ReplaceOne => (0..9).chain([10]).collect(),
    };
    let data = Dataset::new(
        "audit_canary".into(),
        "audit canary".into(),
        Features::Binary(x),
        labels,
        vec!["0".into(), "1".into()],
        SplitRule::Fixed { n_train: 11 },
    );
    CanaryNeighbours {
        data,
        train,
        train_prime,
    }
}

/// What a pipeline audit runs: a release on two columns, or a learner on the canary datasets.
enum Subject {
    Release {
        release: Arc<dyn ReleaseKind>,
        x: Vec<f64>,
        x_prime: Vec<f64>,
    },
    Learner {
        learner: Box<dyn Learner>,
        neighbours: Box<CanaryNeighbours>,
    },
}

/// One release or learner pipeline of a spec, ready to audit at one ε on one pair of
/// neighbours.
pub struct PipelineAudit {
    claim: Claim,
    subject: Subject,
    epsilon: f64,
    relation: Relation,
    /// The public N both sides' runs read ([`audit_size`]); `None` when the spec keeps it
    /// private.
    size: Option<PublicSize>,
    spec_dir: Option<PathBuf>,
    /// The first error of a run (a run cannot return one; the audit reports it afterwards).
    failed: Mutex<Option<Error>>,
}

impl PipelineAudit {
    /// The audit of pipeline `name` of `spec` at `epsilon`: a release on (`x`, `x_prime`)
    /// (each by default [`default_neighbours`]' under the pipeline's relation), a learner on the
    /// canary neighbours. One run on X reads the ε and δ its ledger declares, which become the
    /// claim.
    pub fn new(
        spec: &Spec,
        name: &str,
        epsilon: f64,
        neighbours: (Option<Vec<f64>>, Option<Vec<f64>>),
    ) -> Result<Self> {
        let pipeline = spec
            .pipelines
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = spec.pipelines.iter().map(|p| p.name.as_str()).collect();
                Error::param(
                    "pipeline",
                    format!(
                        "no pipeline `{name}` in {}; pipelines: {}",
                        spec.path.display(),
                        names.join(", ")
                    ),
                )
            })?;
        let relation = pipeline.relation(spec.experiment.neighbours);
        let subject = subject(pipeline, name, epsilon, relation, neighbours)?;
        let (rows, rows_prime) = match &subject {
            Subject::Release { x, x_prime, .. } => (x.len(), x_prime.len()),
            Subject::Learner { neighbours: n, .. } => (n.train.len(), n.train_prime.len()),
        };
        let mut audit = PipelineAudit {
            claim: Claim::new("", epsilon, ""),
            size: audit_size(spec, relation, rows, rows_prime),
            subject,
            epsilon,
            relation,
            spec_dir: spec.path.parent().map(std::path::Path::to_path_buf),
            failed: Mutex::new(None),
        };
        let (log, _) = audit
            .trial(Side::X, 0)
            .map_err(|e| e.in_cell(name, "audit"))?;
        let declared: f64 = log.ledger.total_epsilon();
        let delta: f64 = log.ledger.entries.iter().filter_map(|e| e.delta).sum();
        if !log.ledger.is_private_within(Some(declared)) || declared <= 0.0 {
            return Err(Error::param(
                "pipeline",
                format!(
                    "`{name}` declares no private ε to audit: {}",
                    no_claim(&log.ledger)
                ),
            ));
        }
        // A claim names its row for the whole run: one audit per command invocation.
        let row: &'static str = Box::leak(format!("{name} (declared)").into_boxed_str());
        let pair: &'static str = Box::leak(audit.pair_text().into_boxed_str());
        audit.claim = Claim::new(row, declared, pair)
            .with_delta(delta)
            .under(audit.relation);
        Ok(audit)
    }

    /// The neighbours and the statistic, as the audit's table states them.
    fn pair_text(&self) -> String {
        let eps = self.epsilon;
        let eps = match &self.size {
            Some(size) => format!("{eps}, public N = {}", size.n),
            None => eps.to_string(),
        };
        match &self.subject {
            Subject::Release { x, x_prime, .. } => format!(
                "X = {x:?}, X' = {x_prime:?} (the spec's pipeline at eps = {eps}); statistic: the release"
            ),
            Subject::Learner { .. } => format!(
                "X = ten all-zero rows, X' = X with a canary row (the spec's pipeline at eps = \
                 {eps}); statistic: the class predicted for the canary"
            ),
        }
    }

    /// One trial on `side`'s neighbour with seed `seed`: its log and the statistic.
    fn trial(&self, side: Side, seed: u64) -> Result<(TrialLog, f64)> {
        let mut log = TrialLog::with_relation(seed, self.relation);
        log.ledger.set_public_size(self.size.clone());
        log.spec_dir.clone_from(&self.spec_dir);
        let statistic = match &self.subject {
            Subject::Release {
                release,
                x,
                x_prime,
            } => {
                let input = ReleaseInput {
                    values: side.pick(x, x_prime),
                    epsilon: Some(self.epsilon),
                };
                release.run(&input, &mut log)?;
                *log.metrics.get("release").ok_or_else(|| {
                    Error::param("pipeline", "the release recorded no `release` value")
                })?
            }
            Subject::Learner {
                learner,
                neighbours: n,
            } => {
                let train = side.pick(&n.train, &n.train_prime);
                let probe = [n.data.labels.len() as u32 - 1];
                let counts = match &n.data.features {
                    Features::Binary(x) => Some(crate::counts::ClassCounts::from_rows(
                        x,
                        &n.data.labels,
                        train,
                        2,
                    )),
                    _ => None,
                };
                let input = FitInput {
                    data: &n.data,
                    train,
                    test: &probe,
                    counts: counts.as_ref(),
                    features: None,
                    workspace: &(),
                };
                let model = learner.fit(&input, &mut log)?;
                f64::from(model.predict(&n.data, &probe)?[0])
            }
        };
        Ok((log, statistic))
    }

    /// The first error any run met, if one did: the audit's result is then meaningless.
    pub fn failure(&self) -> Option<Error> {
        self.failed.lock().ok()?.take()
    }
}

/// The training-set size N the runs of an audit under `relation` read as public, the same on X
/// (`rows` rows) and X' (`rows_prime`), as a cell's N is the same for its data and their
/// neighbour (`pipeline::run_cell`): under replace-one the size both sides have; under
/// add/remove only where the spec declares N public, a `grid.n_train` axis or datasets that are
/// all generated or declare `public_n` (the size a cell reads), and then X's size (an empty X,
/// which no cell has, takes X''s); X' has one row more or less and runs with the same N, which
/// the sensitivity of a mechanism reading N covers. `None`: N is private, as in the spec's
/// cells, and a mechanism that reads it is refused.
pub fn audit_size(
    spec: &Spec,
    relation: Relation,
    rows: usize,
    rows_prime: usize,
) -> Option<PublicSize> {
    let n = if rows > 0 { rows } else { rows_prime };
    let declared = match relation {
        Relation::ReplaceOne => "replace-one: N is the same on both neighbours".to_string(),
        Relation::AddRemove if spec.grid.n_train.is_some() => "declared in grid.n_train".into(),
        Relation::AddRemove => {
            let datasets = &spec.experiment.datasets;
            let public = |d: &String| {
                spec.catalog
                    .get(d)
                    .and_then(DatasetDef::public_train)
                    .is_some()
            };
            if datasets.is_empty() || !datasets.iter().all(public) {
                return None;
            }
            format!(
                "declared by the spec's datasets ({}: generated or `public_n`)",
                datasets.join(", ")
            )
        }
    };
    Some(PublicSize::new(
        n,
        format!("{declared}; the audit's X has N = {n} rows and X' runs with the same N"),
    ))
}

/// What pipeline `name` runs under audit: its release on the given (or default) columns, or its
/// learner on the canary neighbours.
fn subject(
    pipeline: &crate::spec::Pipeline,
    name: &str,
    epsilon: f64,
    relation: Relation,
    neighbours: (Option<Vec<f64>>, Option<Vec<f64>>),
) -> Result<Subject> {
    Ok(match &pipeline.step {
        Step::Release(release) => {
            let (x, x_prime) = column_neighbours(relation, neighbours)?;
            Subject::Release {
                release: Arc::clone(&release.params),
                x,
                x_prime,
            }
        }
        Step::Learner(_) if neighbours.0.is_some() || neighbours.1.is_some() => {
            return Err(Error::param(
                "x",
                format!(
                    "`{name}` is a learner: it is audited on the canary neighbours, not on --x/--x-prime columns"
                ),
            ));
        }
        Step::Learner(learner) if pipeline.selection.is_none() => {
            let at = GridValues {
                epsilon: Some(epsilon),
                ..GridValues::default()
            };
            let budget = CellBudget::resolve(Some(epsilon), &pipeline.shares);
            Subject::Learner {
                learner: learner.params.learner(&at, &budget)?,
                neighbours: Box::new(canary_neighbours(relation)),
            }
        }
        _ => {
            return Err(Error::param(
                "pipeline",
                format!(
                    "`{name}` is neither a release nor a learner without selection (only \
                     those are audited from a spec)"
                ),
            ));
        }
    })
}

impl Auditable for PipelineAudit {
    fn claim(&self) -> Claim {
        self.claim
    }

    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        if self.failed.lock().map_or(true, |f| f.is_some()) {
            return f64::NAN;
        }
        match self.trial(side, rng.next_u64()) {
            Ok((_, statistic)) => statistic,
            Err(e) => {
                if let Ok(mut first) = self.failed.lock() {
                    first.get_or_insert(e);
                }
                f64::NAN
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(relation: Relation, x: &[f64], xp: Option<&[f64]>) -> Result<(Vec<f64>, Vec<f64>)> {
        column_neighbours(relation, (Some(x.to_vec()), xp.map(<[f64]>::to_vec)))
    }

    /// X' is made from X as the help says, and a given pair must neighbour under the relation
    /// as multisets: the empty column and one value under add/remove, one value swapped
    /// anywhere under replace-one; anything else is refused naming the flags.
    #[test]
    fn neighbours_are_made_from_x_and_checked() {
        use Relation::{AddRemove, ReplaceOne};
        assert_eq!(pair(AddRemove, &[], None).unwrap(), (vec![], vec![1.0]));
        assert_eq!(
            pair(ReplaceOne, &[0.0, 1.0], None).unwrap().1,
            vec![0.0, 0.0]
        );
        assert_eq!(
            pair(ReplaceOne, &[0.0, 0.5], None).unwrap().1,
            vec![0.0, 1.0]
        );
        assert!(pair(ReplaceOne, &[], None).is_err());
        assert!(column_neighbours(AddRemove, (None, Some(vec![1.0]))).is_err());
        assert_eq!(
            column_neighbours(ReplaceOne, (None, None)).unwrap(),
            default_neighbours(ReplaceOne)
        );
        for (relation, x, xp, ok) in [
            (AddRemove, &[][..], &[1.0][..], true),
            (AddRemove, &[2.0, 0.0], &[0.0, 1.0, 2.0], true),
            (AddRemove, &[0.0, 1.0, 2.0], &[0.0, 2.0], true),
            (AddRemove, &[0.0, 0.0], &[1.0], false),
            (AddRemove, &[0.0], &[0.0], false),
            (AddRemove, &[0.0], &[1.0, 1.0], false),
            (ReplaceOne, &[0.0, 2.0], &[2.0, 1.0], true),
            (ReplaceOne, &[0.0, 2.0], &[0.0, 2.0], false),
            (ReplaceOne, &[0.0, 2.0], &[1.0, 3.0], false),
            (ReplaceOne, &[0.0], &[0.0, 1.0], false),
        ] {
            let got = pair(relation, x, Some(xp));
            assert_eq!(got.is_ok(), ok, "{relation:?} {x:?} {xp:?}: {got:?}");
            if let Err(e) = got {
                assert!(e.to_string().contains("not neighbours"), "{e}");
            }
        }
    }
}
