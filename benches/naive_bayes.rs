//! Algorithm 1 on Adult: fit (noise + post-processing) and predict the 16281 test rows.
//!
//! Uses the shipped a9a files (`datasets/a9a`, or `--data-dir`-style `$EPSILAB_DATA`). After the
//! criterion groups the fit is timed beside `benches/peer/numpy_nb_noise.py` (the same noise,
//! threshold, smoothing and log tables in numpy), each the median of 15 batches of 200 fits, and
//! the ratio is printed (`EPSILAB_BENCH_NO_PEER=1` skips the peer).

use criterion::{Criterion, black_box, criterion_group, criterion_main};

#[path = "common/peer.rs"]
mod peer;
#[path = "common/ratio.rs"]
mod ratio;
use epsilab::counts::ClassCounts;
use epsilab::data::{Catalog, DataDir, Dataset};
use epsilab::evaluate::accuracy;
use epsilab::learners::PrivateNbParams;
use epsilab::privacy::Ledger;
use epsilab::rng::{Streams, rng_from};
use linfa::ParamGuard;

fn adult() -> Dataset {
    Catalog::builtin()
        .load("adult", &DataDir::resolve(None))
        .expect("adult loads from the shipped datasets")
}

fn bench(c: &mut Criterion) {
    let ds = adult();
    let split = ds.split(&mut rng_from(&["fixed"]));
    let x = ds.features.as_binary().unwrap();
    let counts = ClassCounts::from_rows(x, &ds.labels, &split.train, ds.n_classes());
    let params = PrivateNbParams::new(0.1).check().unwrap();
    let mut streams = Streams::new(1);
    let mut scores = vec![0.0; ds.n_classes()];

    let mut group = c.benchmark_group("algorithm1_adult");
    // What the harness does per trial: counts are shared per (dataset, split), the test
    // accuracy comes from `evaluate::accuracy`.
    group.bench_function("fit_and_predict", |b| {
        b.iter(|| {
            let mut rng = streams.stream("bench");
            let fit = params
                .fit_counts(&counts, None, &mut rng, &mut Ledger::default())
                .unwrap();
            black_box(accuracy(&fit.model, &ds, &split.test).unwrap())
        })
    });
    group.bench_function("fit", |b| {
        b.iter(|| {
            let mut rng = streams.stream("bench");
            black_box(
                params
                    .fit_counts(&counts, None, &mut rng, &mut Ledger::default())
                    .unwrap(),
            )
        })
    });
    group.bench_function("predict_one_row_at_a_time", |b| {
        let fit = params
            .fit_counts(
                &counts,
                None,
                &mut streams.stream("bench"),
                &mut Ledger::default(),
            )
            .unwrap();
        b.iter(|| {
            let correct = split
                .test
                .iter()
                .filter(|&&i| {
                    fit.model.predict_sparse_row(x.row(i as usize), &mut scores)
                        == ds.labels[i as usize]
                })
                .count();
            black_box(correct)
        })
    });
    group.bench_function("count_fit_and_predict", |b| {
        b.iter(|| {
            let counts = ClassCounts::from_rows(x, &ds.labels, &split.train, ds.n_classes());
            let mut rng = streams.stream("bench");
            let fit = params
                .fit_counts(&counts, None, &mut rng, &mut Ledger::default())
                .unwrap();
            black_box(fit.model.predict_rows(x, &split.test))
        })
    });
    group.bench_function("count_training_rows", |b| {
        b.iter(|| {
            black_box(ClassCounts::from_rows(
                x,
                &ds.labels,
                &split.train,
                ds.n_classes(),
            ))
        })
    });
    group.finish();

    let batches: Vec<f64> = (0..16)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..200 {
                let mut rng = streams.stream("bench");
                black_box(
                    params
                        .fit_counts(&counts, None, &mut rng, &mut Ledger::default())
                        .unwrap(),
                );
            }
            start.elapsed().as_secs_f64() / 200.0
        })
        .skip(1)
        .collect();
    peer_ratio(median(batches));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the numpy peer and prints its fit time beside ours (`ours`, seconds per fit).
fn peer_ratio(ours: f64) {
    eprintln!("epsilab: Algorithm 1 fit, median {:.2} µs", ours * 1e6);
    let text = peer::run("benches/peer/numpy_nb_noise.py");
    if let Some(p) = text.and_then(|t| peer::value(&t, "numpy_nb_fit_s")) {
        ratio::Ratio {
            case: "naive_bayes/algorithm1_adult_fit",
            peer: "numpy",
            what: "Algorithm 1's fit on Adult's counts: noise, threshold, model (median of 15 batches of 200)",
            epsilab_s: ours,
            peer_s: p,
            target: Some(">= 1"),
        }
        .report();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
