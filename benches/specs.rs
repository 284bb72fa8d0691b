//! A whole small spec end to end: plan, synthetic data, 300 trials on rayon, store appends.
//! (The quickstart: two synthetic NB datasets, seven epsilons, three pipelines, 10 trials.)

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use epsilab::data::DataDir;
use epsilab::runner::{RunOptions, run};
use epsilab::spec::Spec;

fn bench(c: &mut Criterion) {
    let spec = Spec::load("experiments/quickstart.toml".as_ref()).expect("quickstart spec");
    let out = tempfile::tempdir().expect("temp dir");
    let opts = RunOptions {
        threads: 0,
        data_dir: DataDir("unused".into()),
        out_dir: out.path().into(),
        smoke: false,
        force: true,
        progress: false,
        shard: None,
    };
    c.bench_function("spec/quickstart_300_trials", |b| {
        b.iter(|| black_box(run(&spec, &opts).expect("run").ran))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
