//! The speed gate of `epsilab check`: per-benchmark ratios to a reference workload.
//!
//! Absolute times vary across machines and with load, so each benchmark is timed against a
//! fixed reference workload (Laplace sampling and logs, like the harness's hot loops) in the
//! same process, interleaved — reference, benchmark 1, reference, benchmark 2, reference — so
//! that both see the same load, and repeated for [`ROUNDS`] rounds. A round's ratio is the
//! benchmark's time over the mean of the two reference times around it; the gate reads the
//! median over rounds. A benchmark fails when its median ratio exceeds [`LIMIT`] times the
//! stored one (`expectations/speed.json`) twice: a first excess is remeasured (another
//! [`ROUNDS`] rounds) before it fails, so a burst of load on a neighbour does not fail CI.
//! docs/ci.md states the false-alarm rate measured on a loaded machine.
//!
//! With a history folder (`epsilab check --record-speed DIR`) every measured ratio is appended
//! to `DIR/<benchmark>.tsv` as `commit<TAB>ratio`; the HTML report draws each as a line
//! ([`history_html`]), as asv does.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Rounds of one measurement.
pub const ROUNDS: usize = 15;
/// Rounds of the measurement `--bless-speed` stores.
pub const BLESS_ROUNDS: usize = 3 * ROUNDS;
/// Slowdown of a benchmark's ratio, relative to the stored one, that fails the gate.
pub const LIMIT: f64 = 1.3;
/// The stored ratios, in the expectations folder.
pub const SPEED_FILE: &str = "speed.json";
/// The history folder inside the results folder the HTML report reads.
pub const HISTORY_DIR: &str = "speed";

/// One benchmark: a name and a workload that takes a fraction of a second.
pub struct Bench {
    pub name: String,
    pub run: Box<dyn Fn() + Sync>,
}

impl Bench {
    pub fn new(name: &str, run: impl Fn() + Sync + 'static) -> Self {
        Bench {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// `expectations/speed.json`: each benchmark's median ratio to the reference workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeedExpectation {
    pub ratios: BTreeMap<String, f64>,
}

/// How to run the speed gate.
#[derive(Debug, Clone, Default)]
pub struct SpeedOptions {
    /// Store this run's ratios as the expectation instead of comparing.
    pub bless: bool,
    /// Append each ratio to `DIR/<benchmark>.tsv` with this commit.
    pub record: Option<(PathBuf, String)>,
}

/// What the speed gate measured.
#[derive(Debug, Clone, Default)]
pub struct SpeedReport {
    /// Per benchmark: the median ratio (the remeasured one where a first excess was
    /// remeasured) and the stored ratio.
    pub ratios: Vec<(String, f64, Option<f64>)>,
    pub failures: Vec<String>,
}

/// The fixed reference workload: 4,000,000 Laplace draws and logs (tens of milliseconds, like
/// each benchmark, so that a scheduler's time slice is small beside every timing).
pub fn reference() {
    let mut rng = crate::rng::rng_from(&["speed reference"]);
    let lap = crate::privacy::LaplaceNoise::with_scale(10.0).expect("scale");
    let mut acc = 0.0f64;
    for _ in 0..4_000_000 {
        acc += (1.0 + lap.sample(&mut rng).abs()).ln();
    }
    std::hint::black_box(acc);
}

/// Seconds of CPU `f` takes: the process's CPU clock, not the wall clock, so that a busy
/// neighbour's time slices do not count (measured: beside two CPU-bound processes a planted
/// 1.5x slowdown read as 1.25x on the wall clock). The gate runs nothing else in its process
/// while it times, and a benchmark's pool threads (the NB harness) are counted.
fn seconds(f: &(dyn Fn() + Sync)) -> f64 {
    let t = CpuClock::now();
    f();
    t.elapsed().max(1e-9)
}

/// The process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`) where the platform has it, else the
/// wall clock.
struct CpuClock(f64);

impl CpuClock {
    fn now() -> Self {
        CpuClock(Self::read())
    }

    fn elapsed(&self) -> f64 {
        Self::read() - self.0
    }

    #[cfg(unix)]
    fn read() -> f64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant of libc.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
        } else {
            wall()
        }
    }

    #[cfg(not(unix))]
    fn read() -> f64 {
        wall()
    }
}

/// Seconds since the first call (the fallback clock). Its static is the clock's origin, an
/// instant, not data of any trial.
fn wall() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// The median of a non-empty list.
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Each benchmark's median ratio over `rounds` interleaved rounds against `reference`.
pub fn measure(reference: &(dyn Fn() + Sync), benches: &[&Bench], rounds: usize) -> Vec<f64> {
    // One untimed pass warms caches and lazily built tables.
    reference();
    benches.iter().for_each(|b| (b.run)());
    let mut ratios = vec![Vec::with_capacity(rounds); benches.len()];
    for _ in 0..rounds {
        let mut before = seconds(reference);
        for (i, b) in benches.iter().enumerate() {
            let t = seconds(&*b.run);
            let after = seconds(reference);
            ratios[i].push(t / ((before + after) / 2.0));
            before = after;
        }
    }
    ratios.iter_mut().map(|r| median(r)).collect()
}

/// Whether a ratio exceeds the limit of its stored one.
pub fn too_slow(measured: f64, stored: f64) -> bool {
    measured > stored * LIMIT
}

/// Measures `benches`, remeasures any that exceed [`LIMIT`] times their stored ratio, and
/// fails those that exceed it again.
pub fn compare(
    reference: &(dyn Fn() + Sync),
    benches: &[Bench],
    stored: &SpeedExpectation,
    rounds: usize,
) -> SpeedReport {
    let all: Vec<&Bench> = benches.iter().collect();
    let mut measured = measure(reference, &all, rounds);
    let suspects: Vec<usize> = (0..benches.len())
        .filter(|&i| {
            let s = stored.ratios.get(&benches[i].name);
            s.is_some_and(|&s| too_slow(measured[i], s))
        })
        .collect();
    let again: Vec<&Bench> = suspects.iter().map(|&i| &benches[i]).collect();
    let second = if again.is_empty() {
        Vec::new()
    } else {
        measure(reference, &again, rounds)
    };
    let mut report = SpeedReport::default();
    for (&i, &m) in suspects.iter().zip(&second) {
        let (first, s) = (measured[i], stored.ratios[&benches[i].name]);
        if too_slow(m, s) {
            report.failures.push(format!(
                "speed: `{}` took {first:.3}x, then {m:.3}x the reference workload (stored {s:.3}x, limit {LIMIT}x of it): it got slower",
                benches[i].name
            ));
        }
        measured[i] = m;
    }
    for (b, m) in benches.iter().zip(measured) {
        let s = stored.ratios.get(&b.name).copied();
        if s.is_none() {
            report.failures.push(format!(
                "speed: `{}` has no stored ratio (run `epsilab check --bless-speed`)",
                b.name
            ));
        }
        report.ratios.push((b.name.clone(), m, s));
    }
    report
}

/// The benchmarks of the gate: the NB harness end to end (a small embedded spec: data,
/// counts, private selection, private and non-private NB, the store) and the
/// logistic-regression path (every solver and the cross-validation loop).
pub fn benches() -> Vec<Bench> {
    vec![
        Bench::new("nb_pipeline", nb_pipeline),
        Bench::new("logistic", logistic),
    ]
}

/// The NB harness spec the gate times (embedded: the gate needs no files).
const NB_SPEC: &str = include_str!("speed.toml");

fn nb_pipeline() {
    let spec = crate::spec::Spec::parse(NB_SPEC, Path::new("speed.toml")).expect("spec");
    let tmp = tempfile::tempdir().expect("temporary folder");
    let opts = crate::runner::RunOptions {
        force: true,
        ..crate::runner::RunOptions::quiet(tmp.path(), crate::data::DataDir(tmp.path().into()), 1)
    };
    std::hint::black_box(crate::runner::run(&spec, &opts).expect("speed spec"));
}

/// Fixed seeded logistic-regression fits: an Adult-shaped Newton fit (8000 x 123, 14 ones
/// per row), a wide +-1-encoded fit (600 x 400, Newton-CG) with a warm-started 5-fold
/// cross-validation over the thesis's λ grid, and a dense L-BFGS fit (4000 x 40).
fn logistic() {
    use crate::data::synthetic::logistic_binary;
    use crate::learners::logistic::preprocess::thesis_binary;
    use crate::learners::logistic::select::{LAMBDA_GRID, Starts, cross_validate_lambda};
    use crate::learners::logistic::{Design, Encoding, Objective, SolverSettings, labels_pm1};
    let make = |n: usize, d: usize, k: usize, tag: &str| {
        let mut rng = crate::rng::rng_from(&["lr speed reference", tag]);
        logistic_binary(&mut rng, tag, tag, n, d, k)
    };
    let s = SolverSettings::default();
    let narrow = make(8000, 123, 14, "narrow");
    let rows: Vec<u32> = (0..8000).collect();
    let y = labels_pm1(&narrow, &rows).expect("two classes");
    let mut des = Design::new(&narrow, &rows, None, Encoding::Indicator).expect("cols");
    des.scale_all(1.0 / 14f64.sqrt());
    std::hint::black_box(Objective::regularised(&des, &y, 1.0).minimise(&s));
    let wide = make(600, 400, 30, "wide");
    let rows: Vec<u32> = (0..600).collect();
    let y = labels_pm1(&wide, &rows).expect("two classes");
    let (des, _) = thesis_binary(&wide, &rows, None, true).expect("cols");
    std::hint::black_box(Objective::regularised(&des, &y, 1.0).minimise(&s));
    let mut rng = crate::rng::rng_from(&["lr speed reference", "cv"]);
    std::hint::black_box(
        cross_validate_lambda(&des, &y, &LAMBDA_GRID, 5, &s, Starts::Warm, &mut rng)
            .expect("folds"),
    );
    let dense = {
        use rand::Rng as _;
        let mut rng = crate::rng::rng_from(&["lr speed reference", "dense"]);
        ndarray::Array2::from_shape_fn((4000, 40), |_| rng.r#gen::<f64>() - 0.5)
    };
    let dense_y: Vec<f64> = dense
        .rows()
        .into_iter()
        .map(|r| if r[0] + r[1] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let des = Design::dense(dense.view());
    std::hint::black_box(Objective::regularised(&des, &dense_y, 1.0).minimise(&s));
}

/// The speed gate over [`benches`], against (or, blessing, into) `exp_dir/speed.json`.
pub fn gate(exp_dir: &Path, opts: &SpeedOptions) -> Result<SpeedReport> {
    let file = exp_dir.join(SPEED_FILE);
    let benches = benches();
    let report = if opts.bless {
        // A longer measurement for the baseline every later run is held to.
        let all: Vec<&Bench> = benches.iter().collect();
        let m = measure(&reference, &all, BLESS_ROUNDS);
        let ratios = benches.iter().map(|b| b.name.clone()).zip(m).collect();
        let e = SpeedExpectation { ratios };
        let text = serde_json::to_string_pretty(&e).expect("json") + "\n";
        std::fs::write(&file, text).map_err(|err| Error::io(&file, err))?;
        SpeedReport {
            ratios: e
                .ratios
                .iter()
                .map(|(k, v)| (k.clone(), *v, None))
                .collect(),
            failures: Vec::new(),
        }
    } else {
        let stored = read_expectation(&file)?;
        compare(&reference, &benches, &stored, ROUNDS)
    };
    if let Some((dir, commit)) = &opts.record {
        record(dir, commit, &report)?;
    }
    Ok(report)
}

fn read_expectation(file: &Path) -> Result<SpeedExpectation> {
    match std::fs::read_to_string(file) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| Error::Parse {
            path: file.into(),
            line: e.line(),
            reason: format!("{e} (rewrite it with `epsilab check --bless-speed`)"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SpeedExpectation::default()),
        Err(e) => Err(Error::io(file, e)),
    }
}

/// Appends each measured ratio to `dir/<benchmark>.tsv`.
pub fn record(dir: &Path, commit: &str, report: &SpeedReport) -> Result<()> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for (name, ratio, _) in &report.ratios {
        let p = dir.join(format!("{name}.tsv"));
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .map_err(|e| Error::io(&p, e))?;
        writeln!(f, "{}\t{ratio:.4}", commit.trim()).map_err(|e| Error::io(&p, e))?;
    }
    Ok(())
}

/// Every `*.tsv` history of `dir`, by benchmark: (commit, ratio) in file order. Lines that do
/// not parse are skipped.
pub fn histories(dir: &Path) -> Vec<(String, Vec<(String, f64)>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .filter_map(|p| {
            let name = p.file_stem()?.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).ok()?;
            let points = text
                .lines()
                .filter_map(|l| {
                    let (c, r) = l.split_once('\t')?;
                    Some((c.to_string(), r.trim().parse::<f64>().ok()?))
                })
                .collect();
            Some((name, points))
        })
        .collect()
}

/// The speed history as an HTML section with one inline SVG line chart per benchmark (ratio
/// against commit, oldest left); empty when there is no history.
pub fn history_html(dir: &Path) -> String {
    let all = histories(dir);
    if all.iter().all(|(_, p)| p.is_empty()) {
        return String::new();
    }
    let mut out = String::from(
        "<section id=\"speed\">\n<h2>Speed history</h2>\n<p>Each benchmark's time over the \
         reference workload's, measured in the same process by <code>epsilab check \
         --record-speed</code> (median of interleaved rounds), by commit. Lower is faster.</p>\n",
    );
    for (name, points) in all.iter().filter(|(_, p)| !p.is_empty()) {
        out.push_str(&line_chart(name, points));
    }
    out.push_str("</section>\n");
    out
}

fn line_chart(name: &str, points: &[(String, f64)]) -> String {
    let (w, h, pad) = (640.0, 180.0, 40.0);
    let max = points.iter().map(|p| p.1).fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let x = |i: usize| pad + (w - 2.0 * pad) * i as f64 / (points.len().max(2) - 1) as f64;
    let y = |r: f64| h - pad - (h - 2.0 * pad) * r / max;
    let path: Vec<String> = (points.iter().enumerate())
        .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.1)))
        .collect();
    let mut s = format!(
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"speed history of {n}\">\
         <line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#888\"/>\
         <line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" stroke=\"#888\"/>\
         <text x=\"2\" y=\"{t}\" font-size=\"11\">{max:.2}</text><text x=\"2\" y=\"{b}\" font-size=\"11\">0</text>\
         <polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{p}\"/>",
        n = escape(name),
        b = h - pad,
        r = w - pad,
        t = pad + 4.0,
        p = path.join(" ")
    );
    for (i, (c, r)) in points.iter().enumerate() {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#1f77b4\"><title>{}: {r:.3}</title></circle>",
            x(i),
            y(*r),
            escape(c)
        );
    }
    let (first, last) = (&points[0].0, &points[points.len() - 1].0);
    let _ = writeln!(
        s,
        "<text x=\"{pad}\" y=\"{}\" font-size=\"11\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\
         </svg><figcaption><code>{}</code>: ratio to the reference workload by commit</figcaption></figure>",
        h - pad + 16.0,
        escape(first),
        w - pad,
        h - pad + 16.0,
        escape(last),
        escape(name)
    );
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The commit a speed record is filed under: `$EPSILAB_COMMIT`, else `git rev-parse --short
/// HEAD`, else `unknown`.
pub fn current_commit() -> String {
    if let Ok(c) = std::env::var("EPSILAB_COMMIT")
        && !c.trim().is_empty()
    {
        return c.trim().into();
    }
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_the_limit() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(!too_slow(1.29, 1.0));
        assert!(too_slow(1.31, 1.0));
    }

    #[test]
    fn history_round_trips_and_draws() {
        let tmp = tempfile::tempdir().unwrap();
        let r = SpeedReport {
            ratios: vec![("lr".into(), 2.5, Some(2.4))],
            failures: vec![],
        };
        record(tmp.path(), "abc123", &r).unwrap();
        record(tmp.path(), "def456", &r).unwrap();
        let h = histories(tmp.path());
        assert_eq!(
            h,
            [(
                "lr".to_string(),
                vec![("abc123".into(), 2.5), ("def456".into(), 2.5)]
            )]
        );
        let html = history_html(tmp.path());
        assert!(
            html.contains("<polyline") && html.contains("def456: 2.500"),
            "{html}"
        );
        assert_eq!(history_html(&tmp.path().join("none")), "");
        // The report page puts it at the end of its body, before its script.
        let page = crate::report::html::page("t", "", &[], true);
        let with = crate::report::html::with_appendix(page, &html);
        let (at, script) = (
            with.find("Speed history").unwrap(),
            with.rfind("<script>").unwrap(),
        );
        assert!(at < script && with.ends_with("</html>\n"));
    }
}
