//! One line per peer comparison (`#[path = "common/ratio.rs"] mod ratio;`): printed, and
//! appended to `target/perf/ratios.jsonl`, from which `scripts/perf-table.sh` builds the table
//! of docs/performance.md, so no ratio there is copied by hand.

use std::io::Write;

/// What one comparison measured: the same work timed here and in a peer, in one run.
pub struct Ratio<'a> {
    /// The bench and case, e.g. `naive_bayes/algorithm1_fit`.
    pub case: &'a str,
    /// The peer, e.g. `numpy` or `scikit-learn 1.5 (defaults)`.
    pub peer: &'a str,
    /// What is timed, and how (median of how many runs, wall or CPU).
    pub what: &'a str,
    pub epsilab_s: f64,
    pub peer_s: f64,
    /// The target for peer / epsilab, when it has one (e.g. `>= 3`).
    pub target: Option<&'a str>,
}

impl Ratio<'_> {
    /// Prints the comparison and appends it to `target/perf/ratios.jsonl`.
    pub fn report(&self) {
        let ratio = self.peer_s / self.epsilab_s;
        eprintln!(
            "{}: epsilab {}, {} {}, {} / epsilab = {ratio:.2}{}",
            self.case,
            seconds(self.epsilab_s),
            self.peer,
            seconds(self.peer_s),
            self.peer,
            self.target
                .map_or(String::new(), |t| format!(" (target {t})")),
        );
        let line = serde_json::json!({
            "case": self.case,
            "peer": self.peer,
            "what": self.what,
            "epsilab_s": self.epsilab_s,
            "peer_s": self.peer_s,
            "ratio": ratio,
            "target": self.target,
        });
        let dir = std::path::Path::new("target/perf");
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("ratios.jsonl"))?;
            writeln!(f, "{line}")
        });
        if let Err(e) = written {
            eprintln!("target/perf/ratios.jsonl not written: {e}");
        }
    }
}

/// `s` seconds in the unit that reads best.
fn seconds(s: f64) -> String {
    match s {
        s if s >= 1.0 => format!("{s:.3} s"),
        s if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
        s => format!("{:.2} µs", s * 1e6),
    }
}
