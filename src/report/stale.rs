//! `epsilab report --all --check`: the verdict gate.
//!
//! Rebuilds REPORT.md and every experiment's `table.md` (which REPORT.md shows) from the
//! committed trials, in a temporary folder, and compares them with the committed files line by
//! line. (The full-precision CSV and pgfplots data are rebuilt too but not compared: their last
//! digits follow the summation order of the code, which is not a result.) It fails when any differs — the committed report is stale, or the code now reads the
//! same trials differently — and names each differing line with the experiment section it is
//! in; a differing line that holds a verdict (`reproduced`, `differs`, `holds`, `fails`) is
//! reported as a flipped verdict. Figures are not redrawn: their files are stood in for by
//! empty ones, so the report lists the same figures, and the committed images are untouched.

use crate::data::DataDir;
use crate::error::{Error, Result};
use crate::spec::{Format, Spec};
use std::path::{Path, PathBuf};

/// Differing lines named per file before the rest are only counted.
const LINES_SHOWN: usize = 12;
/// Words that make a line a verdict line.
const VERDICT_WORDS: [&str; 6] = [
    "reproduced",
    "differs",
    "differ",
    "holds",
    "fails",
    "all reproduced",
];
/// Outputs drawn, not written as text: stood in for by empty files.
const DRAWN: [&str; 4] = [".png", ".svg", ".pdf", ".html"];

/// Rebuilds the report of `out` (the committed results of the specs in `experiments`) in a
/// temporary folder; one message per differing file or line, and one per experiment whose
/// stored results are not of its spec, data (in `data_dir`) or program as they are (what `run`
/// would refuse: a spec edited without a rerun).
pub fn check(experiments: &Path, out: &Path, data_dir: &DataDir) -> Result<Vec<String>> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let copy = tmp.path().join("results");
    std::fs::create_dir_all(&copy).map_err(|e| Error::io(&copy, e))?;
    let changes = out.join(super::reproduction::CHANGES_FILE);
    if changes.exists() {
        copy_file(&changes, &copy.join(super::reproduction::CHANGES_FILE))?;
    }
    let mut compared: Vec<PathBuf> = vec![PathBuf::from("REPORT.md")];
    let mut failures = Vec::new();
    let specs = super::reproduction::spec_files(experiments)?
        .into_iter()
        .map(|p| Ok((Spec::load(&p)?, p)))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<&str> = specs
        .iter()
        .map(|(s, _)| s.experiment.name.as_str())
        .collect();
    let strangers = reported_without_spec(out, &names);
    if !strangers.is_empty() {
        // REPORT.md of other specs than these: a line diff would only be noise.
        compared.clear();
        failures.push(format!(
            "REPORT.md not compared: {}/REPORT.md reports {} with no spec in {} ({}{}); \
             --out must be the results of the specs in --experiments",
            out.display(),
            match strangers.len() {
                1 => "an experiment".to_string(),
                n => format!("{n} experiments"),
            },
            experiments.display(),
            strangers[..strangers.len().min(3)].join(", "),
            if strangers.len() > 3 { ", ..." } else { "" }
        ));
    }
    for (spec, p) in &specs {
        let name = &spec.experiment.name;
        let dir = out.join(name);
        if crate::store::record_files(&dir)?.is_empty() {
            continue;
        }
        if let Some(reason) = crate::runner::standing(spec, data_dir, &dir, false)?.stale {
            failures.push(format!(
                "{name}: the committed results are not of {} as it is: {reason}",
                p.display()
            ));
        }
        let into = copy.join(name);
        stand_in(&dir, &into)?;
        let formats: Vec<Format> = super::formats_of(spec)
            .into_iter()
            .filter(|f| matches!(f, Format::Pgf | Format::Tex))
            .collect();
        super::write_formats(spec, &into, &formats, Some(p))?;
        compared.push(Path::new(name).join("table.md"));
    }
    super::reproduction::write_all(experiments, &copy)?;
    for rel in compared {
        failures.extend(differences(&out.join(&rel), &copy.join(&rel), &rel));
    }
    Ok(failures)
}

/// The experiments the committed REPORT.md of `out` has a section for (by its anchor) that
/// none of `names` is, sorted: a report of other specs than these.
fn reported_without_spec(out: &Path, names: &[&str]) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(out.join("REPORT.md")) else {
        return Vec::new();
    };
    let anchors: Vec<String> = names.iter().map(|n| super::summary::anchor(n)).collect();
    let mut strangers: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("<a id=\"")?.strip_suffix("\"></a>"))
        .filter(|id| !anchors.iter().any(|a| a == id))
        .map(str::to_string)
        .collect();
    strangers.sort();
    strangers
}

fn copy_file(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).map_err(|e| Error::io(from, e))?;
    Ok(())
}

/// A results folder's copy: its text files, and an empty file for each drawn one.
fn stand_in(dir: &Path, into: &Path) -> Result<()> {
    std::fs::create_dir_all(into).map_err(|e| Error::io(into, e))?;
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let e = e.map_err(|err| Error::io(dir, err))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !e.path().is_file() {
            continue;
        }
        if DRAWN.iter().any(|x| name.ends_with(x)) {
            std::fs::write(into.join(&name), b"").map_err(|err| Error::io(into, err))?;
        } else {
            copy_file(&e.path(), &into.join(&name))?;
        }
    }
    Ok(())
}

/// The section a line of REPORT.md is in: the nearest `## ` heading above it.
fn section_of(lines: &[&str], at: usize) -> String {
    lines[..at.min(lines.len())]
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("## "))
        .unwrap_or("(top)")
        .to_string()
}

fn is_verdict(line: &str) -> bool {
    let lower = line.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| VERDICT_WORDS.contains(&w))
}

/// Messages naming the lines where the committed file and the rebuilt one differ.
pub fn differences(committed: &Path, rebuilt: &Path, rel: &Path) -> Vec<String> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let (Some(a), Some(b)) = (read(committed), read(rebuilt)) else {
        return vec![format!(
            "{}: committed or rebuilt file missing (rebuild with `epsilab report --all`)",
            rel.display()
        )];
    };
    if a == b {
        return Vec::new();
    }
    let (old, new): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let mut msgs = Vec::new();
    let n = old.len().max(new.len());
    let differing: Vec<usize> = (0..n).filter(|&i| old.get(i) != new.get(i)).collect();
    for &i in differing.iter().take(LINES_SHOWN) {
        let (o, w) = (
            old.get(i).copied().unwrap_or(""),
            new.get(i).copied().unwrap_or(""),
        );
        let kind = if is_verdict(o) || is_verdict(w) {
            "verdict flipped or changed"
        } else {
            "differs"
        };
        let section = if rel.ends_with("REPORT.md") {
            format!(" (section {})", section_of(&new, i))
        } else {
            String::new()
        };
        msgs.push(format!(
            "{}:{}{section}: {kind}: committed `{}`, rebuilt `{}`",
            rel.display(),
            i + 1,
            o.trim(),
            w.trim()
        ));
    }
    if differing.len() > LINES_SHOWN {
        msgs.push(format!(
            "{}: and {} more differing lines (rebuild with `epsilab report --all`)",
            rel.display(),
            differing.len() - LINES_SHOWN
        ));
    }
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flipped_verdict_is_named_with_its_section() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::write(
            &a,
            "# R\n## Figure 3.6\n| ε = 1 | 80.1 | reproduced |\nsame\n",
        )
        .unwrap();
        std::fs::write(&b, "# R\n## Figure 3.6\n| ε = 1 | 71.0 | differs |\nsame\n").unwrap();
        let d = differences(&a, &b, Path::new("REPORT.md"));
        assert_eq!(d.len(), 1);
        assert!(
            d[0].starts_with("REPORT.md:3 (section Figure 3.6): verdict flipped"),
            "{}",
            d[0]
        );
        assert!(differences(&a, &a, Path::new("REPORT.md")).is_empty());
    }
}
