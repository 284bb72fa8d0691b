//! Issue 52's release targets at n = 10^4, 10^5, 10^6 (values U(0, 1), bounds [0, 1], eps 0.1):
//! the Laplace mean and the exponential-mechanism median through their release kinds (the
//! code a harness cell runs: clamp, answer, ledger, draw, and the mean's unclamped error),
//! beside one pass over the data (`query::mean`), a sort of the column, and the peers of
//! `benches/peer/numpy_release_scale.py` (numpy's one-pass private mean, diffprivlib's
//! `tools.mean` and `tools.median`, `np.sort`) timed in the same run.
//!
//! Criterion measures the n = 10^6 cases; then every case is timed here (median of 15 runs),
//! the ratios are printed, and the log-log slope of time in n per case.
//!
//! Criterion also times one trial of the other release kinds that clamp the column at
//! n = 10^6 (`kind_1e6/...`, issue 52's "no allocation per trial": the kinds that used to clamp
//! or copy the column into a fresh vector per trial; `randomized_response` takes no bounds and
//! is timed by the scale bench). With `RELEASE_SCALE_NO_TABLE` set only
//! the criterion cases run (`cargo bench --bench release_scale -- kind_1e6`).

#[path = "common/peer.rs"]
mod peer;
#[path = "common/ratio.rs"]
mod ratio;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use epsilab::kinds::release::{Additive, ExponentialMedian};
use epsilab::kinds::{RELEASES, ReleaseInput, ReleaseKind, find};
use epsilab::learners::TrialLog;
use epsilab::privacy::{PublicSize, Relation};
use epsilab::release::query;
use epsilab::rng::rng_from;
use rand::Rng;
use std::time::Instant;

const NS: [usize; 3] = [10_000, 100_000, 1_000_000];
const EPSILON: f64 = 0.1;

fn data(n: usize) -> Vec<f64> {
    let mut rng = rng_from(&["bench", "release_scale"]);
    (0..n).map(|_| rng.r#gen::<f64>()).collect()
}

fn mean_kind() -> Additive<false> {
    toml::from_str("query = \"mean\"\nbounds = [0.0, 1.0]").expect("spec")
}

fn median_kind() -> ExponentialMedian {
    toml::from_str("bounds = [0.0, 1.0]").expect("spec")
}

/// The release kinds of `kind_1e6/...`: label, kind, spec fields (besides bounds [0, 1]) and
/// the relation a spec runs them under.
const KINDS: &[(&str, &str, &str, Relation)] = &[
    (
        "gaussian_mean",
        "gaussian",
        "query = \"mean\"\ndelta = 1e-6",
        Relation::AddRemove,
    ),
    (
        "gaussian_median",
        "gaussian",
        "query = \"median\"\ndelta = 1e-6",
        Relation::AddRemove,
    ),
    (
        "laplace_median",
        "laplace",
        "query = \"median\"",
        Relation::AddRemove,
    ),
    (
        "laplace_direct_average",
        "laplace",
        "query = \"direct_average\"",
        Relation::AddRemove,
    ),
    (
        "laplace_mean_sum_share",
        "laplace",
        "query = \"mean\"\nsum_share = 0.5",
        Relation::AddRemove,
    ),
    (
        "composed_average",
        "composed_average",
        "sum_share = 0.5",
        Relation::AddRemove,
    ),
    ("smooth_median", "smooth_median", "", Relation::ReplaceOne),
    ("global_median", "global_median", "", Relation::AddRemove),
    (
        "histogram",
        "histogram",
        "bins = [0.0, 0.25, 0.5, 1.0]",
        Relation::AddRemove,
    ),
    (
        "trimmed_mean_ptr",
        "trimmed_mean_ptr",
        "alpha = 0.1\npropose = 4.0\ndelta = 1e-6",
        Relation::ReplaceOne,
    ),
    (
        "iqr_ptr",
        "iqr_ptr",
        "propose = 4.0\ndelta = 1e-6",
        Relation::ReplaceOne,
    ),
    (
        "m_estimator_histogram",
        "m_estimator_histogram",
        "huber = 0.1",
        Relation::AddRemove,
    ),
];

/// The release kind `name` with bounds [0, 1] and `fields`.
fn release_kind(name: &str, fields: &str) -> std::sync::Arc<dyn ReleaseKind> {
    let entry = find(RELEASES, name).expect("a release kind");
    let table: toml::Table =
        toml::from_str(&format!("bounds = [0.0, 1.0]\n{fields}")).expect("spec");
    (entry.parse)(table).expect("its fields")
}

/// One trial of `kind` on `xs`, as a harness cell runs it (its own log, the public n).
fn trial(kind: &dyn ReleaseKind, xs: &[f64], seed: u64) -> f64 {
    trial_under(kind, xs, seed, Relation::AddRemove)
}

/// [`trial`] under `relation`.
fn trial_under(kind: &dyn ReleaseKind, xs: &[f64], seed: u64, relation: Relation) -> f64 {
    let mut log = TrialLog::with_relation(seed, relation);
    log.ledger
        .set_public_size(Some(PublicSize::new(xs.len(), "bench")));
    let input = ReleaseInput {
        values: xs,
        epsilon: Some(EPSILON),
    };
    kind.run(&input, &mut log).expect("release");
    log.metrics["release"]
}

fn sort_copy(xs: &[f64], buf: &mut Vec<f64>) -> f64 {
    buf.clear();
    buf.extend_from_slice(xs);
    buf.sort_unstable_by(f64::total_cmp);
    buf[buf.len() / 2]
}

fn bench(c: &mut Criterion) {
    let xs = data(1_000_000);
    let (mean, median) = (mean_kind(), median_kind());
    let mut buf = Vec::new();
    let mut g = c.benchmark_group("release_scale");
    g.sample_size(10);
    g.bench_function("one_pass_1e6", |b| {
        b.iter(|| black_box(query::mean(black_box(&xs))))
    });
    let mut seed = 0;
    g.bench_function("laplace_mean_kind_1e6", |b| {
        b.iter(|| {
            seed += 1;
            black_box(trial(&mean, &xs, seed))
        })
    });
    g.bench_function("sort_1e6", |b| {
        b.iter(|| black_box(sort_copy(&xs, &mut buf)))
    });
    g.bench_function("exponential_median_kind_1e6", |b| {
        b.iter(|| {
            seed += 1;
            black_box(trial(&median, &xs, seed))
        })
    });
    for &(label, name, fields, relation) in KINDS {
        let kind = release_kind(name, fields);
        g.bench_function(format!("kind_1e6/{label}"), |b| {
            b.iter(|| {
                seed += 1;
                black_box(trial_under(&*kind, &xs, seed, relation))
            })
        });
    }
    g.finish();
    if std::env::var_os("RELEASE_SCALE_NO_TABLE").is_none() {
        table();
    }
}

/// Median seconds of 15 runs of `f`.
fn median_secs(mut f: impl FnMut(u64)) -> f64 {
    let mut t: Vec<f64> = (0..15)
        .map(|s| {
            let start = Instant::now();
            f(s);
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Least-squares slope of ln(time) on ln(n).
fn slope(ts: &[f64]) -> f64 {
    let pts: Vec<(f64, f64)> = NS
        .iter()
        .zip(ts)
        .map(|(&n, &t)| ((n as f64).ln(), t.ln()))
        .collect();
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / pts.len() as f64;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}

fn table() {
    let (mean, median) = (mean_kind(), median_kind());
    let mut buf = Vec::new();
    let mut rows: Vec<[f64; 4]> = Vec::new();
    for &n in &NS {
        let xs = data(n);
        rows.push([
            median_secs(|_| {
                black_box(query::mean(&xs));
            }),
            median_secs(|s| {
                black_box(trial(&mean, &xs, s));
            }),
            median_secs(|_| {
                black_box(sort_copy(&xs, &mut buf));
            }),
            median_secs(|s| {
                black_box(trial(&median, &xs, s));
            }),
        ]);
    }
    let names = [
        "one pass",
        "laplace mean (kind)",
        "sort",
        "exponential median (kind)",
    ];
    for (j, name) in names.iter().enumerate() {
        let ts: Vec<f64> = rows.iter().map(|r| r[j]).collect();
        let ms: Vec<String> = ts.iter().map(|t| format!("{:.3}", t * 1e3)).collect();
        println!(
            "epsilab {name}: ms at n = 1e4, 1e5, 1e6: {}; log-log slope {:.2}",
            ms.join(", "),
            slope(&ts)
        );
    }
    let last = rows[rows.len() - 1];
    println!(
        "n = 1e6: mean / one pass = {:.2}; median / sort = {:.2}",
        last[1] / last[0],
        last[3] / last[2]
    );
    for (case, peer, ours, theirs, target) in [
        (
            "release_scale/laplace_mean_1e6",
            "one pass",
            last[1],
            last[0],
            ">= 0.5",
        ),
        (
            "release_scale/exponential_median_1e6",
            "sort",
            last[3],
            last[2],
            ">= 0.5",
        ),
    ] {
        ratio::Ratio {
            case,
            peer,
            what: "one trial of the kind at n = 10^6 against epsilab's own pass or sort of the column (median of 15)",
            epsilab_s: ours,
            peer_s: theirs,
            target: Some(target),
        }
        .report();
    }
    peers(&rows);
}

fn peers(rows: &[[f64; 4]]) {
    let args: Vec<String> = NS.iter().map(|n| n.to_string()).collect();
    let Some(text) = peer::run_with("benches/peer/numpy_release_scale.py", &args) else {
        return;
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return println!("SKIP peers: unexpected output {text:?}");
    };
    // The peer times diffprivlib's median up to n = 10^5 only (it is slow): that comparison is
    // made at the largest n the peer timed, the others at 10^6.
    let timed = |key: &str| {
        (0..NS.len()).rev().find_map(|i| {
            let t = json[NS[i].to_string()][key].as_f64();
            t.filter(|t| t.is_finite()).map(|t| (i, t))
        })
    };
    for (kind, peer, key, column, target) in [
        (
            "laplace_mean",
            "diffprivlib tools.mean",
            "diffprivlib_mean",
            1,
            Some(">= 3"),
        ),
        (
            "laplace_mean",
            "numpy one-pass private mean",
            "numpy_mean",
            1,
            None,
        ),
        (
            "exponential_median",
            "diffprivlib tools.median",
            "diffprivlib_median",
            3,
            None,
        ),
    ] {
        match timed(key) {
            Some((i, theirs)) => ratio::Ratio {
                case: &format!("release_scale/{kind}_1e{}", NS[i].ilog10()),
                peer,
                what: &format!(
                    "one trial of the Laplace mean or the exponential median at n = 10^{} (median of 15 here; the peer's median)",
                    NS[i].ilog10()
                ),
                epsilab_s: rows[i][column],
                peer_s: theirs,
                target,
            }
            .report(),
            None => println!("SKIP {peer}: no time in the peer's output"),
        }
    }
    for (i, n) in NS.iter().enumerate() {
        let p = &json[n.to_string()];
        let get = |k: &str| p[k].as_f64().unwrap_or(f64::NAN);
        let [pass, mean, sort, median] = rows[i];
        println!(
            "n = {n}: numpy mean / epsilab mean = {:.2}, diffprivlib mean / epsilab mean = {:.2}, numpy sort / epsilab median = {:.2}, diffprivlib median / epsilab median = {:.2}; epsilab one pass {:.3} ms, sort {:.3} ms",
            get("numpy_mean") / mean,
            get("diffprivlib_mean") / mean,
            get("numpy_sort") / median,
            get("diffprivlib_median") / median,
            pass * 1e3,
            sort * 1e3
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
