//! Black-box audit of a spec's release pipeline (`epsilab audit --spec S --pipeline P`): the
//! release runs as the spec states it (an external program through its protocol, or a
//! built-in release) on two neighbouring columns, and the audit's lower bound is reported
//! beside the ε (and δ) its ledger declares. Nothing inside the mechanism is read: this is
//! how a declared, not audited, external ledger is tested from outside.
//!
//! Neighbours: by default X = ten 0s and X' = X with one value replaced by 1 (replace-one) or
//! X plus a 1 (add/remove), the worst case of a mean, sum or count on public bounds [0, 1];
//! `--x` and `--x-prime` give others. Statistic: the released value. Each run is one trial
//! of the pipeline with its own seed (drawn from the audit's stream), under the spec's
//! relation and folder.

use super::{Auditable, Claim, Side};
use crate::error::{Error, Result};
use crate::kinds::{ReleaseInput, ReleaseKind};
use crate::learners::TrialLog;
use crate::privacy::Relation;
use crate::rng::Rng;
use crate::spec::{Spec, Step};
use rand::RngCore;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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

/// One release pipeline of a spec, ready to audit at one ε on one pair of neighbours.
pub struct PipelineAudit {
    claim: Claim,
    release: Arc<dyn ReleaseKind>,
    epsilon: f64,
    relation: Relation,
    spec_dir: Option<PathBuf>,
    x: Vec<f64>,
    x_prime: Vec<f64>,
    /// The first error of a run (a run cannot return one; the audit reports it afterwards).
    failed: Mutex<Option<Error>>,
}

impl PipelineAudit {
    /// The audit of pipeline `name` of `spec` at `epsilon` on (`x`, `x_prime`): one run on X
    /// reads the ε and δ its ledger declares, which become the claim.
    pub fn new(
        spec: &Spec,
        name: &str,
        epsilon: f64,
        neighbours: (Vec<f64>, Vec<f64>),
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
        let Step::Release(release) = &pipeline.step else {
            return Err(Error::param(
                "pipeline",
                format!(
                    "`{name}` is not a release pipeline (only releases are audited from a spec)"
                ),
            ));
        };
        if neighbours.0.is_empty() || neighbours.1.is_empty() {
            return Err(Error::param(
                "x",
                "the neighbouring columns need at least one value",
            ));
        }
        let mut audit = PipelineAudit {
            claim: Claim::new("", epsilon, ""),
            release: Arc::clone(&release.params),
            epsilon,
            relation: spec.experiment.neighbours,
            spec_dir: spec.path.parent().map(std::path::Path::to_path_buf),
            x: neighbours.0,
            x_prime: neighbours.1,
            failed: Mutex::new(None),
        };
        let log = audit
            .trial(&audit.x, 0)
            .map_err(|e| e.in_cell(name, "audit"))?;
        let declared: f64 = log.ledger.total_epsilon();
        let delta: f64 = log.ledger.entries.iter().filter_map(|e| e.delta).sum();
        if !log.ledger.is_private_within(Some(declared)) || declared <= 0.0 {
            return Err(Error::param(
                "pipeline",
                format!(
                    "`{name}` declares no private ε to audit (its ledger: {:?})",
                    log.ledger.entries
                ),
            ));
        }
        // A claim names its row for the whole run: one audit per command invocation.
        let row: &'static str = Box::leak(format!("{name} (declared)").into_boxed_str());
        let pair: &'static str = Box::leak(
            format!(
                "X = {:?}, X' = {:?} (the spec's pipeline at eps = {epsilon}); statistic: the release",
                audit.x, audit.x_prime
            )
            .into_boxed_str(),
        );
        audit.claim = Claim::new(row, declared, pair)
            .with_delta(delta)
            .under(audit.relation);
        Ok(audit)
    }

    /// One trial of the release on `values` with seed `seed`: its log.
    fn trial(&self, values: &[f64], seed: u64) -> Result<TrialLog> {
        let mut log = TrialLog::with_relation(seed, self.relation);
        log.spec_dir.clone_from(&self.spec_dir);
        let input = ReleaseInput {
            values,
            epsilon: Some(self.epsilon),
        };
        self.release.run(&input, &mut log)?;
        if !log.metrics.contains_key("release") {
            return Err(Error::param(
                "pipeline",
                "the release recorded no `release` value",
            ));
        }
        Ok(log)
    }

    /// The first error any run met, if one did: the audit's result is then meaningless.
    pub fn failure(&self) -> Option<Error> {
        self.failed.lock().ok()?.take()
    }
}

impl Auditable for PipelineAudit {
    fn claim(&self) -> Claim {
        self.claim
    }

    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let values = side.pick(&self.x, &self.x_prime);
        if self.failed.lock().map_or(true, |f| f.is_some()) {
            return f64::NAN;
        }
        match self.trial(values, rng.next_u64()) {
            Ok(log) => log.metrics["release"],
            Err(e) => {
                if let Ok(mut first) = self.failed.lock() {
                    first.get_or_insert(e);
                }
                f64::NAN
            }
        }
    }
}
