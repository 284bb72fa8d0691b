//! Logistic-regression fits per solver and per pipeline kind, on the real datasets when
//! `EPSILAB_DATA` (or `./datasets`) has them, else on seeded synthetic stand-ins of the same
//! shape. `benches/peer/sklearn_lr.py` times the same fits in scikit-learn (same data, same
//! objective, one BLAS thread) so docs/performance.md reports ratios measured in one session.
//!
//! * `lr_adult`: Adult train (32561 x 123, 0/1 indicators, rows / sqrt(14)), lambda = 1, at
//!   tolerance 1e-8 and the default, per solver; output and objective perturbation.
//! * `lr_xwindows`: one Table 4.2 non-private trial on XWindowsDoc's train file (thesis
//!   scaling, 5-fold CV over 9 lambdas with warm starts + the final fit = 46 fits).
//! * `lr_dense`: Gaussian rows, N = 2^17 x D = 100 (`EPSILAB_BENCH_DENSE_N` overrides N;
//!   `scripts/lr-speed.sh` uses the 2^20): `auto` (L-BFGS on dense D > 16), and at
//!   N <= 2^17 also Newton-CG, the previous automatic choice.
//! * `lr_gram`: the dense weighted Gram X^T diag(w) X behind the functional mechanism's
//!   coefficients and dense Newton's Hessian, N = 2^15 x D = 1000 and 2^14 x D = 1500 uniform
//!   rows (appendix B's two largest D); the peer is numpy's `X.T @ (w[:, None] * X)` on one
//!   BLAS thread.
//! * `lr_passes_each`: objective perturbation's lockstep passes, margins and X^T c for four
//!   vectors over a 2^17 x 1000 copy, one combined pass (`margins_each`, `weighted_sum_each`)
//!   against four separate ones: what a lockstep round saves.
//! * `lr_trim`: the functional mechanism's trimming step at D = 1000 and 1500 (the minimiser
//!   on the positive eigenspace of an indefinite symmetric matrix, entries uniform in
//!   [-1, 1]); the peer is numpy's `eigh` (LAPACK's divide and conquer, one BLAS thread) and
//!   the projection onto the kept eigenvectors.
//!
//! Iteration counts go to `target/lr-peer/epsilab-iterations.txt` for the ratio table.

use criterion::{Criterion, criterion_group, criterion_main};
use epsilab::data::{DataDir, Dataset, catalog::Catalog, synthetic::logistic_binary};
use epsilab::learners::logistic::preprocess::{scale_rows, thesis_binary};
use epsilab::learners::logistic::select::{Starts, cross_validate_lambda};
use epsilab::learners::logistic::*;
use epsilab::privacy::Ledger;
use epsilab::rng::rng_from;
use linfa::ParamGuard;
use ndarray::Array2;
use rand::Rng as _;
use rand_distr::StandardNormal;
use std::hint::black_box;

fn synthetic_binary(name: &str, n: usize, d: usize, k: usize) -> Dataset {
    let title = format!("synthetic stand-in for {name}");
    logistic_binary(&mut rng_from(&["bench", name]), name, &title, n, d, k)
}

/// The named catalog dataset and the rows of its train file, or a synthetic stand-in.
fn dataset(name: &str, n: usize, d: usize, k: usize) -> (Dataset, Vec<u32>) {
    match Catalog::builtin().load(name, &DataDir::resolve(None)) {
        Ok(data) => {
            let n = n.min(data.n_rows());
            (data, (0..n as u32).collect())
        }
        Err(e) => {
            eprintln!("{name}: {e}; using a synthetic stand-in");
            (synthetic_binary(name, n, d, k), (0..n as u32).collect())
        }
    }
}

/// Appends `name iterations` for `scripts/lr-speed.sh`'s table.
fn note_iterations(name: &str, conv: &Convergence) {
    use std::io::Write as _;
    let dir = std::path::Path::new("target/lr-peer");
    let line = format!("{name} {}\n", conv.iterations);
    let _ = std::fs::create_dir_all(dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("epsilab-iterations.txt"))?
            .write_all(line.as_bytes())
    });
}

fn settings(solver: Solver, tol: f64) -> SolverSettings {
    SolverSettings {
        solver,
        tol,
        ..SolverSettings::default()
    }
}

fn adult(c: &mut Criterion) {
    let (data, rows) = dataset("adult", 32561, 123, 14);
    let y = labels_pm1(&data, &rows).unwrap();
    let mut design = Design::new(&data, &rows, None, Encoding::Indicator).unwrap();
    scale_rows(&mut design, RowScaling::PublicBound(14.0));
    let lambda = 1.0;
    let mut g = c.benchmark_group("lr_adult");
    g.sample_size(20);
    for tol in [1e-8, DEFAULT_TOL] {
        for solver in [Solver::Newton, Solver::NewtonCg, Solver::Lbfgs] {
            let s = settings(solver, tol);
            let lr = LogisticParams::new(lambda).settings(s).check().unwrap();
            let conv = lr.fit_design(&design, &y).convergence.unwrap();
            eprintln!("adult {} tol {tol:e}: {conv:?}", solver.name());
            note_iterations(&format!("adult_{}_{tol:e}", solver.name()), &conv);
            g.bench_function(format!("{}_tol_{tol:e}", solver.name()), |b| {
                b.iter(|| black_box(lr.fit_design(&design, &y)))
            });
        }
    }
    for (name, method) in [
        ("output_perturbation", PrivateLrMethod::Output),
        ("objective_perturbation", PrivateLrMethod::Objective),
    ] {
        let p = PrivateLogisticParams::new(method, 0.1, lambda)
            .settings(settings(Solver::Auto, 1e-8))
            .check()
            .unwrap();
        let mut rng = rng_from(&["bench", name]);
        g.bench_function(format!("{name}_tol_1e-8"), |b| {
            b.iter(|| {
                let mut ledger = Ledger::default();
                black_box(p.fit_design(&design, &y, &mut rng, &mut ledger).unwrap())
            })
        });
    }
    g.finish();
}

fn xwindows(c: &mut Criterion) {
    let (data, rows) = dataset("xwindows", 900, 600, 40);
    let (design, _) = thesis_binary(&data, &rows, None, true).unwrap();
    let y = labels_pm1(&data, &rows).unwrap();
    eprintln!(
        "xwindows: {} x {} (auto: {:?})",
        design.n_rows(),
        design.dim(),
        Objective::regularised(&design, &y, 1.0).choose(Solver::Auto)
    );
    let mut g = c.benchmark_group("lr_xwindows");
    g.sample_size(10);
    for (solver, tol) in [
        (Solver::Auto, DEFAULT_TOL),
        (Solver::Auto, 1e-4),
        (Solver::Newton, DEFAULT_TOL),
    ] {
        let s = settings(solver, tol);
        g.bench_function(format!("t4_2_trial_{}_tol_{tol:e}", solver.name()), |b| {
            b.iter(|| {
                let mut rng = rng_from(&["bench", "cv"]);
                let choice =
                    cross_validate_lambda(&design, &y, &LAMBDA_GRID, 5, &s, Starts::Warm, &mut rng)
                        .unwrap();
                let lr = LogisticParams::new(choice.lambda)
                    .settings(s)
                    .check()
                    .unwrap();
                black_box(lr.fit_design(&design, &y))
            })
        });
    }
    g.finish();
}

fn dense(c: &mut Criterion) {
    let n: usize = std::env::var("EPSILAB_BENCH_DENSE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 17);
    let d = 100;
    let mut rng = rng_from(&["bench", "dense"]);
    let w: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
    let mut x = Array2::<f64>::zeros((n, d));
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut z = 0.0;
        for j in 0..d {
            let v: f64 = rng.sample(StandardNormal);
            x[[i, j]] = v / (d as f64).sqrt();
            z += w[j] * x[[i, j]];
        }
        y[i] = if rng.r#gen::<f64>() < 1.0 / (1.0 + (-z).exp()) {
            1.0
        } else {
            -1.0
        };
    }
    let design = Design::dense(x.view());
    let mut g = c.benchmark_group("lr_dense");
    g.sample_size(10);
    // Newton-CG (the previous automatic choice) takes several times L-BFGS's time: compared
    // at the default size only, so the 2^20 run stays within minutes.
    let solvers: &[Solver] = if n <= 1 << 17 {
        &[Solver::Auto, Solver::NewtonCg]
    } else {
        &[Solver::Auto]
    };
    for &solver in solvers {
        let lr = LogisticParams::new(1.0)
            .settings(settings(solver, 1e-8))
            .check()
            .unwrap();
        let conv = lr.fit_design(&design, &y).convergence.unwrap();
        eprintln!("dense {n} x {d} {}: {conv:?}", solver.name());
        note_iterations(&format!("dense_{n}_{}", solver.name()), &conv);
        g.bench_function(format!("n_{n}_{}_tol_1e-8", solver.name()), |b| {
            b.iter(|| black_box(lr.fit_design(&design, &y)))
        });
    }
    g.finish();
}

fn gram(c: &mut Criterion) {
    let mut g = c.benchmark_group("lr_gram");
    g.sample_size(10);
    for (n, d) in [(1usize << 15, 1000usize), (1 << 14, 1500)] {
        let mut rng = rng_from(&["bench", "gram"]);
        let x = Array2::from_shape_fn((n, d), |_| rng.r#gen::<f64>() * 2.0 - 1.0);
        let w: Vec<f64> = (0..n).map(|_| rng.r#gen::<f64>()).collect();
        let design = Design::dense(x.view());
        g.bench_function(format!("n_{n}_d_{d}"), |b| {
            b.iter(|| black_box(design.weighted_gram(&w)))
        });
    }
    g.finish();
}

fn trim(c: &mut Criterion) {
    let mut g = c.benchmark_group("lr_trim");
    g.sample_size(10);
    for d in [1000usize, 1500] {
        let mut rng = rng_from(&["bench", "trim", &d.to_string()]);
        let mut a = vec![0.0; d * d];
        for i in 0..d {
            for j in i..d {
                let v = rng.r#gen::<f64>() * 2.0 - 1.0;
                a[i * d + j] = v;
                a[j * d + i] = v;
            }
        }
        let b: Vec<f64> = (0..d).map(|_| rng.r#gen::<f64>() - 0.5).collect();
        g.bench_function(format!("d_{d}"), |bench| {
            bench.iter(|| black_box(eigenspace::solve_on_positive_eigenspace(&a, d, &b, 1e-12)))
        });
    }
    g.finish();
}

fn passes_each(c: &mut Criterion) {
    let (n, d) = (1usize << 17, 1000usize);
    let mut rng = rng_from(&["bench", "passes-each"]);
    let x = Array2::from_shape_fn((n, d), |_| rng.r#gen::<f64>() - 0.5);
    let design = Design::dense(x.view());
    let thetas: Vec<Vec<f64>> = (0..4)
        .map(|_| (0..d).map(|_| rng.r#gen::<f64>() - 0.5).collect())
        .collect();
    let cs: Vec<Vec<f64>> = (0..4)
        .map(|_| (0..n).map(|_| rng.r#gen::<f64>() - 0.5).collect())
        .collect();
    let (mut zs, mut gs) = (vec![vec![0.0; n]; 4], vec![vec![0.0; d]; 4]);
    let mut g = c.benchmark_group("lr_passes_each");
    g.sample_size(10);
    g.bench_function("margins_4_separate", |b| {
        b.iter(|| {
            for (t, z) in thetas.iter().zip(zs.iter_mut()) {
                design.margins(t, z);
            }
        })
    });
    g.bench_function("margins_4_each", |b| {
        b.iter(|| margins_each(&design, &thetas, &mut zs))
    });
    g.bench_function("xtc_4_separate", |b| {
        b.iter(|| {
            for (c, o) in cs.iter().zip(gs.iter_mut()) {
                design.weighted_sum(c, o);
            }
        })
    });
    g.bench_function("xtc_4_each", |b| {
        b.iter(|| weighted_sums_each(&design, &cs, &mut gs))
    });
    // As appendix B's objective perturbation reads a trial's subset: 2^17 rows in a shuffled
    // order out of a source twice as large, through the column map (no copy). The throughput
    // is the subset's bytes per pass, to set beside the machine's streaming read rate.
    let src = Array2::from_shape_fn((2 * n, d), |_| rng.r#gen::<f64>() - 0.5);
    let mut order: Vec<u32> = (0..2 * n as u32).collect();
    rand::seq::SliceRandom::shuffle(&mut order[..], &mut rng);
    let cols: Vec<usize> = (0..d).collect();
    let map = ColumnMap {
        a: (0..d).map(|_| 1.5 + rng.r#gen::<f64>()).collect(),
        b: (0..d).map(|_| rng.r#gen::<f64>() - 0.5).collect(),
    };
    let mapped = Design::dense_mapped(src.view(), &order[..n], &cols, &map).expect("map");
    g.throughput(criterion::Throughput::Bytes((n * d * 8) as u64));
    g.bench_function("margins_4_each_mapped_shuffled", |b| {
        b.iter(|| margins_each(&mapped, &thetas, &mut zs))
    });
    g.bench_function("xtc_4_each_mapped_shuffled", |b| {
        b.iter(|| weighted_sums_each(&mapped, &cs, &mut gs))
    });
    g.finish();
}

/// Lockstep's combined margins of `design` for every vector of `thetas`, into `zs`.
fn margins_each(design: &Design, thetas: &[Vec<f64>], zs: &mut [Vec<f64>]) {
    let t: Vec<&[f64]> = thetas.iter().map(Vec::as_slice).collect();
    let mut z: Vec<&mut [f64]> = zs.iter_mut().map(Vec::as_mut_slice).collect();
    design.margins_each(&t, &mut z)
}

/// Lockstep's combined X^T c of `design` for every vector of `cs`, into `outs`.
fn weighted_sums_each(design: &Design, cs: &[Vec<f64>], outs: &mut [Vec<f64>]) {
    let c: Vec<&[f64]> = cs.iter().map(Vec::as_slice).collect();
    let mut o: Vec<&mut [f64]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    design.weighted_sum_each(&c, &mut o)
}

criterion_group!(benches, adult, xwindows, dense, gram, trim, passes_each);
criterion_main!(benches);
