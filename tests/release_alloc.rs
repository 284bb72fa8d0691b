//! Issue 52: no release allocates per trial in proportion to n once its per-thread buffers
//! have grown. A counting global allocator (this test binary only) sums the bytes each thread
//! asks for while it counts; every release kind that reads the column runs one trial on
//! n = 100,000 values (as `benches/release_scale.rs::trial` runs a kind: the kind and a
//! `TrialLog`), then a second one, counted, which must ask for less than n bytes (a fresh
//! column of f64 is 8n; a column of bools n).

use epsilab::kinds::{RELEASES, ReleaseInput, ReleaseKind, find};
use epsilab::learners::TrialLog;
use epsilab::privacy::gaussian::Gaussian;
use epsilab::privacy::{Ledger, PublicSize, Relation};
use epsilab::release::robust::{self, PtrParams, Robust};
use epsilab::release::{self, Bounds, Clamped, Query, Release};
use epsilab::rng::Streams;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

/// The system allocator, counting the bytes a thread asks for while its `COUNTING` is set
/// (thread-local, so the other tests' threads do not add to it).
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: the thread's locals may be gone while it exits.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = BYTES.try_with(|b| b.set(b.get() + bytes));
        }
    });
}

// SAFETY: every call is forwarded to `System` unchanged; counting touches only
// const-initialised thread-locals without destructors (no allocation, no re-entry).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size.saturating_sub(layout.size()));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The bytes this thread asked for during `f`.
fn bytes_during(f: impl FnOnce()) -> usize {
    BYTES.with(|b| b.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    BYTES.with(|b| b.get())
}

const N: usize = 100_000;

/// Values in (-0.1, 1.1) (some outside the bounds [0, 1], so the clamp moves them), a few
/// exactly 0 or 1 so a 0/1 column is not needed for the survey's predicate.
fn column() -> Vec<f64> {
    (0..N)
        .map(|i| ((i * 7919) % N) as f64 / N as f64 * 1.2 - 0.1)
        .collect()
}

/// The release kind `name` with the spec fields `fields` (TOML).
fn kind(name: &str, fields: &str) -> Arc<dyn ReleaseKind> {
    let entry = find(RELEASES, name).unwrap_or_else(|| panic!("no release {name}"));
    let table: toml::Table = toml::from_str(fields).expect("fields");
    (entry.parse)(table).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One trial of `kind` on `xs` under `relation`, with the public n, as a harness cell runs it.
fn trial(kind: &dyn ReleaseKind, xs: &[f64], relation: Relation, seed: u64) -> TrialLog {
    let mut log = TrialLog::with_relation(seed, relation);
    log.ledger
        .set_public_size(Some(PublicSize::new(xs.len(), "test")));
    let input = ReleaseInput {
        values: xs,
        epsilon: Some(1.0),
    };
    kind.run(&input, &mut log).expect("release");
    assert!(log.metrics["release"].is_finite(), "{kind:?}");
    log
}

/// Every release kind that reads the column, with the relation it runs under.
fn kinds() -> Vec<(&'static str, &'static str, Relation)> {
    use Relation::{AddRemove as Ar, ReplaceOne as R1};
    let b = "bounds = [0.0, 1.0]\n";
    vec![
        ("laplace", "query = \"mean\"", Ar),
        ("laplace", "query = \"count\"\nat_least = 0.5", Ar),
        ("laplace", "query = \"median\"", Ar),
        ("laplace", "query = \"quantile\"\np = 0.9", Ar),
        ("laplace", "query = \"direct_average\"", Ar),
        ("laplace", "query = \"mean\"\nsum_share = 0.5", Ar),
        ("gaussian", "query = \"mean\"\ndelta = 1e-6", Ar),
        ("gaussian", "query = \"sum\"\ndelta = 1e-6", R1),
        ("gaussian", "query = \"median\"\ndelta = 1e-6", Ar),
        ("exponential_median", "", Ar),
        ("smooth_median", "", R1),
        ("global_median", "", Ar),
        ("composed_average", "sum_share = 0.5", Ar),
        ("histogram", "bins = [0.0, 0.25, 0.5, 1.0]", Ar),
        (
            "trimmed_mean_ptr",
            "alpha = 0.1\npropose = 4.0\ndelta = 1e-6",
            R1,
        ),
        ("iqr_ptr", "propose = 4.0\ndelta = 1e-6", R1),
        ("m_estimator_histogram", "huber = 0.1", Ar),
        ("randomized_response", "at_least = 0.5", R1),
    ]
    .into_iter()
    .map(|(name, fields, rel)| {
        let needs_bounds = !matches!(name, "randomized_response");
        let fields = if needs_bounds { b } else { "" }.to_string() + fields;
        (name, &*fields.leak(), rel)
    })
    .collect()
}

/// The second trial of each kind on n = 100,000 values asks for fewer than n bytes (the
/// first may grow the thread's buffers).
#[test]
fn a_second_trial_allocates_nothing_proportional_to_n() {
    let xs = column();
    let mut over = Vec::new();
    for (name, fields, relation) in kinds() {
        let k = kind(name, fields);
        trial(&*k, &xs, relation, 1);
        let bytes = bytes_during(|| {
            trial(&*k, &xs, relation, 2);
        });
        println!("{name} [{}]: {bytes} bytes", fields.replace('\n', "; "));
        if bytes >= N {
            over.push(format!(
                "{name} [{}]: {bytes} bytes",
                fields.replace('\n', "; ")
            ));
        }
    }
    assert!(
        over.is_empty(),
        "allocated >= n = {N} bytes:\n{}",
        over.join("\n")
    );
}

/// The counter sees a fresh column (so the test above can fail).
#[test]
fn the_counter_sees_a_column() {
    let bytes = bytes_during(|| {
        std::hint::black_box(vec![0.5f64; N]);
    });
    assert!(bytes >= 8 * N, "{bytes}");
}

/// A kernel of `release` on the freshly clamped column, as the kinds called them before
/// issue 52 (its own streams and ledger).
type Kernel = Box<dyn Fn(&Clamped, &mut Streams, &mut Ledger) -> Release>;

/// The ledger's steps but the public size (the kind reads it where the bare kernel may not).
fn steps(ledger: &Ledger) -> Vec<serde_json::Value> {
    let all = serde_json::to_value(ledger).expect("ledger");
    let all = all.as_array().expect("steps").clone();
    all.into_iter().filter(|e| e["name"] != "size").collect()
}

/// The kinds that stream or reuse a buffer give the bits and ledger steps of the kernel on a
/// fresh clamped column (the kinds of the specs are gated by `epsilab check` too; these
/// paths are in no spec), and a quantile's `abs_error_unclamped` is the sorted raw copy's.
#[test]
fn buffered_and_streamed_releases_equal_the_kernels_on_a_fresh_column() {
    use Relation::{AddRemove as Ar, ReplaceOne as R1};
    let xs = column();
    let b = Bounds::new(0.0, 1.0).unwrap();
    let n = xs.len();
    let ar_gauss = |q: Query| Gaussian::analytic(q.sensitivity(Ar, b), 1.0, 1e-6, Ar).unwrap();
    let (mean, median) = (Query::Mean { n }, Query::Quantile(0.5));
    let (g_mean, g_median) = (ar_gauss(mean), ar_gauss(median));
    let bins = vec![0.0, 0.25, 0.5, 1.0];
    let ptr = PtrParams {
        statistic: Robust::TrimmedMean { alpha: 0.1 },
        propose: 4.0,
        test_share: 0.5,
        delta: 1e-6,
        fallback: 0.5,
    };
    let cases: Vec<(&str, &str, Relation, Option<Query>, Kernel)> = vec![
        (
            "gaussian",
            "query = \"mean\"\ndelta = 1e-6",
            Ar,
            None,
            Box::new(move |c, s, l| release::gaussian("release", mean, c, g_mean, s, l).unwrap()),
        ),
        (
            "gaussian",
            "query = \"median\"\ndelta = 1e-6",
            Ar,
            Some(median),
            Box::new(move |c, s, l| {
                release::gaussian("release", median, c, g_median, s, l).unwrap()
            }),
        ),
        (
            "laplace",
            "query = \"quantile\"\np = 0.9",
            Ar,
            Some(Query::Quantile(0.9)),
            Box::new(|c, s, l| {
                release::laplace("release", Query::Quantile(0.9), c, 1.0, s, l).unwrap()
            }),
        ),
        (
            "laplace",
            "query = \"direct_average\"",
            Ar,
            Some(Query::DirectAverage),
            Box::new(|c, s, l| {
                release::laplace("release", Query::DirectAverage, c, 1.0, s, l).unwrap()
            }),
        ),
        (
            "laplace",
            "query = \"mean\"\nsum_share = 0.5",
            Ar,
            Some(Query::Mean { n }),
            Box::new(|c, s, l| release::composed_average(c, 1.0, 0.5, s, l).unwrap()),
        ),
        (
            "composed_average",
            "sum_share = 0.5",
            R1,
            Some(Query::Mean { n }),
            Box::new(|c, s, l| release::composed_average(c, 1.0, 0.5, s, l).unwrap()),
        ),
        (
            "global_median",
            "",
            Ar,
            None,
            Box::new(|c, s, l| release::global_median(c, 1.0, s, l).unwrap()),
        ),
        (
            "smooth_median",
            "",
            R1,
            None,
            Box::new(|c, s, l| release::smooth_median(c, 1.0, s, l).unwrap()),
        ),
        (
            "histogram",
            "bins = [0.0, 0.25, 0.5, 1.0]",
            Ar,
            None,
            Box::new(move |c, s, l| {
                let (noisy, exact) = release::histogram(c, &bins, 1.0, s, l).unwrap();
                Release {
                    value: noisy.iter().sum(),
                    truth: exact.iter().sum(),
                }
            }),
        ),
        (
            "trimmed_mean_ptr",
            "alpha = 0.1\npropose = 4.0\ndelta = 1e-6",
            R1,
            None,
            Box::new(move |c, s, l| robust::ptr_release(ptr, c, 1.0, s, l).unwrap().release),
        ),
    ];
    for (name, fields, relation, unclamped, kernel) in cases {
        let log = trial(
            &*kind(name, &format!("bounds = [0.0, 1.0]\n{fields}")),
            &xs,
            relation,
            7,
        );
        let mut ledger = Ledger::new(relation);
        ledger.set_public_size(Some(PublicSize::new(n, "test")));
        let c = Clamped::new(&xs, b).unwrap();
        let want = kernel(&c, &mut Streams::new(7), &mut ledger);
        let m = &log.metrics;
        assert_eq!(
            m["release"].to_bits(),
            want.value.to_bits(),
            "{name} {fields}"
        );
        assert_eq!(
            m["truth"].to_bits(),
            want.truth.to_bits(),
            "{name} {fields}"
        );
        assert_eq!(m["clamped"], c.clamped as f64, "{name} {fields}");
        assert_eq!(steps(&log.ledger), steps(&ledger), "{name} {fields}");
        if let Some(q) = unclamped {
            let raw = Clamped {
                values: xs.clone(),
                bounds: b,
                clamped: 0,
            };
            let u = (want.value - q.answer(&raw).unwrap()).abs();
            assert_eq!(
                m["abs_error_unclamped"].to_bits(),
                u.to_bits(),
                "{name} {fields}"
            );
        }
    }
}

/// The differencing attack (`kinds::attack`) counts its 0/1 column in place: a second trial
/// asks for less than n bytes (a copy of the column as bytes is n), and its release equals
/// `differencing_table`'s on that copy with the target's bit set (same counts, same streams).
#[test]
fn the_differencing_attack_counts_in_place() {
    use epsilab::kinds::ATTACKS;
    use epsilab::release::attacks::differencing_table;
    let bits: Vec<f64> = (0..N).map(|i| f64::from(u8::from(i % 3 == 0))).collect();
    let entry = find(ATTACKS, "differencing").expect("the differencing attack");
    let k = (entry.parse)(toml::Table::new()).expect("default fields");
    let first = trial(&*k, &bits, Relation::ReplaceOne, 1);
    let bytes = bytes_during(|| {
        trial(&*k, &bits, Relation::ReplaceOne, 2);
    });
    assert!(bytes < N, "differencing: {bytes} bytes");
    let mut table: Vec<u8> = bits.iter().map(|&v| v as u8).collect();
    *table.last_mut().unwrap() = first.metrics["truth"] as u8;
    let mut log = TrialLog::with_relation(1, Relation::ReplaceOne);
    let diff =
        differencing_table(&table, Some(1.0), &mut log.streams, &mut log.ledger).expect("table");
    assert_eq!(diff.to_bits(), first.metrics["release"].to_bits());
}
