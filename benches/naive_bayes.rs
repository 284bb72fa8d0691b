//! Algorithm 1 on Adult: fit (noise + post-processing) and predict the 16281 test rows.
//!
//! Uses the real a9a files when EPSILAB_DATA points at the datasets; otherwise a synthetic
//! matrix of the same shape (32561 + 16281 rows, D = 123, 14 ones per row).

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use epsilab::counts::ClassCounts;
use epsilab::data::{BinaryMatrix, Catalog, DataDir, Dataset, Features, SplitRule};
use epsilab::learners::PrivateNbParams;
use epsilab::privacy::Ledger;
use epsilab::rng::{Streams, rng_from};
use linfa::ParamGuard;
use rand::Rng;
use rand::seq::index::sample;

fn adult() -> Dataset {
    if let Some(dir) = std::env::var_os("EPSILAB_DATA") {
        return Catalog::builtin()
            .load("adult", &DataDir(dir.into()))
            .expect("adult loads");
    }
    eprintln!("EPSILAB_DATA not set: benchmarking an Adult-shaped synthetic matrix");
    let mut rng = rng_from(&["bench", "adult-shape"]);
    let mut x = BinaryMatrix::new(123);
    let mut labels = Vec::new();
    for _ in 0..48842 {
        let mut ones: Vec<u32> = sample(&mut rng, 123, 14)
            .into_iter()
            .map(|j| j as u32)
            .collect();
        ones.sort_unstable();
        x.push_row(&ones);
        labels.push(u16::from(rng.gen_bool(0.24)));
    }
    Dataset {
        name: "adult-shape".into(),
        title: "Adult-shaped".into(),
        features: Features::Binary(x),
        labels,
        class_names: vec!["a".into(), "b".into()],
        feature_names: None,
        split: SplitRule::Fixed { n_train: 32561 },
    }
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
    // What the harness does per trial: counts are shared per (dataset, split).
    group.bench_function("fit_and_predict", |b| {
        b.iter(|| {
            let mut rng = streams.stream("bench");
            let fit = params
                .fit_counts(&counts, None, &mut rng, &mut Ledger::default())
                .unwrap();
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
