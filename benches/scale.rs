//! Issue 52: "cost linear in n for every release and learner (log-log slopes printed)".
//!
//! Every learner, release and attack of the default registry (`kinds::Registry::builtin`, so a
//! new kind is covered, or the bench stops naming it: `benches/common/scale_cases.rs`) runs as
//! a one-pipeline spec (parsed and validated as any spec) over synthetic data of n = 2^12,
//! 2^14, 2^16 and 2^18 training rows. Each of 3 trials runs its cell as the runner does
//! (`pipeline::run_cell`: selection, fit and evaluation for a learner, the release on the
//! column for a release), after the trial's shared work (`runner::Group`: split, class counts,
//! majority baseline), which is not timed, and with a fresh scheduler workspace, so each is a
//! cold cell. The time is CPU time (the process's and its children's: an external kind's
//! program counts), so the time slices of a shared machine's other processes do not count. The median of the trials at
//! each n is printed with the least-squares slope of ln(time) on ln(n), and a slope above 1.15
//! is flagged as super-linear (with the slope of time / log2 n beside it, to tell n log n apart);
//! kinds that record `solver_iterations` also print its median.
//!
//! `cargo bench --bench scale` runs all (about 3 minutes of one core);
//! `cargo bench --bench scale -- NAME...` only the kinds so named (or, for a NAME no kind has,
//! the kinds whose name contains it); `EPSILAB_SCALE_MAX_LOG2=20` adds n = 2^20.

#[path = "common/scale_cases.rs"]
mod scale_cases;

use epsilab::data::{DataDir, Dataset};
use epsilab::kinds::Registry;
use epsilab::pipeline::run_cell;
use epsilab::plan::{Plan, plan};
use epsilab::runner::Group;
use epsilab::schedule;
use epsilab::spec::Spec;
use epsilab::store::TrialRecord;
use rand::Rng;
use scale_cases::{CASES, Case, Data, LARGEST, Run, Setup, check_coverage};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// The training-set sizes, a factor 4 apart: 2^12 to 2^18, or to 2^`EPSILAB_SCALE_MAX_LOG2`
/// (e.g. 20, to see whether a slope stays past the sizes whose data fit in a core's cache;
/// each case's `largest` still caps it).
fn ns() -> &'static [usize] {
    static NS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    NS.get_or_init(|| {
        let max = match std::env::var("EPSILAB_SCALE_MAX_LOG2") {
            Ok(v) => v
                .parse::<u32>()
                .ok()
                .filter(|m| (14..=26).contains(m))
                .unwrap_or_else(|| {
                    eprintln!("scale bench: EPSILAB_SCALE_MAX_LOG2 = {v:?}: give 14 to 26");
                    std::process::exit(2)
                }),
            Err(_) => LARGEST.ilog2(),
        };
        (12..=max).step_by(2).map(|k| 1 << k).collect()
    })
}

/// Trials per (kind, n): the median's time is printed.
const TRIALS: u32 = 3;
/// Slopes above this are flagged: a sort's n log n over these sizes stays near 1.1.
const SUPER_LINEAR: f64 = 1.15;

fn main() {
    if let Err(e) = check_coverage(&Registry::builtin()) {
        eprintln!("scale bench: {e}");
        std::process::exit(2);
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let dir = tempfile::tempdir().expect("temporary folder");
    let start = Instant::now();
    println!("{}", header());
    let (mut flagged, mut failed) = (Vec::new(), Vec::new());
    let chosen = CASES
        .iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| chosen_by(c.kind, f)));
    for case in chosen {
        let row = match case.run {
            Run::Not(reason) => Row::not_run(case, reason),
            Run::On(_) => time_case(case, dir.path()),
        };
        println!("{}", row.markdown());
        match (&row.error, row.slope) {
            (Some(_), _) => failed.push(row.label.clone()),
            (None, Some(s)) if s > SUPER_LINEAR => flagged.push(row.label.clone()),
            _ => {}
        }
    }
    println!(
        "\n{} s in all; load average before the end: {}",
        start.elapsed().as_secs(),
        load_average()
    );
    println!(
        "super-linear (slope > {SUPER_LINEAR}): {}",
        listed(&flagged)
    );
    if !failed.is_empty() {
        println!("FAILED: {}", failed.join(", "));
        std::process::exit(1);
    }
}

/// Whether the command-line filter `f` chooses `kind`: the kind of that name, or where none is
/// so named, every kind whose name contains it.
fn chosen_by(kind: &str, f: &str) -> bool {
    if CASES.iter().any(|c| c.kind == f) {
        kind == f
    } else {
        kind.contains(f)
    }
}

fn header() -> String {
    let cols: Vec<String> = ns()
        .iter()
        .map(|n| format!("ms at n = 2^{}", n.ilog2()))
        .collect();
    let dashes = "|---".repeat(ns().len() + 4);
    format!(
        "| kind | data | {} | slope | |\n{dashes}|",
        cols.join(" | ")
    )
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The first field of /proc/loadavg (the 1-minute load), where there is one.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// One printed line: a kind's median times, their slope, or why it has none.
struct Row {
    label: String,
    data: &'static str,
    seconds: Vec<Option<f64>>,
    /// The median `solver_iterations` at each n, for kinds that record it.
    iterations: Vec<Option<f64>>,
    slope: Option<f64>,
    /// Why the case did not run, or the largest n it stopped at.
    note: Option<String>,
    /// How it failed.
    error: Option<String>,
}

impl Row {
    fn not_run(case: &Case, reason: &str) -> Row {
        Row {
            label: label(case),
            data: "-",
            seconds: vec![None; ns().len()],
            iterations: vec![None; ns().len()],
            slope: None,
            note: Some(format!("not run: {reason}")),
            error: None,
        }
    }

    fn markdown(&self) -> String {
        let mut s = format!("| {} | {} |", self.label, self.data);
        for t in &self.seconds {
            match t {
                Some(t) => write!(s, " {:.3} |", t * 1e3),
                None => write!(s, " - |"),
            }
            .expect("string");
        }
        let mut notes: Vec<String> = Vec::new();
        match self.slope {
            Some(k) if k > SUPER_LINEAR => {
                write!(s, " **{k:.2}** |").expect("string");
                notes.push("super-linear".into());
                if let Some(k) = slope_per_log(&self.seconds) {
                    notes.push(format!("slope of time / log2 n: {k:.2}"));
                }
            }
            Some(k) => write!(s, " {k:.2} |").expect("string"),
            None => write!(s, " - |").expect("string"),
        }
        if self.iterations.iter().any(Option::is_some) {
            let its: Vec<String> = self
                .iterations
                .iter()
                .map(|i| i.map_or("-".into(), |i| format!("{i}")))
                .collect();
            notes.push(format!("solver iterations {}", its.join(", ")));
        }
        notes.extend([&self.note, &self.error].into_iter().flatten().cloned());
        write!(s, " {}", notes.join("; ")).expect("string");
        s.push_str(" |");
        s
    }
}

/// The kind's name, with its first field when the kind has several cases (one per query).
fn label(case: &Case) -> String {
    let same = |c: &&Case| c.family == case.family && c.kind == case.kind;
    let Run::On(setup) = case.run else {
        return case.kind.to_string();
    };
    match setup.fields.lines().next() {
        Some(first) if CASES.iter().filter(same).count() > 1 => {
            format!("{} ({})", case.kind, first.replace('"', ""))
        }
        _ => case.kind.to_string(),
    }
}

/// Times `case` at every n up to its largest; the first failure ends it, as the row's error.
fn time_case(case: &Case, dir: &Path) -> Row {
    let Run::On(Setup { data, largest, .. }) = case.run else {
        unreachable!("only runnable cases are timed")
    };
    let mut row = Row {
        label: label(case),
        data: data.describe(),
        seconds: vec![None; ns().len()],
        iterations: vec![None; ns().len()],
        slope: None,
        note: None,
        error: None,
    };
    for (i, &n) in ns().iter().enumerate().filter(|(_, n)| **n <= largest) {
        match median_seconds(case, n, dir) {
            Ok(t) => {
                row.seconds[i] = Some(t.seconds);
                row.iterations[i] = t.iterations;
            }
            Err(e) => {
                row.error = Some(format!("FAILED at n = {n}: {e}"));
                return row;
            }
        }
    }
    row.slope = slope(&row.seconds);
    if ns().iter().any(|&n| n > largest) {
        row.note = Some(format!("timed up to n = 2^{} only", largest.ilog2()));
    }
    row
}

/// The median CPU seconds of the case's trials at n (each a cold cell: see [`cell_seconds`]),
/// and the median of the `solver_iterations` its records report, if they do.
fn median_seconds(case: &Case, n: usize, dir: &Path) -> Result<Timing, String> {
    let Run::On(Setup {
        data,
        fields,
        replace_one,
        ..
    }) = case.run
    else {
        unreachable!("only runnable cases are timed")
    };
    write_data(data, n, dir)?;
    let text = spec_text(case, data, fields, replace_one, n);
    let spec = Spec::parse(&text, &dir.join("scale.toml")).map_err(|e| e.to_string())?;
    let dataset = spec
        .catalog
        .load("d", &DataDir::shipped())
        .map_err(|e| e.to_string())?;
    let plan = plan(&spec, false);
    let mut times = Vec::new();
    let mut iterations = Vec::new();
    for trial in 0..TRIALS {
        let (t, record) = cell_seconds(&spec, &plan, &dataset, trial)?;
        times.push(t);
        iterations.extend(record.metrics.get("solver_iterations"));
    }
    Ok(Timing {
        seconds: median(&mut times),
        iterations: (!iterations.is_empty()).then(|| median(&mut iterations)),
    })
}

struct Timing {
    seconds: f64,
    iterations: Option<f64>,
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// CPU seconds of one trial's cell, run as the runner runs it (`pipeline::run_cell`) after the
/// trial's shared work (`runner::Group`: split, class counts, majority baseline), which is not
/// timed. Each cell gets a fresh workspace from the spec's scheduler, so nothing a previous
/// trial computed (LR's memo of scaled rows and exact fits) is reused: the time of a cold cell.
fn cell_seconds(
    spec: &Spec,
    plan: &Plan,
    data: &Dataset,
    trial: u32,
) -> Result<(f64, TrialRecord), String> {
    let group = Group::new(spec, plan, 0, data, trial).map_err(|e| e.to_string())?;
    let workspace = schedule::of(spec).workspace(None);
    let cell = plan.combos[0].cell(trial);
    let td = group.data(data, &*workspace);
    let start = cpu_seconds();
    let record = run_cell(spec, &cell, &td).map_err(|e| e.to_string())?;
    Ok((cpu_seconds() - start, record))
}

/// CPU seconds of this process and of its waited-for children (an external kind's program):
/// a busy neighbour's time slices do not count, as in the speed gate (`speed.rs`).
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and the clock id a libc constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "the process CPU clock");
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage and RUSAGE_CHILDREN a libc constant.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0, "getrusage");
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9 + tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// A one-pipeline spec of the case on its data at n, one ε (1).
fn spec_text(case: &Case, data: Data, fields: &str, replace_one: bool, n: usize) -> String {
    let neighbours = if replace_one {
        "neighbours = \"replace_one\"\n"
    } else {
        ""
    };
    format!(
        "[experiment]\nname = \"scale\"\ntrials = {TRIALS}\nseed = 52\ndatasets = [\"d\"]\n\
         {neighbours}\n[dataset.d]\n{}\n\n[grid]\nepsilon = [1]\n\n[[pipeline]]\nname = \"p\"\n\
         {} = \"{}\"\n{fields}\n\n[report]\nx = \"epsilon\"\n",
        dataset(data, n),
        case.family.key(),
        case.kind
    )
}

/// The `[dataset.d]` table of `data` at n training rows.
fn dataset(data: Data, n: usize) -> String {
    let test = n / 4;
    match data {
        Data::Binary => format!(
            "source = \"nb_sampled\"\ndimension = 20\ntheta = [0.8, 0.5]\ntrain = {n}\ntest = {test}"
        ),
        Data::Ball => {
            format!("source = \"logistic_ball\"\ndimension = 10\ntrain = {n}\ntest = {test}")
        }
        Data::TwoClasses => format!(
            "source = \"gaussian_mixture\"\ndimension = 10\nclusters = 2\ntrain = {n}\ntest = {test}\nseed = 1"
        ),
        Data::Mixture => format!(
            "source = \"gaussian_mixture\"\ndimension = 8\nclusters = 4\ntrain = {n}\ntest = {test}\nseed = 1"
        ),
        Data::Regression => format!(
            "source = \"csv\"\ntrain = \"regression-{n}.csv\"\ntrain_fraction = 0.8\nheader = false\n\
             label = 1\ntarget_bounds = [-1, 1]\nfeatures = [2, 3, 4, 5]\nbounds = [-1, 1]"
        ),
        Data::Column => format!("source = \"uniform\"\nn = {n}"),
        Data::Bits => format!("source = \"csv_column\"\nfile = \"bits-{n}.csv\"\ncolumn = 2"),
    }
}

/// Writes the files `data` reads at n into `dir`, once.
fn write_data(data: Data, n: usize, dir: &Path) -> Result<(), String> {
    let (path, text) = match data {
        Data::Regression => (dir.join(format!("regression-{n}.csv")), regression(n)),
        Data::Bits => (dir.join(format!("bits-{n}.csv")), bits(n)),
        _ => return Ok(()),
    };
    if path.exists() {
        return Ok(());
    }
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// 5n/4 rows `y,x1,x2,x3,x4` (80% of them train: n): x ~ U(-1, 1)^4, y = w·x / 2 + noise,
/// inside the target bounds [-1, 1].
fn regression(n: usize) -> String {
    let mut rng = epsilab::rng::rng_from(&["bench", "scale", "regression"]);
    let w = [0.5, -0.3, 0.2, 0.1];
    let mut s = String::new();
    for _ in 0..n * 5 / 4 {
        let x: Vec<f64> = (0..4).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let y = x.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() / 2.0 + rng.gen_range(-0.1..0.1);
        let xs: Vec<String> = x.iter().map(|v| format!("{v:.6}")).collect();
        writeln!(s, "{y:.6},{}", xs.join(",")).expect("string");
    }
    s
}

/// n rows `0,b` with b a fair seeded bit (the first column is the reader's unused label).
fn bits(n: usize) -> String {
    let mut rng = epsilab::rng::rng_from(&["bench", "scale", "bits"]);
    let mut s = String::with_capacity(4 * n);
    for _ in 0..n {
        writeln!(s, "0,{}", u8::from(rng.r#gen::<bool>())).expect("string");
    }
    s
}

/// Least-squares slope of log(time) on log(n) over the sizes timed (the report's own fit,
/// `report::figure::loglog_slope`); `None` below two.
fn slope(seconds: &[Option<f64>]) -> Option<f64> {
    let pts: Vec<(f64, f64, f64)> = ns()
        .iter()
        .zip(seconds)
        .filter_map(|(&n, t)| t.map(|t| (n as f64, t.log10(), 0.0)))
        .collect();
    epsilab::report::figure::loglog_slope(&pts)
}

/// [`slope`] of time / log2(n): about 1 where the cost is n log n (a sort), so a flagged slope
/// that this brings to 1 is read as n log n rather than a cost that grows faster.
fn slope_per_log(seconds: &[Option<f64>]) -> Option<f64> {
    let per_log: Vec<Option<f64>> = ns()
        .iter()
        .zip(seconds)
        .map(|(&n, t)| t.map(|t| t / (n as f64).log2()))
        .collect();
    slope(&per_log)
}
