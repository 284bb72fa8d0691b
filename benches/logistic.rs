//! Logistic-regression fits on a synthetic Adult-sized binary problem (32561 x 123, 14 ones per
//! row, seeded: no data files). Target: <= 30 ms per fit.

use criterion::{Criterion, criterion_group, criterion_main};
use epsilab::data::{BinaryMatrix, Dataset, Features, SplitRule};
use epsilab::learners::logistic::preprocess::scale_rows;
use epsilab::learners::logistic::*;
use epsilab::privacy::Ledger;
use epsilab::rng::rng_from;
use linfa::ParamGuard;
use rand::Rng as _;
use std::hint::black_box;

fn adult_like() -> Dataset {
    let (n, d, k) = (32561, 123, 14);
    let mut rng = rng_from(&["bench", "adult-like"]);
    let w: Vec<f64> = (0..d).map(|_| rng.r#gen::<f64>() * 2.0 - 1.0).collect();
    let mut m = BinaryMatrix::new(d);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let mut ones: Vec<u32> = rand::seq::index::sample(&mut rng, d, k)
            .into_iter()
            .map(|j| j as u32)
            .collect();
        ones.sort_unstable();
        let z: f64 = ones.iter().map(|&j| w[j as usize]).sum();
        labels.push(u16::from(rng.r#gen::<f64>() < 1.0 / (1.0 + (-z).exp())));
        m.push_row(&ones);
    }
    Dataset {
        name: "adult-like".into(),
        title: "synthetic Adult-sized binary data".into(),
        features: Features::Binary(m),
        labels,
        class_names: vec!["0".into(), "1".into()],
        split: SplitRule::Fixed { n_train: n },
        bounds: None,
        feature_names: None,
    }
}

fn bench(c: &mut Criterion) {
    let data = adult_like();
    let rows: Vec<u32> = (0..data.n_rows() as u32).collect();
    let y = labels_pm1(&data, &rows).unwrap();
    let mut design = Design::new(&data, &rows, None, Encoding::Indicator).unwrap();
    scale_rows(&mut design, RowScaling::PublicBound(14.0));
    let lambda = 1.0;
    let lr = LogisticParams::new(lambda).check().unwrap();
    let conv = lr.fit_design(&design, &y).convergence.unwrap();
    eprintln!("non-private LR: {conv:?}");
    let mut g = c.benchmark_group("logistic_adult_like");
    g.sample_size(20);
    g.bench_function("non_private_newton", |b| {
        b.iter(|| black_box(lr.fit_design(&design, &y)))
    });
    let lb = LogisticParams::new(lambda)
        .solver(Solver::Lbfgs)
        .check()
        .unwrap();
    g.bench_function("non_private_lbfgs", |b| {
        b.iter(|| black_box(lb.fit_design(&design, &y)))
    });
    for (name, method) in [
        ("output_perturbation", PrivateLrMethod::Output),
        ("objective_perturbation", PrivateLrMethod::Objective),
    ] {
        let p = PrivateLogisticParams::new(method, 0.1, lambda)
            .check()
            .unwrap();
        let mut rng = rng_from(&["bench", name]);
        let fit = p
            .fit_design(&design, &y, &mut rng, &mut Ledger::default())
            .unwrap();
        eprintln!("{name}: {:?}", fit.model.convergence);
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut ledger = Ledger::default();
                black_box(p.fit_design(&design, &y, &mut rng, &mut ledger).unwrap())
            })
        });
    }
    // The thesis's +-1 encoding (dense rows, handled in sparse form).
    let (pm, _) = preprocess::thesis_binary(&data, &rows, None, true).unwrap();
    g.bench_function("non_private_newton_plus_minus", |b| {
        b.iter(|| black_box(lr.fit_design(&pm, &y)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
