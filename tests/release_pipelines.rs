//! Release and attack pipelines from specs: metrics, ledgers that add up to the budget,
//! determinism across thread counts, refusals of the wrong kind of dataset, and the release
//! kinds' noise scale through the spec face.

mod common;

use common::{by_key, run_options, write_spec};
use epsilab::kinds::{ATTACKS, RELEASES, ReleaseInput, find};
use epsilab::learners::TrialLog;
use epsilab::privacy::{PublicSize, Relation};
use epsilab::runner::run;
use epsilab::spec::Spec;
use epsilab::store::read_dir_records;

const SPEC: &str = r#"
[experiment]
name = "releases"
trials = 4
seed = 3
datasets = ["u"]

[dataset.u]
source = "uniform"
n = 500
seed = 2

[grid]
epsilon = [0.1, 1]
n_train = [100, 500]

[[pipeline]]
name = "mean"
release = "laplace"
query = "mean"
bounds = [0, 0.5]

[[pipeline]]
name = "gaussian count"
release = "gaussian"
query = "count"
at_least = 0.5
bounds = [0, 1]
delta = 1e-5
tolerance = 0.1

[[pipeline]]
name = "median"
release = "exponential_median"
bounds = [0, 1]

[[pipeline]]
name = "composed"
release = "composed_average"
bounds = [0, 1]
sum_share = 0.25

[[pipeline]]
name = "histogram"
release = "histogram"
bounds = [0, 1]
bins = [0, 0.25, 0.5, 1]

[report]
x = "epsilon"
metrics = ["abs_error"]
"#;

#[test]
fn release_trials_record_their_metrics_and_spend_exactly_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Spec::load(&write_spec(dir.path(), "r.toml", SPEC)).unwrap();
    run(&spec, &run_options(&dir.path().join("one"), 1)).unwrap();
    run(&spec, &run_options(&dir.path().join("two"), 2)).unwrap();
    let one = read_dir_records(&dir.path().join("one/releases")).unwrap();
    let two = read_dir_records(&dir.path().join("two/releases")).unwrap();
    assert_eq!(one.len(), 5 * 2 * 2 * 4);
    for r in &one {
        for m in ["release", "truth", "abs_error", "clamped"] {
            assert!(r.metrics.contains_key(m), "{}: {m}", r.key);
        }
        let eps = r.epsilon.unwrap();
        assert!(
            (r.ledger.total_epsilon() - eps).abs() < 1e-12,
            "{}: the ledger spends {} of {eps}",
            r.key,
            r.ledger.total_epsilon()
        );
        assert!(r.private && r.baseline_accuracy.is_none());
        assert!(r.ledger.entries.iter().any(|e| e.name == "clamp"));
        assert_eq!(r.n_train, r.params["n_train"].as_u64().unwrap() as usize);
        let err = (r.metrics["release"] - r.metrics["truth"]).abs();
        if r.pipeline != "histogram" {
            assert!((err - r.metrics["abs_error"]).abs() < 1e-12);
        }
    }
    // Bounds [0, 0.5] clamp about half of U(0, 1).
    let clamped = one.iter().find(|r| r.pipeline == "mean").unwrap().metrics["clamped"];
    assert!(clamped > 20.0, "{clamped}");
    assert!(
        one.iter()
            .any(|r| r.metrics.contains_key("within_analytic"))
    );
    assert_eq!(by_key(one), by_key(two), "1 and 2 threads must agree");
}

#[test]
fn scalar_sources_and_classification_datasets_are_not_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let learner = SPEC.replace(
        "release = \"laplace\"\nquery = \"mean\"\nbounds = [0, 0.5]",
        "learner = \"nb\"",
    );
    let spec = Spec::load(&write_spec(dir.path(), "l.toml", &learner)).unwrap();
    let e = run(&spec, &run_options(dir.path(), 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("scalar source") && e.contains("pipeline `mean`"),
        "{e}"
    );
    let table = SPEC.replace(
        "[dataset.u]\nsource = \"uniform\"\nn = 500\nseed = 2",
        "[dataset.u]\nsource = \"nb_sampled\"\ndimension = 3\ntheta = [0.5, 0.5]\ntrain = 600\ntest = 10",
    );
    let spec = Spec::load(&write_spec(dir.path(), "t.toml", &table)).unwrap();
    let e = run(&spec, &run_options(dir.path(), 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field `pipeline[0]`: ") && e.contains("reads a scalar source"),
        "{e}"
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| {
        let p = e.unwrap().path();
        p.extension().is_some_and(|x| x == "toml")
    }));
}

/// Runs a registered release kind with `fields` on `values`, trial by trial.
fn releases(kind: &str, fields: &str, values: &[f64], eps: f64, trials: u64) -> Vec<f64> {
    let entry = find(RELEASES, kind).unwrap();
    let params = (entry.parse)(toml::from_str(fields).unwrap()).unwrap();
    (0..trials)
        .map(|seed| {
            let mut log = TrialLog::new(seed);
            let n = PublicSize::new(values.len(), "declared by the test");
            log.ledger.set_public_size(Some(n));
            let input = ReleaseInput {
                values,
                epsilon: Some(eps),
            };
            params.run(&input, &mut log).unwrap();
            log.metrics["release"] - log.metrics["truth"]
        })
        .collect()
}

/// The Laplace mean through the spec face over the public n: E|error| = b = (hi - lo) / (n eps).
/// With 4000 draws of |Lap(b)| (sd b) the z statistic of the mean is N(0, 1); |z| < 4.42 holds
/// with probability 1 - 1e-5, and a scale off by ±30% gives |z| near 19.
#[test]
fn the_laplace_release_has_the_stated_scale_and_rejects_a_wrong_one() {
    let values: Vec<f64> = (0..101).map(|i| i as f64 / 100.0).collect();
    let errors = releases(
        "laplace",
        "query = \"mean\"\nbounds = [0, 1]",
        &values,
        0.5,
        4000,
    );
    let b = 1.0 / (101.0 * 0.5);
    let mean_abs = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    let z = |scale: f64| (mean_abs - scale) / (scale / (errors.len() as f64).sqrt());
    assert!(z(b).abs() < 4.42, "z = {}", z(b));
    assert!(z(1.3 * b).abs() > 4.42 && z(0.7 * b).abs() > 4.42);
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    assert!(mean.abs() < 4.42 * b * 2f64.sqrt() / (errors.len() as f64).sqrt());
}

/// The Gaussian release's sd is the calibrated sigma: the sample variance of 4000 draws has
/// relative sd sqrt(2/3999) = 2.2%; |z| < 4.42 (level 1e-5), ±30% in sigma gives |z| > 10.
#[test]
fn the_gaussian_release_has_the_calibrated_sigma() {
    let values = vec![0.5; 200];
    let fields = "query = \"count\"\nbounds = [0, 1]\ndelta = 1e-5\ncalibration = \"classic\"";
    let errors = releases("gaussian", fields, &values, 0.5, 4000);
    let sigma = (2.0 * (1.25f64 / 1e-5).ln()).sqrt() / 0.5;
    let var = errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64;
    let se = (2.0 / (errors.len() as f64 - 1.0)).sqrt();
    let z = |s: f64| (var / (s * s) - 1.0) / se;
    assert!(z(sigma).abs() < 4.42, "z = {}", z(sigma));
    assert!(z(1.3 * sigma).abs() > 4.42 && z(0.7 * sigma).abs() > 4.42);
}

/// The Gaussian release takes the calibrations PCA takes: `classic_below_1` is the classic
/// sigma below eps = 1 and the analytic one from there (the same draws as `analytic` at eps 2);
/// a calibration it does not know is refused.
#[test]
fn the_gaussian_release_takes_every_calibration() {
    let values = vec![0.5; 200];
    let fields = |c: &str| {
        format!("query = \"count\"\nbounds = [0, 1]\ndelta = 1e-5\ncalibration = \"{c}\"")
    };
    for eps in [0.5, 2.0] {
        let below = releases("gaussian", &fields("classic_below_1"), &values, eps, 20);
        let want = if eps < 1.0 { "classic" } else { "analytic" };
        assert_eq!(
            below,
            releases("gaussian", &fields(want), &values, eps, 20),
            "eps {eps}"
        );
    }
    let entry = find(RELEASES, "gaussian").unwrap();
    assert!((entry.parse)(toml::from_str(&fields("exact")).unwrap()).is_err());
}

#[test]
fn attacks_record_success_and_the_exact_attack_always_wins() {
    let diff = find(ATTACKS, "differencing").unwrap();
    let exact = (diff.parse)(toml::from_str("noise = false").unwrap()).unwrap();
    assert!(!exact.private());
    let table = [0.0, 1.0, 1.0, 0.0, 1.0];
    for seed in 0..20 {
        let mut log = TrialLog::with_relation(seed, Relation::ReplaceOne);
        let input = ReleaseInput {
            values: &table,
            epsilon: None,
        };
        exact.run(&input, &mut log).unwrap();
        assert_eq!(log.metrics["success"], 1.0);
        assert!(!log.ledger.is_private_within(None));
    }
    let noisy = (diff.parse)(toml::Table::new()).unwrap();
    let mut log = TrialLog::with_relation(1, Relation::ReplaceOne);
    let input = ReleaseInput {
        values: &table,
        epsilon: Some(0.5),
    };
    noisy.run(&input, &mut log).unwrap();
    assert!(
        (log.ledger.total_epsilon() - 1.0).abs() < 1e-12,
        "two counts at eps each"
    );
    assert!(log.metrics["success_analytic"] <= log.metrics["bound"]);
    let mut add = TrialLog::new(1);
    assert!(
        noisy.run(&input, &mut add).is_err(),
        "the attack's relation is replace-one"
    );

    let vote = find(ATTACKS, "majority_vote").unwrap();
    let vote = (vote.parse)(toml::from_str("ks = [1, 3, 101]").unwrap()).unwrap();
    let mut log = TrialLog::with_relation(2, Relation::ReplaceOne);
    let out = vote
        .run(
            &ReleaseInput {
                values: &[],
                epsilon: None,
            },
            &mut log,
        )
        .unwrap();
    assert_eq!(out.vectors["k"], vec![1.0, 3.0, 101.0]);
    let spent = log.ledger.total_epsilon();
    assert!(
        (spent - 105.0 * 3f64.ln()).abs() < 1e-9,
        "every answer is recorded: {spent}"
    );
}

/// Randomized response as a release (`release = "randomized_response"`): the debiased share's
/// error has sd 1 / (2 sinh(eps/2) sqrt(n)); the sample variance of 4000 trials has relative
/// sd sqrt(2/3999) = 2.2% (the error is a scaled binomial, near normal at n = 400), so |z| <
/// 4.42 (level 1e-5) and a ±30% sd gives |z| > 10. Each trial's ledger is one entry of eps
/// (parallel composition over the respondents); add/remove and a non-0/1 column are refused.
#[test]
fn randomized_response_release_has_the_stated_spread_and_ledger() {
    let entry = find(RELEASES, "randomized_response").unwrap();
    let params = (entry.parse)(toml::from_str("below = 0.3").unwrap()).unwrap();
    let values: Vec<f64> = (0..400).map(|i| i as f64 / 400.0).collect();
    let (eps, trials) = (1.0, 4000u64);
    let errors: Vec<f64> = (0..trials)
        .map(|seed| {
            let mut log = TrialLog::with_relation(seed, Relation::ReplaceOne);
            let input = ReleaseInput {
                values: &values,
                epsilon: Some(eps),
            };
            params.run(&input, &mut log).unwrap();
            assert_eq!(log.ledger.entries.len(), 1);
            assert_eq!(log.ledger.total_epsilon(), eps);
            assert_eq!(log.metrics["truth"], 0.3);
            log.metrics["release"] - log.metrics["truth"]
        })
        .collect();
    let sd = 1.0 / (2.0 * (eps / 2.0).sinh() * 20.0);
    let var = errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64;
    let se = (2.0 / (errors.len() as f64 - 1.0)).sqrt();
    let z = |s: f64| (var / (s * s) - 1.0) / se;
    assert!(z(sd).abs() < 4.42, "z = {}", z(sd));
    assert!(z(1.3 * sd).abs() > 4.42 && z(0.7 * sd).abs() > 4.42);
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    assert!(
        mean.abs() < 4.42 * sd / (errors.len() as f64).sqrt(),
        "biased: {mean}"
    );

    let input = ReleaseInput {
        values: &values,
        epsilon: Some(eps),
    };
    let e = params.run(&input, &mut TrialLog::new(1)).unwrap_err();
    assert!(e.to_string().contains("replace_one"), "{e}");
    let plain = (entry.parse)(toml::Table::new()).unwrap();
    let mut log = TrialLog::with_relation(1, Relation::ReplaceOne);
    let e = plain.run(&input, &mut log).unwrap_err();
    assert!(e.to_string().contains("0/1 column"), "{e}");
    let bits = [0.0, 1.0, 1.0, 0.0];
    let input = ReleaseInput {
        values: &bits,
        epsilon: Some(eps),
    };
    plain.run(&input, &mut log).unwrap();
    assert_eq!(log.metrics["truth"], 0.5);
}

/// A spec with one `csv_column` dataset of ten values (`extra` lines appended to its
/// definition) and one mean pipeline (`mean` lines), written into `dir` with its CSV.
fn size_spec(dir: &std::path::Path, name: &str, extra: &str, mean: &str) -> Spec {
    let rows: String = (1..=10)
        .map(|i| format!("{},x\n", i as f64 / 10.0))
        .collect();
    std::fs::write(dir.join("ten.csv"), rows).unwrap();
    let text = format!(
        r#"
[experiment]
name = "{name}"
trials = 2
seed = 1
datasets = ["ten"]

[dataset.ten]
source = "csv_column"
file = "ten.csv"
column = 1
{extra}

[grid]
epsilon = [1]

[[pipeline]]
name = "mean"
release = "laplace"
query = "mean"
bounds = [0, 1]
{mean}

[report]
x = "epsilon"
metrics = ["abs_error"]
"#
    );
    Spec::load(&write_spec(dir, &format!("{name}.toml"), &text)).unwrap()
}

/// Issue 46: under add/remove the mean reads a declared size (recorded as a public constant,
/// sensitivity (hi - lo)/n) or estimates n by a noisy count (`sum_share`, both spends in the
/// ledger); with neither it refuses to run, and a declared size the data does not have is an
/// error naming the spec and the field. Under replace-one the split's size is public.
#[test]
fn the_mean_reads_a_declared_size_or_estimates_it_privately() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let ledger_of = |spec: &Spec| {
        run(spec, &run_options(&out, 1)).unwrap();
        let records = read_dir_records(&out.join(&spec.experiment.name)).unwrap();
        records[0].ledger.clone()
    };
    // Declared: public_n = 10.
    let spec = size_spec(dir.path(), "declared", "public_n = 10", "");
    let ledger = ledger_of(&spec);
    let size = ledger.entries.iter().find(|e| e.name == "size").unwrap();
    assert_eq!(size.mechanism, "public constant N = 10");
    assert!(
        size.note
            .as_deref()
            .unwrap()
            .contains("dataset.ten.public_n")
    );
    let release = ledger.entries.iter().find(|e| e.name == "release").unwrap();
    assert_eq!(release.sensitivity, Some(0.1));
    // Not declared: refused, naming the field; with sum_share, a noisy sum over a noisy count.
    let spec = size_spec(dir.path(), "private", "", "");
    let e = run(&spec, &run_options(&out, 1)).unwrap_err().to_string();
    assert!(e.contains("public_n") && e.contains("mean"), "{e}");
    let spec = size_spec(dir.path(), "estimated", "", "sum_share = 0.5");
    let ledger = ledger_of(&spec);
    let names: Vec<&str> = ledger.entries.iter().map(|e| e.name.as_str()).collect();
    assert!(
        names.contains(&"sum") && names.contains(&"count"),
        "{names:?}"
    );
    assert!(!names.contains(&"size"), "{names:?}");
    assert!((ledger.total_epsilon() - 1.0).abs() < 1e-12);
    // Declared wrongly: refused before any trial, naming the file and the field.
    let spec = size_spec(dir.path(), "wrong", "public_n = 11", "");
    let e = run(&spec, &run_options(&out, 1)).unwrap_err().to_string();
    assert!(
        e.contains("wrong.toml") && e.contains("dataset.ten.public_n") && e.contains("10"),
        "{e}"
    );
    assert!(!out.join("wrong").join("trials.jsonl").exists());
    // Replace-one: the split's size is public by the relation.
    let spec = size_spec(dir.path(), "replace", "", "");
    let text = std::fs::read_to_string(&spec.path)
        .unwrap()
        .replace("seed = 1\n", "seed = 1\nneighbours = \"replace_one\"\n");
    let spec = Spec::load(&write_spec(dir.path(), "replace.toml", &text)).unwrap();
    let size = ledger_of(&spec)
        .entries
        .into_iter()
        .find(|e| e.name == "size")
        .unwrap();
    assert!(size.note.unwrap().contains("replace-one"));
}

const DELTA_LEAK: &str = r#"
[experiment]
name = "leak"
trials = 3
seed = 5
datasets = ["u"]
neighbours = "replace_one"

[dataset.u]
source = "uniform"
n = 300
seed = 2

[grid]
n_train = [100, 300]

[[pipeline]]
name = "leak"
attack = "delta_leak"
delta = 1e-2

[[pipeline]]
name = "overspent"
release = "overspent_leak"
delta = 1e-2

[report]
x = "n_train"
metrics = ["leaked"]
"#;

/// A (0, delta) leak that claims `delta` but charges twice that: its records must not be
/// private (the harness checks the ledger's delta against the release's own budget).
#[derive(Debug, Clone, serde::Deserialize)]
struct OverspentLeak {
    delta: f64,
}

impl epsilab::kinds::Described for OverspentLeak {
    const NAME: &'static str = "overspent_leak";
    const ABOUT: &'static str = "test only: claims (0, delta), charges (0, 2 delta)";
    const FIELDS: &'static [&'static str] = &["delta"];
}

impl epsilab::kinds::ReleaseKind for OverspentLeak {
    fn private(&self) -> bool {
        false
    }
    fn own_budget(&self) -> Option<epsilab::kinds::OwnBudget> {
        Some(epsilab::kinds::OwnBudget {
            epsilon: 0.0,
            delta: self.delta,
        })
    }
    fn run(
        &self,
        input: &ReleaseInput,
        log: &mut TrialLog,
    ) -> epsilab::error::Result<epsilab::kinds::ReleaseOutput> {
        let m = epsilab::privacy::ptr::DeltaLeak::new(2.0 * self.delta, log.ledger.relation())?;
        let k = log
            .ledger
            .charge("leak", "each record with probability 2 delta", m)?
            .publish(input.values.len(), &mut log.streams.stream("leak"))
            .len();
        log.metrics.insert("leaked".into(), k as f64);
        Ok(epsilab::kinds::ReleaseOutput::default())
    }
}

/// The delta leak is (0, delta)-DP: its records and series are private within its own
/// (0, delta) though it spends no grid epsilon, and a release that charges more delta than it
/// states is not.
#[test]
fn a_zero_epsilon_delta_release_is_private_within_its_own_budget() {
    let dir = tempfile::tempdir().unwrap();
    let registry = epsilab::kinds::Registry::builtin().with_release::<OverspentLeak>();
    let spec = Spec::load_with(&write_spec(dir.path(), "l.toml", DELTA_LEAK), &registry).unwrap();
    assert!(spec.pipelines[0].end_to_end_private());
    run(&spec, &run_options(&dir.path().join("out"), 1)).unwrap();
    let records = read_dir_records(&dir.path().join("out/leak")).unwrap();
    assert_eq!(records.len(), 2 * 2 * 3);
    for r in &records {
        assert_eq!(r.epsilon, None, "{}", r.key);
        assert_eq!(r.private, r.pipeline == "leak", "{}", r.key);
    }
}

const CONTAMINATED: &str = r#"
[experiment]
name = "contaminated"
trials = 2
seed = 9
datasets = ["dirty", "clean"]
neighbours = "replace_one"

[dataset.dirty]
source = "student_t"
n = 2000
df = 30
center = 0.5
scale = 0.05
contamination = 0.2
outlier = 1.0
seed = 1

[dataset.clean]
source = "student_t"
n = 2000
df = 30
center = 0.5
scale = 0.05
seed = 1

[grid]
epsilon = [1]
n_train = [2000]

[[pipeline]]
name = "mean"
release = "laplace"
query = "mean"
bounds = [0, 1]

[[pipeline]]
name = "iqr"
release = "iqr_ptr"
bounds = [0, 1]
propose = 5
delta = 1e-6

[report]
x = "n_train"
metrics = ["abs_error"]
"#;

/// On a contaminated Student's t source a location release records its error against the
/// inliers' centre (c = 0.2 of the rows at 1 pull the mean by about c (1 - 0.5) = 0.1); a spread release (the IQR) and a source without contamination record
/// none. `contamination` without `outlier` is refused naming the dataset.
#[test]
fn contaminated_sources_record_the_error_against_the_inliers_centre() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Spec::load(&write_spec(dir.path(), "c.toml", CONTAMINATED)).unwrap();
    run(&spec, &run_options(&dir.path().join("out"), 1)).unwrap();
    let records = read_dir_records(&dir.path().join("out/contaminated")).unwrap();
    assert_eq!(records.len(), 2 * 2 * 2);
    for r in &records {
        let location = r.metrics.get("abs_error_location");
        let expected = r.dataset == "dirty" && r.pipeline == "mean";
        assert_eq!(location.is_some(), expected, "{}", r.key);
        if let Some(&e) = location {
            assert_eq!(e, (r.metrics["release"] - 0.5).abs());
            assert!((e - 0.1).abs() < 0.03, "{e}");
        }
    }
    let bad = CONTAMINATED.replace("outlier = 1.0\n", "");
    let err = Spec::load(&write_spec(dir.path(), "b.toml", &bad))
        .and_then(|s| run(&s, &run_options(&dir.path().join("bad"), 1)).map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("dirty") && err.contains("outlier"), "{err}");
}

/// Under add/remove the empty column neighbours every one-row column, so a release that
/// refused it would answer one neighbour and not the other: no epsilon could hold. Each release
/// that reads a column answers both with the same ledger steps (the statistic of no data is
/// the bounds' midpoint, `release::query` docs, recorded as the truth; the mean over a public n
/// and the sum and count answer lo + 0/n, 0 and 0). Fails on the code before this test: the
/// direct average, the quantiles, the global median, the composed average and the M-estimator
/// refused the empty column, and the exponential median's truth was NaN.
#[test]
fn every_release_answers_the_empty_column_as_it_answers_one_row_under_add_remove() {
    // (kind, fields, the truth on no data): bounds [-1, 3], midpoint 1.
    let cases = [
        (
            "laplace",
            "query = \"direct_average\"\nbounds = [-1, 3]",
            1.0,
        ),
        ("laplace", "query = \"median\"\nbounds = [-1, 3]", 1.0),
        (
            "laplace",
            "query = \"quantile\"\np = 0.9\nbounds = [-1, 3]",
            1.0,
        ),
        ("laplace", "query = \"mean\"\nbounds = [-1, 3]", -1.0),
        ("laplace", "query = \"sum\"\nbounds = [-1, 3]", 0.0),
        (
            "laplace",
            "query = \"count\"\nat_least = 0.4\nbounds = [-1, 3]",
            0.0,
        ),
        (
            "laplace",
            "query = \"mean\"\nsum_share = 0.5\nbounds = [-1, 3]",
            1.0,
        ),
        (
            "gaussian",
            "query = \"median\"\nbounds = [-1, 3]\ndelta = 1e-5",
            1.0,
        ),
        ("exponential_median", "bounds = [-1, 3]", 1.0),
        ("global_median", "bounds = [-1, 3]", 1.0),
        ("composed_average", "bounds = [-1, 3]\nsum_share = 0.5", 1.0),
        (
            "m_estimator_histogram",
            "bounds = [-1, 3]\nhuber = 0.05",
            1.0,
        ),
    ];
    let outcome = |kind: &str, fields: &str, values: &[f64]| {
        let entry = find(RELEASES, kind).unwrap();
        let params = (entry.parse)(toml::from_str(fields).unwrap()).unwrap();
        let mut log = TrialLog::with_relation(7, Relation::AddRemove);
        log.ledger
            .set_public_size(Some(PublicSize::new(1, "declared by the test")));
        let input = ReleaseInput {
            values,
            epsilon: Some(1.0),
        };
        params.run(&input, &mut log).map(|_| {
            let steps: Vec<_> = log
                .ledger
                .entries
                .iter()
                .map(|e| (e.name.clone(), e.epsilon))
                .collect();
            (steps, log.metrics["release"], log.metrics["truth"])
        })
    };
    for (kind, fields, truth) in cases {
        let label = format!("{kind} ({})", fields.replace('\n', ", "));
        let none = outcome(kind, fields, &[])
            .unwrap_or_else(|e| panic!("{label}: the empty column refused: {e}"));
        for one in [-1.0, 3.0] {
            let some = outcome(kind, fields, &[one])
                .unwrap_or_else(|e| panic!("{label}: [{one}] refused: {e}"));
            assert_eq!(none.0, some.0, "{label}: the ledgers differ");
        }
        assert_eq!(none.2, truth, "{label}: the truth of no data");
        assert!(none.1.is_finite(), "{label}: release {}", none.1);
    }
}
