//! One private fit of issue 49's learners on the shipped data at ε = 1, beside diffprivlib
//! 0.6.6 doing the same in the same run (`benches/peer/diffprivlib_estimators.py`):
//!
//! * `estimators/linreg_ssp_diabetes`: AdaSSP on diabetes (442 × 10), scaling included;
//!   peer: `LinearRegression(epsilon=1, bounds_X, bounds_y)`.
//! * `estimators/pca_analyze_gauss_digits`: Analyze Gauss, k = 5, on digits (1797 × 64);
//!   peer: `PCA(n_components=5, epsilon=1, bounds=(0, 16), data_norm=128)`.
//! * `estimators/kmeans_dp_lloyd_digits`: private Lloyd, k = 10, T = 5, on digits;
//!   peer: `KMeans(n_clusters=10, epsilon=1, bounds=(0, 16))`.
//!
//! After criterion, each fit is timed here (median of 15 runs) and the peer's median seconds are
//! read from its stdout; the ratio peer / epsilab is printed. Without python3 + diffprivlib the
//! ratio lines say so and are skipped.

#[path = "common/peer.rs"]
mod peer;
#[path = "common/ratio.rs"]
mod ratio;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use epsilab::data::Dataset;
use epsilab::data::catalog::{Catalog, DataDir};
use epsilab::learners::estimators::{kmeans, linreg, pca, unit_box, unit_targets};
use epsilab::privacy::Ledger;
use epsilab::rng::rng_from;
use std::time::Instant;

fn load(name: &str) -> Dataset {
    Catalog::builtin()
        .load(name, &DataDir::shipped())
        .expect("shipped data")
}

fn rows(data: &Dataset) -> Vec<u32> {
    (0..data.n_rows() as u32).collect()
}

fn adassp(data: &Dataset, rows: &[u32], seed: u64) -> f64 {
    let z = linreg::design(data, rows).expect("design");
    let (t, _) = unit_targets(data, rows).expect("targets");
    let mut rng = rng_from(&["bench", "adassp", &seed.to_string()]);
    let w = linreg::ada_ssp(&z, &t, 1.0, 1e-5, &mut Ledger::default(), &mut rng).expect("fit");
    w[0]
}

fn analyze_gauss(data: &Dataset, rows: &[u32], seed: u64) -> f64 {
    let u = unit_box(data, rows).expect("box");
    let z = &u / (u.ncols() as f64).sqrt();
    let mut rng = rng_from(&["bench", "gauss", &seed.to_string()]);
    let a = z.t().dot(&z);
    let noise = pca::MomentNoise::AnalyzeGauss {
        epsilon: 1.0,
        delta: 1e-5,
        calibration: epsilab::privacy::GaussCalibration::Analytic,
    };
    let v = noise
        .top_k(a, 5, &mut Ledger::default(), &mut rng)
        .expect("fit");
    v[[0, 0]]
}

fn dp_lloyd(data: &Dataset, rows: &[u32], seed: u64) -> f64 {
    let u = unit_box(data, rows).expect("box");
    let mut start = rng_from(&["bench", "lloyd start", &seed.to_string()]);
    let mut rng = rng_from(&["bench", "lloyd", &seed.to_string()]);
    let begin = kmeans::box_start(10, u.ncols(), &mut start);
    let c = kmeans::dp_lloyd(&u, begin, (1.0, 5), &mut Ledger::default(), &mut rng).expect("fit");
    c[[0, 0]]
}

type Fit = fn(&Dataset, &[u32], u64) -> f64;

fn bench(c: &mut Criterion) {
    let (diabetes, digits) = (load("diabetes"), load("digits"));
    let cases: [(&str, &str, &Dataset, Fit); 3] = [
        ("linreg_ssp_diabetes", "linreg", &diabetes, adassp),
        ("pca_analyze_gauss_digits", "pca", &digits, analyze_gauss),
        ("kmeans_dp_lloyd_digits", "kmeans", &digits, dp_lloyd),
    ];
    let mut g = c.benchmark_group("estimators");
    g.sample_size(20);
    for (name, _, data, fit) in &cases {
        let r = rows(data);
        let mut seed = 0;
        g.bench_function(*name, |b| {
            b.iter(|| {
                seed += 1;
                black_box(fit(data, &r, seed))
            })
        });
    }
    g.finish();
    peer_ratios(&cases);
}

/// Median seconds of 15 fits here, beside the peer's, and their ratio.
fn peer_ratios(cases: &[(&str, &str, &Dataset, Fit)]) {
    let Some(peer) = peer::run("benches/peer/diffprivlib_estimators.py") else {
        return;
    };
    for (name, key, data, fit) in cases {
        let r = rows(data);
        let mut times: Vec<f64> = (0..15)
            .map(|s| {
                let t = Instant::now();
                black_box(fit(data, &r, 1000 + s));
                t.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let ours = times[times.len() / 2];
        let theirs = peer
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse::<f64>().ok());
        match theirs {
            Some(t) => ratio::Ratio {
                case: &format!("estimators/{name}"),
                peer: "diffprivlib",
                what: "one private fit at eps = 1 (median of 15 here; the peer's median)",
                epsilab_s: ours,
                peer_s: t,
                target: Some(">= 3"),
            }
            .report(),
            None => println!("SKIP {name}: no `{key}` line in the peer's output {peer:?}"),
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
