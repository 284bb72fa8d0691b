//! Feature selection hot paths: Algorithm 5 mask sampling (D = 600, T = 60, reused workspace)
//! and the MI score on D = 600 features.

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use epsilab::counts::ClassCounts;
use epsilab::privacy::exponential::MaskSampler;
use epsilab::rng::rng_from;
use epsilab::selection::{mask_weights, mutual_information};
use ndarray::Array2;
use rand::Rng as _;

fn counts(d: usize) -> ClassCounts {
    let mut rng = rng_from(&["bench", "counts"]);
    let class = vec![450.0, 450.0];
    let on = Array2::from_shape_fn((2, d), |_| (rng.r#gen::<f64>() * 450.0).floor());
    ClassCounts { class, on }
}

fn bench(c: &mut Criterion) {
    let (d, t) = (600, 60);
    let counts = counts(d);
    let q = mutual_information(&counts).unwrap();
    let sens = t as f64
        * epsilab::selection::mi_sensitivity(counts.total(), epsilab::privacy::Relation::AddRemove);
    let w = mask_weights(&q, 0.05, sens);
    let mut sampler = MaskSampler::new();
    let mut rng = rng_from(&["bench", "mask"]);
    let mut out = Vec::with_capacity(t);
    c.bench_function("mask_sample_d600_t60", |b| {
        b.iter(|| {
            sampler
                .sample_into(black_box(&w), t, &mut rng, &mut out)
                .unwrap();
            black_box(&out);
        })
    });
    c.bench_function("mutual_information_d600", |b| {
        b.iter(|| black_box(mutual_information(black_box(&counts)).unwrap()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
