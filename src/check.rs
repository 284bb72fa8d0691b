//! `epsilab check`: the CI regression gate.
//!
//! Reruns every spec of a folder in smoke mode (into a temporary folder) and compares each cell
//! — (dataset, pipeline, grid values, quantity) — with `expectations/<name>.json`, written by
//! `epsilab check --update`.
//!
//! **Accuracy rule.** A cell fails when
//! `|mean − expected| > max(4 · sqrt(se² + se_expected²), 0.02 · max(1, |expected|))`.
//! Runs are deterministic for a given seed, so unchanged code reproduces every expectation
//! exactly. The statistical tolerance is there for code changes that are correct but reorder the
//! random draws (a refactor drawing noise in another order, a new RNG stream): the smoke mean is
//! then a fresh sample of the same distribution and moves by about its standard error, which
//! must not fail CI. A learner that really loses 3 points moves the low-variance cells
//! (non-private models, private models at large ε, deterministic counts) by far more than their
//! tolerance, so at least those fail. New or missing cells and a changed spec hash also fail
//! (refresh with `--update` after an intended change).
//!
//! **Speed rule.** Absolute times vary across machines and with load, so the gate measures a
//! ratio inside one process: the single-threaded smoke runs of all specs against a fixed
//! reference workload (Laplace sampling and logs, like the harness's hot loops) timed just
//! before and after them (best of 3). It fails when the ratio exceeds 3× the stored ratio
//! (`expectations/speed.json`). A machine that is uniformly slower or busier changes both times
//! alike; only a relative slowdown of the harness of 3× or more trips it. The logistic-regression
//! path gets its own ratio ([`lr_workload_seconds`]: fixed LR fits and a cross-validation against
//! the same reference), so an LR slowdown cannot hide among the other specs' smoke time.

use crate::data::DataDir;
use crate::error::{Error, Result};
use crate::runner::{RunOptions, run};
use crate::spec::Spec;
use crate::stats::mean_se;
use crate::store::{TrialRecord, read_dir_records};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Folder of expectation files, inside the specs folder.
pub const EXPECTATIONS_DIR: &str = "expectations";
/// Allowed slowdown of the smoke runs relative to the reference workload.
pub const SPEED_FACTOR: f64 = 3.0;

/// One expected cell of a smoke run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpectedCell {
    pub dataset: String,
    pub pipeline: String,
    pub params: BTreeMap<String, Value>,
    /// `test_accuracy`, `train_accuracy`, `baseline_accuracy`, a named metric, or
    /// `mean(VECTOR)` for a probe's recorded vector.
    pub metric: String,
    pub mean: f64,
    pub se: f64,
    pub n: usize,
}

/// `expectations/<name>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Expectation {
    pub experiment: String,
    pub spec_hash: String,
    pub cells: Vec<ExpectedCell>,
}

/// `expectations/speed.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeedExpectation {
    /// Smoke seconds (all specs, one thread) / reference-workload seconds.
    pub ratio: f64,
    pub factor: f64,
    /// Seconds of the fixed logistic-regression workload ([`lr_workload_seconds`]) /
    /// reference-workload seconds: the LR path alone, so an LR slowdown is not diluted by
    /// the rest of the smoke runs. Absent in files written before it existed (not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr_ratio: Option<f64>,
}

/// How to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub experiments: PathBuf,
    pub data_dir: DataDir,
    /// Write the expectations instead of comparing.
    pub update: bool,
    /// Only these experiment names (all when empty); the speed check needs all.
    pub only: Vec<String>,
    /// Run the speed check.
    pub speed: bool,
}

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub specs: usize,
    pub cells: usize,
    pub failures: Vec<String>,
    pub speed_ratio: Option<f64>,
    /// The LR workload's ratio to the reference ([`lr_workload_seconds`]).
    pub lr_speed_ratio: Option<f64>,
    pub smoke_seconds: f64,
}

/// Cells of a run: per (dataset, pipeline, grid values) every recorded quantity.
pub fn cells(records: &[TrialRecord]) -> Vec<ExpectedCell> {
    type Key = (String, String, String, String);
    let mut groups: BTreeMap<Key, (BTreeMap<String, Value>, Vec<f64>)> = BTreeMap::new();
    for r in records {
        let pkey = serde_json::to_string(&r.params).expect("params");
        let mut put = |m: String, v: f64| {
            if v.is_finite() {
                groups
                    .entry((r.dataset.clone(), r.pipeline.clone(), pkey.clone(), m))
                    .or_insert_with(|| (r.params.clone(), Vec::new()))
                    .1
                    .push(v);
            }
        };
        for m in ["test_accuracy", "train_accuracy", "baseline_accuracy"] {
            if let Some(v) = r.metric(m) {
                put(m.into(), v);
            }
        }
        for (m, v) in &r.metrics {
            put(m.clone(), *v);
        }
        for (m, v) in &r.vectors {
            if !v.is_empty() {
                put(format!("mean({m})"), v.iter().sum::<f64>() / v.len() as f64);
            }
        }
    }
    groups
        .into_iter()
        .map(|((dataset, pipeline, _, metric), (params, vals))| {
            let (mean, se) = mean_se(&vals);
            ExpectedCell {
                dataset,
                pipeline,
                params,
                metric,
                mean,
                se,
                n: vals.len(),
            }
        })
        .collect()
}

/// The tolerance of one cell (see the module docs).
pub fn tolerance(expected: &ExpectedCell, se_now: f64) -> f64 {
    (4.0 * (expected.se.powi(2) + se_now.powi(2)).sqrt()).max(0.02 * expected.mean.abs().max(1.0))
}

fn cell_name(spec: &str, c: &ExpectedCell) -> String {
    let params: Vec<String> = c
        .params
        .iter()
        .map(|(k, v)| format!("{k} = {}", crate::report::x_text(v)))
        .collect();
    format!(
        "{spec}: dataset `{}`, pipeline `{}`, grid point {{{}}}, metric `{}`",
        c.dataset,
        c.pipeline,
        params.join(", "),
        c.metric
    )
}

/// Compares a run's cells with the expectation; one message per failing cell.
pub fn compare(name: &str, expected: &Expectation, now: &[ExpectedCell]) -> Vec<String> {
    let key = |c: &ExpectedCell| {
        (
            c.dataset.clone(),
            c.pipeline.clone(),
            serde_json::to_string(&c.params).expect("params"),
            c.metric.clone(),
        )
    };
    let now_by: BTreeMap<_, &ExpectedCell> = now.iter().map(|c| (key(c), c)).collect();
    let mut failures = Vec::new();
    for e in &expected.cells {
        match now_by.get(&key(e)) {
            None => failures.push(format!(
                "{}: cell missing from the smoke run",
                cell_name(name, e)
            )),
            Some(c) => {
                let tol = tolerance(e, c.se);
                let d = c.mean - e.mean;
                if d.abs() > tol || !c.mean.is_finite() {
                    failures.push(format!(
                        "{}: mean {:.4} vs expected {:.4} (difference {:+.4}, tolerance {:.4})",
                        cell_name(name, e),
                        c.mean,
                        e.mean,
                        d,
                        tol
                    ));
                }
            }
        }
    }
    let exp_keys: std::collections::BTreeSet<_> = expected.cells.iter().map(key).collect();
    for c in now {
        if !exp_keys.contains(&key(c)) {
            failures.push(format!(
                "{}: new cell not in the expectations (run `epsilab check --update` if intended)",
                cell_name(name, c)
            ));
        }
    }
    failures
}

/// The fixed reference workload of the speed check; returns its best time of 3 (seconds).
pub fn reference_seconds() -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let mut rng = crate::rng::rng_from(&["speed reference"]);
            let lap = crate::privacy::LaplaceNoise::with_scale(10.0).expect("scale");
            let mut acc = 0.0f64;
            for _ in 0..2_000_000 {
                acc += (1.0 + lap.sample(&mut rng).abs()).ln();
            }
            std::hint::black_box(acc);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// A fixed logistic-regression workload (seeded synthetic data, no files), best time of 3:
/// an Adult-shaped fit (8000 x 123, 14 ones per row, Newton), a wide +-1-encoded fit
/// (600 x 400, Newton-CG), a warm-started 5-fold cross-validation over the thesis's grid on
/// it and a dense Gaussian fit (4000 x 40, L-BFGS), i.e. every solver, design operation and
/// the CV loop the LR pipelines spend their time in.
pub fn lr_workload_seconds() -> f64 {
    use crate::data::synthetic::logistic_binary;
    use crate::learners::logistic::preprocess::thesis_binary;
    use crate::learners::logistic::select::{LAMBDA_GRID, Starts, cross_validate_lambda};
    use crate::learners::logistic::{Design, Encoding, Objective, SolverSettings, labels_pm1};
    let make = |n: usize, d: usize, k: usize, tag: &str| {
        let mut rng = crate::rng::rng_from(&["lr speed reference", tag]);
        logistic_binary(&mut rng, tag, tag, n, d, k)
    };
    let narrow = make(8000, 123, 14, "narrow");
    let wide = make(600, 400, 30, "wide");
    let dense = {
        use rand::Rng as _;
        let mut rng = crate::rng::rng_from(&["lr speed reference", "dense"]);
        ndarray::Array2::from_shape_fn((4000, 40), |_| rng.r#gen::<f64>() - 0.5)
    };
    let dense_y: Vec<f64> = dense
        .rows()
        .into_iter()
        .map(|r| if r[0] + r[1] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let s = SolverSettings::default();
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let rows: Vec<u32> = (0..8000).collect();
            let y = labels_pm1(&narrow, &rows).expect("two classes");
            let mut des = Design::new(&narrow, &rows, None, Encoding::Indicator).expect("cols");
            des.scale_all(1.0 / 14f64.sqrt());
            std::hint::black_box(Objective::regularised(&des, &y, 1.0).minimise(&s));
            let rows: Vec<u32> = (0..600).collect();
            let y = labels_pm1(&wide, &rows).expect("two classes");
            let (des, _) = thesis_binary(&wide, &rows, None, true).expect("cols");
            std::hint::black_box(Objective::regularised(&des, &y, 1.0).minimise(&s));
            let mut rng = crate::rng::rng_from(&["lr speed reference", "cv"]);
            std::hint::black_box(
                cross_validate_lambda(&des, &y, &LAMBDA_GRID, 5, &s, Starts::Warm, &mut rng)
                    .expect("folds"),
            );
            let des = Design::dense(dense.view());
            std::hint::black_box(Objective::regularised(&des, &dense_y, 1.0).minimise(&s));
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Whether a measured speed ratio passes against the stored one.
pub fn speed_ok(measured: f64, stored: &SpeedExpectation) -> bool {
    measured <= stored.ratio * stored.factor
}

/// The failure message of the LR speed ratio, if it exceeds the stored one by the factor.
pub fn lr_speed_failure(measured: f64, stored: &SpeedExpectation) -> Option<String> {
    let limit = stored.lr_ratio? * stored.factor;
    (measured > limit).then(|| {
        format!(
            "speed: the logistic-regression workload took {measured:.2}x the reference workload, stored {:.2}x (limit {:.0}x of it): the LR path got slower",
            stored.lr_ratio.unwrap_or_default(),
            stored.factor
        )
    })
}

fn read_json<T: for<'de> Deserialize<'de>>(p: &Path) -> Result<Option<T>> {
    match std::fs::read_to_string(p) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| Error::Parse {
                path: p.into(),
                line: e.line(),
                reason: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(p, e)),
    }
}

fn write_json<T: Serialize>(p: &Path, v: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(v).expect("json") + "\n";
    std::fs::write(p, text).map_err(|e| Error::io(p, e))
}

/// Runs the check (or, with `update`, rewrites the expectations).
pub fn check(opts: &CheckOptions) -> Result<CheckReport> {
    let exp_dir = opts.experiments.join(EXPECTATIONS_DIR);
    std::fs::create_dir_all(&exp_dir).map_err(|e| Error::io(&exp_dir, e))?;
    let tmp = std::env::temp_dir().join(format!(
        "epsilab-check-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let result = check_in(opts, &exp_dir, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

fn check_in(opts: &CheckOptions, exp_dir: &Path, tmp: &Path) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let ref_before = if opts.speed { reference_seconds() } else { 0.0 };
    for path in crate::report::reproduction::spec_files(&opts.experiments)? {
        let spec = Spec::load(&path)?;
        let name = spec.experiment.name.clone();
        if !opts.only.is_empty() && !opts.only.contains(&name) {
            continue;
        }
        let ropts = RunOptions {
            threads: 1,
            data_dir: opts.data_dir.clone(),
            out_dir: tmp.into(),
            smoke: true,
            force: true,
            progress: false,
            shard: None,
        };
        let s = run(&spec, &ropts)?;
        report.smoke_seconds += s.seconds;
        report.specs += 1;
        let now = cells(&read_dir_records(&s.results_dir)?);
        report.cells += now.len();
        let file = exp_dir.join(format!("{name}.json"));
        if opts.update {
            write_json(
                &file,
                &Expectation {
                    experiment: name,
                    spec_hash: spec.hash.clone(),
                    cells: now,
                },
            )?;
            continue;
        }
        let Some(expected) = read_json::<Expectation>(&file)? else {
            report.failures.push(format!(
                "{name}: no expectations at {} (run `epsilab check --update`)",
                file.display()
            ));
            continue;
        };
        if expected.spec_hash != spec.hash {
            report.failures.push(format!(
                "{name}: the spec changed since its expectations were written (run `epsilab check --update` if intended)"
            ));
        }
        report.failures.extend(compare(&name, &expected, &now));
    }
    if opts.speed && opts.only.is_empty() {
        let lr_seconds = lr_workload_seconds();
        let reference = ref_before.min(reference_seconds()).max(1e-9);
        let ratio = report.smoke_seconds / reference;
        let lr_ratio = lr_seconds / reference;
        report.speed_ratio = Some(ratio);
        report.lr_speed_ratio = Some(lr_ratio);
        let file = exp_dir.join("speed.json");
        if opts.update {
            write_json(
                &file,
                &SpeedExpectation {
                    ratio,
                    factor: SPEED_FACTOR,
                    lr_ratio: Some(lr_ratio),
                },
            )?;
        } else if let Some(stored) = read_json::<SpeedExpectation>(&file)? {
            if !speed_ok(ratio, &stored) {
                report.failures.push(format!(
                    "speed: smoke runs took {ratio:.2}x the reference workload, stored {:.2}x (limit {:.0}x of it): the harness got slower",
                    stored.ratio, stored.factor
                ));
            }
            if let Some(lr) = lr_speed_failure(lr_ratio, &stored) {
                report.failures.push(lr);
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(mean: f64, se: f64) -> ExpectedCell {
        ExpectedCell {
            dataset: "d".into(),
            pipeline: "p".into(),
            params: BTreeMap::new(),
            metric: "test_accuracy".into(),
            mean,
            se,
            n: 2,
        }
    }

    #[test]
    fn tolerance_rule() {
        // Floor of 2 points for accuracies, 4 combined SE above it.
        assert!((tolerance(&cell(0.8, 0.0), 0.0) - 0.02).abs() < 1e-12);
        assert!((tolerance(&cell(0.8, 0.03), 0.04) - 0.2).abs() < 1e-12);
        // Counts: 2% of the value.
        assert!((tolerance(&cell(500.0, 0.0), 0.0) - 10.0).abs() < 1e-9);
        let e = Expectation {
            experiment: "x".into(),
            spec_hash: String::new(),
            cells: vec![cell(0.8, 0.001)],
        };
        assert!(compare("x", &e, &[cell(0.81, 0.001)]).is_empty());
        let f = compare("x", &e, &[cell(0.77, 0.001)]);
        assert_eq!(f.len(), 1);
        assert!(f[0].contains("dataset `d`") && f[0].contains("test_accuracy"));
    }

    #[test]
    fn speed_rule() {
        let mut s = SpeedExpectation {
            ratio: 2.0,
            factor: 3.0,
            lr_ratio: None,
        };
        assert!(speed_ok(5.9, &s));
        assert!(!speed_ok(6.1, &s));
        // No stored LR ratio: not checked; with one, 3x it is the limit.
        assert!(lr_speed_failure(100.0, &s).is_none());
        s.lr_ratio = Some(0.5);
        assert!(lr_speed_failure(1.49, &s).is_none());
        let f = lr_speed_failure(1.51, &s).expect("too slow");
        assert!(
            f.contains("logistic-regression") && f.contains("1.51x"),
            "{f}"
        );
    }
}
