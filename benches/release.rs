//! 10^6 Laplace releases of a mean over n = 1000 values in [0, 1] (issue 12: "well under a
//! second"), beside numpy doing the same in the same run.
//!
//! * `release/mean_query_n1000`: the exact answer (one pass, no allocation).
//! * `release/laplace_mean_1e6`: clamping to the public bounds and the answer once per run,
//!   then 10^6 independent releases written into a preallocated buffer (the hot loop
//!   allocates nothing).
//!
//! After criterion, the same workload is timed here and by `benches/peer/numpy_release.py`
//! (`rng.laplace` into a preallocated array, median of 15 runs each) and the ratio is printed.
//! The peer needs `python3` with numpy; without it the ratio line says so and is skipped.

#[path = "common/peer.rs"]
mod peer;
#[path = "common/ratio.rs"]
mod ratio;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use epsilab::privacy::Ledger;
use epsilab::release::{Bounds, Clamped, LaplaceRelease, Query, query};
use epsilab::rng::rng_from;
use rand::Rng;
use std::time::Instant;

const N: usize = 1000;
const RELEASES: usize = 1_000_000;
const EPSILON: f64 = 0.1;

fn data() -> Vec<f64> {
    let mut rng = rng_from(&["bench", "release"]);
    (0..N).map(|_| rng.r#gen::<f64>()).collect()
}

/// One run of the workload: clamp the column to its public bounds, answer the query, then
/// fill `out` with releases drawn through one ledger charge (which records 10^6 eps).
fn releases(raw: &[f64], out: &mut [f64], seed: u64) {
    let data = Clamped::new(raw, Bounds::new(0.0, 1.0).expect("bounds")).expect("column");
    let mut ledger = Ledger::default();
    let r = LaplaceRelease::new(Query::Mean { n: N }, &data, EPSILON, &ledger).expect("release");
    ledger
        .charge("mean", "laplace (repeated)", r.repeated())
        .expect("same relation")
        .fill(r.truth, &mut rng_from(&["bench", &seed.to_string()]), out);
}

fn bench(c: &mut Criterion) {
    let data = data();
    let mut out = vec![0.0; RELEASES];
    let mut g = c.benchmark_group("release");
    g.bench_function("mean_query_n1000", |b| {
        b.iter(|| black_box(query::mean(black_box(&data))))
    });
    g.sample_size(20);
    g.bench_function("laplace_mean_1e6", |b| {
        let mut seed = 0;
        b.iter(|| {
            seed += 1;
            releases(&data, &mut out, seed);
            black_box(out[RELEASES - 1])
        })
    });
    g.finish();
    peer_ratio(&data, &mut out);
}

/// Median seconds of 15 runs here and in numpy, and their ratio.
fn peer_ratio(data: &[f64], out: &mut [f64]) {
    let mut times: Vec<f64> = (0..15)
        .map(|s| {
            let t = Instant::now();
            releases(data, out, 1000 + s);
            black_box(out[0]);
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let ours = times[times.len() / 2];
    let Some(text) = peer::run("benches/peer/numpy_release.py") else {
        return;
    };
    match text.trim().parse::<f64>() {
        Ok(theirs) => ratio::Ratio {
            case: "release/laplace_mean_1e6",
            peer: "numpy",
            what: "the Laplace mean's releases at n = 10^6 (median of 15)",
            epsilab_s: ours,
            peer_s: theirs,
            target: None,
        }
        .report(),
        Err(_) => println!("SKIP numpy ratio: unexpected peer output {text:?}"),
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
