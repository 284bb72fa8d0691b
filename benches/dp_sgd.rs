//! One DP-SGD epoch on Adult (a9a train, 32561 x 123 sparse binary, rows / max(sqrt(14), ‖x‖)):
//! logistic loss, Poisson sampling with q = 256/32561 (expected batch 256), clipping C = 1,
//! noise multiplier 1, η = 1, λ = 1; ⌈1/q⌉ = 128 steps. Target: at most 20 ms.
//!
//! In the same run, `benches/peer/numpy_dp_sgd.py` times the same epoch in numpy twice, the
//! textbook vectorised way and the leanest we could write (when python3 with numpy is
//! available), and both ratios are printed beside a median of epochs timed here the same way
//! (`EPSILAB_BENCH_NO_PEER=1` skips the peer).

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/peer.rs"]
mod peer;
#[path = "common/ratio.rs"]
mod ratio;
use epsilab::data::{DataDir, catalog::Catalog, synthetic::logistic_binary};
use epsilab::learners::logistic::dp_sgd::{DpSgdParams, DpSgdRun, Length, Sampling};
use epsilab::learners::logistic::preprocess::scale_rows;
use epsilab::learners::logistic::*;
use epsilab::privacy::accountant::{SubsampledGaussian, default_delta};
use epsilab::privacy::{AccountedGaussian, Ledger, Relation};
use epsilab::rng::rng_from;
use linfa::ParamGuard;
use std::hint::black_box;
use std::time::Instant;

fn epoch(c: &mut Criterion) {
    let data = match Catalog::builtin().load("adult", &DataDir::resolve(None)) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("adult: {e}; using a synthetic stand-in of the same shape");
            logistic_binary(
                &mut rng_from(&["bench", "adult"]),
                "adult",
                "synthetic stand-in for adult",
                32561,
                123,
                14,
            )
        }
    };
    let rows: Vec<u32> = (0..32561u32.min(data.n_rows() as u32)).collect();
    let y = labels_pm1(&data, &rows).unwrap();
    let mut design = Design::new(&data, &rows, None, Encoding::Indicator).unwrap();
    scale_rows(&mut design, RowScaling::PublicBound(14.0));
    let n = design.n_rows();
    let q = 256.0 / n as f64;
    let p = DpSgdParams::dp_sgd(1.0)
        .noise_multiplier(1.0)
        .sampling(Sampling::Rate(q))
        .length(Length::Epochs(1.0))
        .check()
        .unwrap();
    let steps = p.steps(n);
    let mut run = DpSgdRun::new(&design, &y, &p, q, n);
    // The noise is drawn through a ledger handle as in training; this ledger is a timing
    // scratch (the bench repeats the epoch, nothing is released).
    let plan = SubsampledGaussian::new(1.0, q, steps).unwrap();
    let mech = AccountedGaussian::new(plan, 1.0, default_delta(n), Relation::AddRemove).unwrap();
    let mut ledger = Ledger::default();
    let mut noise = ledger.charge("bench", "DP-SGD epoch", mech).unwrap();
    let mut rng = rng_from(&["bench", "dp_sgd"]);
    let mut g = c.benchmark_group("dp_sgd_adult");
    g.sample_size(50);
    g.bench_function(format!("epoch_batch256_{steps}_steps"), |b| {
        b.iter(|| {
            for _ in 0..steps {
                run.step(&mut rng, &mut noise);
            }
            black_box(&run.theta);
        })
    });
    g.finish();

    // The peer, in the same run, timed as the peer times itself (median of 30 epochs after 3),
    // plus CPU seconds per epoch over those 30, which a loaded machine does not inflate.
    let mut timed_epoch = || {
        let t = Instant::now();
        for _ in 0..steps {
            run.step(&mut rng, &mut noise);
        }
        black_box(&run.theta);
        t.elapsed().as_secs_f64()
    };
    for _ in 0..3 {
        timed_epoch();
    }
    // The CPU clock starts after the 3 warm-up epochs, as the peer's does.
    let cpu0 = cpu_seconds();
    let ours = {
        let mut times: Vec<f64> = (0..30).map(|_| timed_epoch()).collect();
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    let cpu = cpu0.zip(cpu_seconds()).map(|(a, b)| (b - a) / 30.0);
    let acc = {
        let z = {
            let mut z = vec![0.0; n];
            design.margins(&run.theta, &mut z);
            z
        };
        z.iter()
            .zip(&y)
            .filter(|(z, y)| (**z > 0.0) == (**y > 0.0))
            .count() as f64
            / n as f64
    };
    eprintln!(
        "epsilab: {n} x {}, q = {q:.6}, {steps} steps/epoch, train accuracy {acc:.4}; median epoch {:.3} ms",
        design.dim(),
        ours * 1e3
    );
    let Some(text) = peer::run("benches/peer/numpy_dp_sgd.py") else {
        return;
    };
    for (name, tag) in [("numpy", "numpy"), ("lean numpy", "numpy_lean")] {
        if let Some(s) = peer::value(&text, &format!("{tag}_dp_sgd_epoch_s")) {
            ratio::Ratio {
                case: "dp_sgd/adult_epoch",
                peer: name,
                what: "one DP-SGD epoch on Adult, batch 256 (wall, median of 30)",
                epsilab_s: ours,
                peer_s: s,
                target: (tag == "numpy_lean").then_some(">= 4"),
            }
            .report();
        }
        if let (Some(c), Some(p)) = (
            cpu,
            peer::value(&text, &format!("{tag}_dp_sgd_epoch_cpu_s")),
        ) {
            ratio::Ratio {
                case: "dp_sgd/adult_epoch_cpu",
                peer: name,
                what: "one DP-SGD epoch on Adult, batch 256 (CPU, mean of 30)",
                epsilab_s: c,
                peer_s: p,
                target: (tag == "numpy_lean").then_some(">= 4"),
            }
            .report();
        }
    }
}

/// User + system CPU seconds of this process (Linux /proc; None elsewhere).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which ends at the last ')'): utime is the 12th, stime 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // USER_HZ is 100 on every Linux ABI in use.
    Some(ticks / 100.0)
}

criterion_group!(benches, epoch);
criterion_main!(benches);
