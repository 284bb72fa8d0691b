//! Private classifier fits on breast cancer (398 training rows x 30 features, the catalog's
//! public bounds), beside diffprivlib 0.6.6 fitting the same rows in the same run (issue 50:
//! target at least 3x faster per fit).
//!
//! * `classifiers/private_gnb_fit`: `private_gnb` at eps = 1 (three Laplace releases).
//! * `classifiers/private_forest_fit`: `private_forest`, 10 random trees of depth 5, eps = 1.
//!
//! After criterion, the median of 15 fits here and in `benches/peer/diffprivlib_classifiers.py`
//! (diffprivlib's `GaussianNB` and `RandomForestClassifier` with the same settings) and their
//! ratios are printed. Without python3 and diffprivlib the ratio lines say so and are skipped.

#[path = "common/peer.rs"]
mod peer;
#[path = "common/ratio.rs"]
mod ratio;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use epsilab::data::{Catalog, DataDir, Dataset, Features};
use epsilab::learners::gaussian_nb::{Bounds, PrivateGnbParams, TrainRows};
use epsilab::learners::random_trees::{Ensemble, RandomTreesParams};
use epsilab::privacy::Ledger;
use epsilab::rng::rng_from;
use linfa::ParamGuard;
use std::path::Path;
use std::time::Instant;

/// Breast cancer and one seeded split's training rows.
fn data() -> (Dataset, Vec<u32>) {
    let dir = DataDir(Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"));
    let data = Catalog::builtin()
        .load("breast_cancer", &dir)
        .expect("shipped");
    let train = data.split(&mut rng_from(&["bench", "classifiers"])).train;
    (data, train)
}

fn rows<'a>(data: &'a Dataset, train: &'a [u32], cols: &'a [usize]) -> TrainRows<'a> {
    let Features::Dense(x) = &data.features else {
        panic!("breast cancer is real-valued")
    };
    TrainRows {
        x: x.view(),
        rows: train,
        labels: &data.labels,
        n_classes: 2,
        cols,
    }
}

fn gnb_fit(t: &TrainRows, b: &Bounds, seed: u64) -> f64 {
    let p = PrivateGnbParams::new(1.0).check().expect("valid");
    let mut ledger = Ledger::default();
    let m = p
        .fit_rows(
            t,
            b,
            &mut rng_from(&["bench", &seed.to_string()]),
            &mut ledger,
        )
        .expect("fit");
    m.theta[[0, 0]]
}

fn forest_fit(t: &TrainRows, b: &Bounds, seed: u64) -> usize {
    let p = RandomTreesParams {
        epsilon: 1.0,
        trees: 10,
        max_depth: 5,
    };
    let s = seed.to_string();
    let m = p
        .fit(
            Ensemble::Forest,
            t,
            b,
            &mut rng_from(&["bench", "structure", &s]),
            &mut rng_from(&["bench", "noise", &s]),
            &mut Ledger::default(),
        )
        .expect("fit");
    m.trees.len()
}

fn bench(c: &mut Criterion) {
    let (data, train) = data();
    let cols: Vec<usize> = (0..data.n_features()).collect();
    let t = rows(&data, &train, &cols);
    let pb = data.bounds.as_ref().expect("bounds");
    let b = Bounds {
        lo: &pb.lo,
        hi: &pb.hi,
    };
    let mut g = c.benchmark_group("classifiers");
    g.bench_function("private_gnb_fit", |bench| {
        let mut seed = 0;
        bench.iter(|| {
            seed += 1;
            black_box(gnb_fit(&t, &b, seed))
        })
    });
    g.bench_function("private_forest_fit", |bench| {
        let mut seed = 0;
        bench.iter(|| {
            seed += 1;
            black_box(forest_fit(&t, &b, seed))
        })
    });
    g.finish();
    peer_ratios(&data, &train, &t, &b);
}

/// Median seconds of 15 calls of `f`.
fn median(mut f: impl FnMut(u64)) -> f64 {
    let mut times: Vec<f64> = (0..15)
        .map(|s| {
            let t = Instant::now();
            f(1000 + s);
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The training rows and bounds as CSV files for the peer, in a temporary folder.
fn peer_files(data: &Dataset, train: &[u32], b: &Bounds) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let Features::Dense(x) = &data.features else {
        unreachable!()
    };
    let x = x.view();
    let mut s = String::new();
    for &r in train {
        s.push_str(&data.labels[r as usize].to_string());
        x.row(r as usize)
            .iter()
            .for_each(|v| s.push_str(&format!(",{v}")));
        s.push('\n');
    }
    let line = |v: &[f64]| v.iter().map(f64::to_string).collect::<Vec<_>>().join(",");
    std::fs::write(dir.path().join("train.csv"), s).expect("write");
    std::fs::write(dir.path().join("lo.csv"), line(b.lo)).expect("write");
    std::fs::write(dir.path().join("hi.csv"), line(b.hi)).expect("write");
    dir
}

fn peer_ratios(data: &Dataset, train: &[u32], t: &TrainRows, b: &Bounds) {
    let gnb = median(|s| {
        black_box(gnb_fit(t, b, s));
    });
    let forest = median(|s| {
        black_box(forest_fit(t, b, s));
    });
    let dir = peer_files(data, train, b);
    let files = ["train.csv", "lo.csv", "hi.csv"].map(|f| dir.path().join(f));
    let Some(text) = peer::run_with("benches/peer/diffprivlib_classifiers.py", &files) else {
        return;
    };
    let theirs: Vec<f64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    if theirs.len() != 2 {
        return println!("SKIP diffprivlib ratios: unexpected peer output {text:?}");
    }
    for (name, ours, theirs) in [
        ("private_gnb_fit (GaussianNB)", gnb, theirs[0]),
        (
            "private_forest_fit (RandomForestClassifier)",
            forest,
            theirs[1],
        ),
    ] {
        ratio::Ratio {
            case: &format!("classifiers/{name}"),
            peer: "diffprivlib",
            what: "one private fit on breast cancer's 398 training rows, eps = 1 (median of 15)",
            epsilab_s: ours,
            peer_s: theirs,
            target: Some(">= 3"),
        }
        .report();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
