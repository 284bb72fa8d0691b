//! Algorithm 1 on Adult: fit (noise + post-processing) and predict the 16281 test rows.
//!
//! Uses the shipped a9a files (`datasets/a9a`, or `--data-dir`-style `$EPSILAB_DATA`).

use criterion::{Criterion, black_box, criterion_group, criterion_main};
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
