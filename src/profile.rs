//! `epsilab run --profile`: where the time of a run went, per pipeline and phase.
//!
//! Off by default (one relaxed atomic load per timed section). When on, [`time`] records the
//! *exclusive* wall time of a section (its time minus the sections nested in it), so the
//! phases of a pipeline add up to the time spent in it, under the pipeline the current thread
//! is running ([`in_pipeline`]). Times from worker threads add up: with -j 2 the total is CPU
//! time across both workers, not elapsed time, except that the cells of a lockstep group each
//! run on a thread of their own and count their waits for the group (in fit and evaluate).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The phases, in the order the table shows them.
pub const PHASES: [&str; 8] = [
    "load",
    "split",
    "select",
    "preprocess",
    "cv",
    "fit",
    "evaluate",
    "write",
];

/// Rows of shared work (dataset loading, splits and counts, writing results).
pub const SHARED: &str = "(shared by all pipelines)";

// The profile's statics hold timings for `--profile`, never data a cell reads: no record
// depends on them, and `enable` clears them at the start of a profiled run.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// (pipeline, phase) -> (exclusive time, sections).
type Table = BTreeMap<(String, &'static str), (Duration, u64)>;
static TABLE: Mutex<Table> = Mutex::new(BTreeMap::new());

// Timings, not cross-trial state: no cell reads them, so no record depends on them.
// `in_pipeline` restores the pipeline name it replaced and every `time` pops the entry it
// pushed, so neither holds anything of a cell once its call returns.
thread_local! {
    /// The pipeline this thread's sections are recorded under ([`in_pipeline`]).
    static PIPELINE: RefCell<String> = const { RefCell::new(String::new()) };
    /// Time of the sections nested in each open section.
    static NESTED: RefCell<Vec<Duration>> = const { RefCell::new(Vec::new()) };
}

/// Starts recording (and clears anything recorded before).
pub fn enable() {
    TABLE.lock().expect("profile lock").clear();
    ENABLED.store(true, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Runs `f` with this thread's sections recorded under `pipeline`.
pub fn in_pipeline<T>(pipeline: &str, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let old = PIPELINE.with(|p| std::mem::replace(&mut *p.borrow_mut(), pipeline.to_string()));
    let out = f();
    PIPELINE.with(|p| *p.borrow_mut() = old);
    out
}

/// Runs `f`, recording its exclusive time under `phase` (one of [`PHASES`]).
pub fn time<T>(phase: &'static str, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    NESTED.with(|n| n.borrow_mut().push(Duration::ZERO));
    let start = Instant::now();
    let out = f();
    let elapsed = start.elapsed();
    let nested = NESTED.with(|n| n.borrow_mut().pop().unwrap_or_default());
    record(phase, elapsed, nested);
    out
}

/// Adds a section that took `elapsed` (of which `nested` in sections inside it) to `phase`
/// of the current pipeline, and to the nested time of the enclosing section. For spans that
/// are not one closure; a no-op when profiling is off.
pub fn record(phase: &'static str, elapsed: Duration, nested: Duration) {
    if !enabled() {
        return;
    }
    NESTED.with(|n| {
        if let Some(parent) = n.borrow_mut().last_mut() {
            *parent += elapsed;
        }
    });
    let pipeline = PIPELINE.with(|p| {
        let p = p.borrow();
        if p.is_empty() {
            SHARED.to_string()
        } else {
            p.clone()
        }
    });
    let mut table = TABLE.lock().expect("profile lock");
    let e = table.entry((pipeline, phase)).or_default();
    e.0 += elapsed.saturating_sub(nested);
    e.1 += 1;
}

/// Stops recording and returns (pipeline, phase, seconds, calls), pipelines in name order.
pub fn take() -> Vec<(String, &'static str, f64, u64)> {
    ENABLED.store(false, Ordering::Relaxed);
    let table = std::mem::take(&mut *TABLE.lock().expect("profile lock"));
    table
        .into_iter()
        .map(|((p, ph), (d, n))| (p, ph, d.as_secs_f64(), n))
        .collect()
}

/// The profile as a fixed-width table: one row per pipeline, one column per phase (seconds),
/// a total column and a total row.
pub fn table(rows: &[(String, &'static str, f64, u64)]) -> String {
    let mut by: BTreeMap<&str, BTreeMap<&str, f64>> = BTreeMap::new();
    for (p, ph, s, _) in rows {
        *by.entry(p.as_str()).or_default().entry(ph).or_default() += s;
    }
    let width = by
        .keys()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!("{:<width$}", "pipeline");
    for ph in PHASES {
        out += &format!(" {ph:>10}");
    }
    out += &format!(" {:>10}\n", "total");
    let mut totals = [0.0; PHASES.len()];
    for (p, phases) in &by {
        out += &format!("{p:<width$}");
        for (k, ph) in PHASES.iter().enumerate() {
            let s = phases.get(ph).copied().unwrap_or(0.0);
            totals[k] += s;
            out += &format!(" {s:>10.3}");
        }
        out += &format!(" {:>10.3}\n", phases.values().sum::<f64>());
    }
    out += &format!("{:<width$}", "total");
    for t in totals {
        out += &format!(" {t:>10.3}");
    }
    out += &format!(" {:>10.3}\n", totals.iter().sum::<f64>());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nested sections are subtracted from their parent, phases land under the pipeline the
    /// thread is in, and the table lists them with totals. (One test: the table is global.)
    #[test]
    fn records_exclusive_time_per_pipeline_and_phase() {
        enable();
        let spin = |ms: u64| std::thread::sleep(Duration::from_millis(ms));
        time("load", || spin(5));
        in_pipeline("lr", || {
            time("fit", || {
                spin(5);
                time("cv", || spin(80));
            })
        });
        let rows = take();
        let get = |p: &str, ph: &str| {
            rows.iter()
                .find(|r| r.0 == p && r.1 == ph)
                .map(|r| r.2)
                .unwrap_or(f64::NAN)
        };
        assert!(get(SHARED, "load") >= 0.005);
        let (fit, cv) = (get("lr", "fit"), get("lr", "cv"));
        assert!(cv >= 0.080, "{cv}");
        // Inclusive, fit would be >= 85 ms, more than cv (the margin survives a loaded machine's
        // oversleeping, which made a 20 vs 30 ms version flaky at load 15).
        assert!(
            fit >= 0.005 && fit < cv,
            "fit excludes the nested cv: {fit} vs {cv}"
        );
        let t = table(&rows);
        assert!(
            t.lines().count() == 4 && t.contains("lr") && t.contains("cv"),
            "{t}"
        );
        // Off again: nothing is recorded.
        time("fit", || spin(1));
        assert!(take().is_empty());
    }
}
