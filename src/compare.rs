//! `epsilab compare OLD NEW`: did a change move any cell's results, beyond chance?
//!
//! Two runs of one spec draw the same noise in the same trial (every cell's seed derives from
//! the spec seed, dataset, pipeline, grid point and trial, never from the code), so their
//! trials pair: trial `t` of a cell in OLD against trial `t` of the same cell in NEW. The paired
//! differences cancel the noise both runs share, which is why a one-point drop of a private
//! cell shows with 20 trials where two independent samples would need hundreds.
//!
//! Per cell (spec, dataset, pipeline, grid point) and metric: a two-sided paired t-test and a
//! two-sided Wilcoxon signed-rank test (exact below 30 non-zero differences without ties, else
//! the normal approximation with tie and continuity corrections) on the differences NEW − OLD.
//! Both p-values are Holm-corrected over all cells compared, and a cell is **flagged** when
//! both corrected p-values are below α (default 0.05): the family-wise chance of flagging any
//! cell when nothing changed is at most α. Each cell also states its minimal detectable
//! difference: the true mean difference the paired t-test finds with 80% power at level α/m
//! (m cells: Holm's first, strictest step), (t₁₋α/2m,n−1 + t₀.₈,n−1) · sd / √n.
//!
//! Identical code gives identical trials, differences of exactly 0 and p = 1: nothing is
//! flagged. Outputs: a terminal summary, Markdown sized for a pull-request comment, JSON and
//! JUnit XML (one test case per cell, failed when flagged).

use crate::error::{Error, Result};
use crate::store::{TrialRecord, read_dir_records};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Power at which the minimal detectable difference is stated.
pub const POWER: f64 = 0.8;
/// Non-zero differences up to which the Wilcoxon test is exact (when they have no ties).
const EXACT_UP_TO: usize = 30;
/// Cells listed in the Markdown beside the flagged ones (largest |t| first).
const MARKDOWN_CELLS: usize = 25;

/// The most flagged cells the Markdown lists (all are in the JSON and JUnit outputs), so a
/// pull-request comment stays under GitHub's 65,536 characters.
const MARKDOWN_FLAGGED: usize = 100;

/// How to compare.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// Per-trial quantities to compare (`test_accuracy`, a named metric, ...).
    pub metrics: Vec<String>,
    /// Family-wise level.
    pub alpha: f64,
    /// Only these experiments (all when empty).
    pub only: Vec<String>,
}

/// One compared cell and metric.
#[derive(Debug, Clone, Serialize)]
pub struct CellComparison {
    pub experiment: String,
    /// `dataset|pipeline|grid point|`, as in the record keys.
    pub cell: String,
    pub metric: String,
    /// Paired trials.
    pub n: usize,
    pub mean_old: f64,
    pub mean_new: f64,
    /// Mean of NEW − OLD.
    pub mean_diff: f64,
    pub sd_diff: f64,
    pub p_t: f64,
    pub p_wilcoxon: f64,
    pub p_t_holm: f64,
    pub p_wilcoxon_holm: f64,
    /// Smallest true mean difference detected with [`POWER`] (null where n < 2, or where no
    /// difference can flag the cell: [`flaggable`](Self::flaggable)).
    pub min_detectable: Option<f64>,
    /// Whether any difference could flag the cell: the Wilcoxon test's smallest p with n
    /// pairs (every difference of one sign), Holm-corrected over the m cells, is below α. With
    /// few trials or many cells it is not (n = 5 pairs: p ≥ 0.0625).
    pub flaggable: bool,
    pub flagged: bool,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub alpha: f64,
    pub cells: Vec<CellComparison>,
    /// Cells or trials found in only one of the two folders.
    pub unpaired: Vec<String>,
}

impl Comparison {
    pub fn flagged(&self) -> impl Iterator<Item = &CellComparison> {
        self.cells.iter().filter(|c| c.flagged)
    }
}

/// Every experiment's records under a results folder, by folder name (smoke folders and
/// folders without records left out).
pub fn load_results(root: &Path) -> Result<BTreeMap<String, Vec<TrialRecord>>> {
    let entries = std::fs::read_dir(root).map_err(|e| Error::io(root, e))?;
    let mut out = BTreeMap::new();
    for e in entries {
        let e = e.map_err(|err| Error::io(root, err))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !e.path().is_dir() || name.ends_with(".smoke") || name == crate::speed::HISTORY_DIR {
            continue;
        }
        let records = read_dir_records(&e.path())?;
        if !records.is_empty() {
            out.insert(name, records);
        }
    }
    Ok(out)
}

type Values = BTreeMap<(String, String), BTreeMap<u32, f64>>;

/// (cell, metric) -> trial -> value.
fn values(records: &[TrialRecord], metrics: &[String]) -> Values {
    let mut out: Values = BTreeMap::new();
    for r in records {
        let cell = r.key.rsplit_once('|').map_or("", |(c, _)| c).to_string() + "|";
        for m in metrics {
            if let Some(v) = r.metric(m).filter(|v| v.is_finite()) {
                out.entry((cell.clone(), m.clone()))
                    .or_default()
                    .insert(r.trial, v);
            }
        }
    }
    out
}

/// Refuses options that would compare nothing or break the tests: a level outside (0, 1) (NaN
/// failed an assertion inside the t distribution; 0 flags nothing, 1 or more flags every
/// cell), or a metric that no compared record of either folder holds (a misspelt name paired
/// no cell and passed).
pub fn check_options(
    old: &BTreeMap<String, Vec<TrialRecord>>,
    new: &BTreeMap<String, Vec<TrialRecord>>,
    opts: &CompareOptions,
) -> Result<()> {
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(Error::param(
            "--alpha",
            format!(
                "the family-wise level must be in (0, 1), got {}",
                opts.alpha
            ),
        ));
    }
    let chosen = |n: &String| opts.only.is_empty() || opts.only.contains(n);
    let records = (old.iter().chain(new))
        .filter(|(n, _)| chosen(n))
        .flat_map(|(_, r)| r);
    if let Some(m) = opts
        .metrics
        .iter()
        .find(|m| !records.clone().any(|r| r.metric(m).is_some()))
    {
        return Err(Error::param(
            "--metric",
            format!("no compared trial of either folder records `{m}`"),
        ));
    }
    Ok(())
}

/// Compares two results folders' records (already loaded).
pub fn compare(
    old: &BTreeMap<String, Vec<TrialRecord>>,
    new: &BTreeMap<String, Vec<TrialRecord>>,
    opts: &CompareOptions,
) -> Comparison {
    let mut cells = Vec::new();
    let mut unpaired = Vec::new();
    let chosen = |n: &String| opts.only.is_empty() || opts.only.contains(n);
    for (name, old_records) in old.iter().filter(|(n, _)| chosen(n)) {
        let Some(new_records) = new.get(name) else {
            unpaired.push(format!("{name}: only in OLD"));
            continue;
        };
        let (a, b) = (
            values(old_records, &opts.metrics),
            values(new_records, &opts.metrics),
        );
        for ((cell, metric), olds) in &a {
            let Some(news) = b.get(&(cell.clone(), metric.clone())) else {
                unpaired.push(format!("{name}: `{cell}` {metric}: only in OLD"));
                continue;
            };
            let pairs: Vec<(f64, f64)> = (olds.iter())
                .filter_map(|(t, o)| news.get(t).map(|n| (*o, *n)))
                .collect();
            if pairs.len() < olds.len().max(news.len()) {
                unpaired.push(format!(
                    "{name}: `{cell}` {metric}: {} trials in OLD, {} in NEW, {} paired",
                    olds.len(),
                    news.len(),
                    pairs.len()
                ));
            }
            cells.push(cell_comparison(name, cell, metric, &pairs));
        }
        for (cell, metric) in b.keys().filter(|k| !a.contains_key(*k)) {
            unpaired.push(format!("{name}: `{cell}` {metric}: only in NEW"));
        }
    }
    unpaired.extend(
        (new.keys().filter(|n| chosen(n) && !old.contains_key(*n)))
            .map(|n| format!("{n}: only in NEW")),
    );
    correct(&mut cells, opts.alpha);
    Comparison {
        alpha: opts.alpha,
        cells,
        unpaired,
    }
}

fn cell_comparison(name: &str, cell: &str, metric: &str, pairs: &[(f64, f64)]) -> CellComparison {
    let n = pairs.len();
    let mean = |f: &dyn Fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / n.max(1) as f64;
    let d: Vec<f64> = pairs.iter().map(|(o, n)| n - o).collect();
    let (mean_diff, sd_diff) = mean_sd(&d);
    CellComparison {
        experiment: name.into(),
        cell: cell.into(),
        metric: metric.into(),
        n,
        mean_old: mean(&|p| p.0),
        mean_new: mean(&|p| p.1),
        mean_diff,
        sd_diff,
        p_t: paired_t(&d),
        p_wilcoxon: wilcoxon(&d),
        p_t_holm: 1.0,
        p_wilcoxon_holm: 1.0,
        min_detectable: None,
        flaggable: false,
        flagged: false,
    }
}

/// Holm-corrects both p-values over the cells, flags, and states each minimal detectable
/// difference at level α/m.
fn correct(cells: &mut [CellComparison], alpha: f64) {
    let pt: Vec<f64> = cells.iter().map(|c| c.p_t).collect();
    let pw: Vec<f64> = cells.iter().map(|c| c.p_wilcoxon).collect();
    let (ht, hw) = (holm(&pt), holm(&pw));
    let m = cells.len().max(1);
    for (i, c) in cells.iter_mut().enumerate() {
        c.p_t_holm = ht[i];
        c.p_wilcoxon_holm = hw[i];
        c.flagged = ht[i] < alpha && hw[i] < alpha;
        c.flaggable = m as f64 * wilcoxon_floor(c.n) < alpha;
        c.min_detectable = min_detectable(c.sd_diff, c.n, alpha / m as f64).filter(|_| c.flaggable);
    }
}

/// Mean and sample standard deviation (0 for fewer than two values).
pub fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    if x.is_empty() {
        return (0.0, 0.0);
    }
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() < 2 {
        0.0
    } else {
        x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    };
    (mean, var.sqrt())
}

/// Two-sided p-value of the paired t-test on differences `d` (1 for fewer than two; 0 when
/// every difference is the same non-zero value).
pub fn paired_t(d: &[f64]) -> f64 {
    let (mean, sd) = mean_sd(d);
    if d.len() < 2 || mean == 0.0 {
        return 1.0;
    }
    if sd == 0.0 {
        return 0.0;
    }
    let t = mean / (sd / (d.len() as f64).sqrt());
    let dist = StudentsT::new(0.0, 1.0, (d.len() - 1) as f64).expect("df >= 1");
    (2.0 * dist.cdf(-t.abs())).min(1.0)
}

/// Two-sided p-value of the Wilcoxon signed-rank test on differences `d`; zero differences
/// are dropped (Wilcoxon's convention), ties get their average rank.
pub fn wilcoxon(d: &[f64]) -> f64 {
    let mut nz: Vec<f64> = d.iter().copied().filter(|v| *v != 0.0).collect();
    let n = nz.len();
    if n == 0 {
        return 1.0;
    }
    nz.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let mut ranks = vec![0.0; n];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < n {
        let j = (i..n).take_while(|&j| nz[j].abs() == nz[i].abs()).count() + i;
        let avg = (i + 1 + j) as f64 / 2.0;
        ranks[i..j].iter_mut().for_each(|r| *r = avg);
        if j - i > 1 {
            ties.push((j - i) as f64);
        }
        i = j;
    }
    let w_plus: f64 = (0..n).filter(|&k| nz[k] > 0.0).map(|k| ranks[k]).sum();
    if ties.is_empty() && n <= EXACT_UP_TO {
        return wilcoxon_exact(w_plus as usize, n);
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0
        - ties.iter().map(|t| t * t * t - t).sum::<f64>() / 48.0;
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((w_plus - mean).abs() - 0.5).max(0.0) / var.sqrt();
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    (2.0 * normal.cdf(-z)).min(1.0)
}

/// Exact two-sided p-value of W+ = `w` over `n` untied ranks: the number of sign patterns
/// whose rank sum is at least as extreme, over 2^n.
fn wilcoxon_exact(w: usize, n: usize) -> f64 {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for r in 1..=n {
        for s in (r..=max).rev() {
            counts[s] += counts[s - r];
        }
    }
    let total = 2f64.powi(n as i32);
    let low = w.min(max - w);
    let tail: f64 = counts[..=low].iter().sum();
    (2.0 * tail / total).min(1.0)
}

/// Holm's step-down adjusted p-values (monotone, capped at 1), in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![1.0; m];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// The smallest p the Wilcoxon test gives `n` pairs: every difference of one sign, of
/// distinct sizes.
pub fn wilcoxon_floor(n: usize) -> f64 {
    let one_sign: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    wilcoxon(&one_sign)
}

/// The minimal detectable difference of a paired t-test with `n` pairs and difference sd
/// `sd`, two-sided at `level`, power [`POWER`]; `None` for fewer than two pairs.
pub fn min_detectable(sd: f64, n: usize, level: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("df >= 1");
    let q = dist.inverse_cdf(1.0 - level / 2.0) + dist.inverse_cdf(POWER);
    Some(q * sd / (n as f64).sqrt())
}

fn fmt_mdd(c: &CellComparison) -> String {
    match c.min_detectable {
        Some(m) => format!("{m:.4}"),
        None if !c.flaggable => format!("none ({} trials cannot flag it)", c.n),
        None => "n/a".into(),
    }
}

fn md_row(c: &CellComparison) -> String {
    format!(
        "| {} | `{}` | {} | {} | {:.4} | {:.4} | {:+.4} | {:.2e} | {:.2e} | {} | {} |\n",
        c.experiment,
        c.cell.replace('|', "\\|"),
        c.metric,
        c.n,
        c.mean_old,
        c.mean_new,
        c.mean_diff,
        c.p_t_holm,
        c.p_wilcoxon_holm,
        fmt_mdd(c),
        if c.flagged { "**flagged**" } else { "" }
    )
}

const MD_HEAD: &str = "| experiment | cell | metric | n | old | new | Δ (new − old) | p (t, Holm) | p (Wilcoxon, Holm) | min. detectable Δ | |\n|---|---|---|---|---|---|---|---|---|---|---|\n";

/// Markdown for a pull-request comment: a verdict line, every flagged cell, and the
/// [`MARKDOWN_CELLS`] other cells that moved most, in a collapsed block.
pub fn markdown(c: &Comparison) -> String {
    let flagged: Vec<&CellComparison> = c.flagged().collect();
    let mut s = format!(
        "### epsilab compare: {} of {} cells flagged\n\nPaired t-test and Wilcoxon signed-rank test on the per-trial differences (new − old), Holm-corrected over the {} cells; a cell is flagged when both corrected p-values are below α = {}.\n\n",
        flagged.len(),
        c.cells.len(),
        c.cells.len(),
        c.alpha
    );
    if !flagged.is_empty() {
        s.push_str(MD_HEAD);
        let listed = flagged.len().min(MARKDOWN_FLAGGED);
        flagged[..listed]
            .iter()
            .for_each(|f| s.push_str(&md_row(f)));
        if listed < flagged.len() {
            let _ = writeln!(
                s,
                "\n{} more flagged cells are in the JSON and JUnit outputs.",
                flagged.len() - listed
            );
        }
        s.push('\n');
    }
    let unflaggable = c.cells.iter().filter(|x| !x.flaggable).count();
    if unflaggable > 0 {
        let _ = writeln!(
            s,
            "{unflaggable} of the {} cells have too few trials for any difference to flag them \
             (the Wilcoxon test's smallest p, Holm-corrected, is not below α).\n",
            c.cells.len()
        );
    }
    let mut rest: Vec<&CellComparison> = c.cells.iter().filter(|x| !x.flagged).collect();
    rest.sort_by(|a, b| a.p_t.total_cmp(&b.p_t));
    let shown = rest.len().min(MARKDOWN_CELLS);
    if shown > 0 {
        let _ = write!(
            s,
            "<details><summary>{shown} of the {} unflagged cells, smallest p first</summary>\n\n{MD_HEAD}",
            rest.len()
        );
        rest[..shown].iter().for_each(|f| s.push_str(&md_row(f)));
        s.push_str("\n</details>\n");
    }
    if !c.unpaired.is_empty() {
        let _ = writeln!(
            s,
            "\n{} cells or trials were in only one folder (not compared); first: {}",
            c.unpaired.len(),
            c.unpaired[0]
        );
    }
    s
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one test case per cell and metric, failed when flagged.
pub fn junit(c: &Comparison) -> String {
    let failures = c.flagged().count();
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"epsilab compare\" tests=\"{}\" failures=\"{failures}\">\n",
        c.cells.len()
    );
    for x in &c.cells {
        let _ = write!(
            s,
            "<testcase classname=\"{}\" name=\"{} {}\">",
            xml_escape(&x.experiment),
            xml_escape(&x.cell),
            xml_escape(&x.metric)
        );
        if x.flagged {
            let _ = write!(
                s,
                "<failure message=\"moved by {:+.4} (p = {:.2e} t, {:.2e} Wilcoxon, Holm)\"/>",
                x.mean_diff, x.p_t_holm, x.p_wilcoxon_holm
            );
        }
        s.push_str("</testcase>\n");
    }
    s.push_str("</testsuite>\n</testsuites>\n");
    s
}

/// The committed results of git revision `rev` under `results` (a path in the work tree),
/// extracted into `into`; returns the extracted results root.
pub fn extract_revision(rev: &str, results: &Path, into: &Path) -> Result<PathBuf> {
    let git = |args: &[&str]| -> Result<Vec<u8>> {
        let o = std::process::Command::new("git")
            .args(args)
            .output()
            .map_err(|e| Error::io(Path::new("git"), e))?;
        if !o.status.success() {
            return Err(Error::Compare(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        Ok(o.stdout)
    };
    let dir = results.to_string_lossy();
    let list = git(&[
        "ls-tree",
        "-r",
        "--name-only",
        "--full-name",
        rev,
        "--",
        &dir,
    ])?;
    let files = String::from_utf8_lossy(&list).into_owned();
    let root = into.join("results");
    for path in files.lines().filter(|p| is_record_path(p)) {
        let bytes = git(&["show", &format!("{rev}:{path}")])?;
        let Some((parent, file)) = path.rsplit_once('/') else {
            continue;
        };
        let exp = parent.rsplit('/').next().unwrap_or(parent);
        let d = root.join(exp);
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        let p = d.join(file);
        std::fs::write(&p, bytes).map_err(|e| Error::io(&p, e))?;
    }
    Ok(root)
}

fn is_record_path(p: &str) -> bool {
    p.rsplit('/')
        .next()
        .is_some_and(|f| f.starts_with("trials") && f.ends_with(".jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cells shifted by `shift` with jitter, `n` pairs each, compared and corrected.
    fn shifted(cells: usize, n: usize, shift: f64) -> Comparison {
        let mut out: Vec<CellComparison> = (0..cells)
            .map(|c| {
                let pairs: Vec<(f64, f64)> = (0..n)
                    .map(|t| (0.8, 0.8 + shift + 0.001 * ((t * 7 + c) % 5) as f64))
                    .collect();
                cell_comparison("e", &format!("d|p{c}|{{}}|"), "test_accuracy", &pairs)
            })
            .collect();
        correct(&mut out, 0.05);
        Comparison {
            alpha: 0.05,
            cells: out,
            unpaired: Vec::new(),
        }
    }

    /// With 5 trials the Wilcoxon test cannot reach α, so no difference flags a cell: the
    /// cell says so instead of stating a detectable difference, and the Markdown counts it.
    #[test]
    fn a_cell_too_small_to_flag_says_so() {
        assert_eq!(wilcoxon_floor(5), 0.0625);
        let c = shifted(3, 5, -0.2);
        assert!(c.cells.iter().all(|x| !x.flaggable && !x.flagged));
        assert!(c.cells.iter().all(|x| x.min_detectable.is_none()));
        let md = markdown(&c);
        assert!(md.contains("3 of the 3 cells have too few trials"), "{md}");
        assert!(md.contains("none (5 trials cannot flag it)"), "{md}");
        let c = shifted(3, 20, -0.2);
        assert!(c.cells.iter().all(|x| x.flaggable && x.flagged));
        assert!(c.cells.iter().all(|x| x.min_detectable.is_some()));
    }

    /// The Markdown lists at most [`MARKDOWN_FLAGGED`] flagged cells and says how many more.
    #[test]
    fn the_markdown_lists_a_bounded_number_of_flagged_cells() {
        let c = shifted(MARKDOWN_FLAGGED + 30, 20, -0.2);
        assert_eq!(c.flagged().count(), MARKDOWN_FLAGGED + 30);
        let md = markdown(&c);
        assert_eq!(md.matches("**flagged**").count(), MARKDOWN_FLAGGED);
        assert!(md.contains("30 more flagged cells are in the JSON and JUnit outputs"));
        assert!(md.len() < 65_536, "{}", md.len());
    }

    #[test]
    fn holm_is_step_down_and_monotone() {
        let h = holm(&[0.01, 0.04, 0.03, 0.5]);
        assert_eq!(h, [0.04, 0.09, 0.09, 0.5]);
    }

    #[test]
    fn wilcoxon_exact_matches_the_table() {
        // n = 10, all positive: p = 2 / 1024. W+ = 4: 7 of the 1024 sign patterns have a rank
        // sum of at most 4 ({}, 1, 2, 3, 12, 4, 13), so p = 14 / 1024.
        assert!(
            (wilcoxon(&[1., 2., 3., 4., 5., 6., 7., 8., 9., 10.]) - 2.0 / 1024.0).abs() < 1e-12
        );
        let d = [-1., -2., -3., 4., -5., -6., -7., -8., -9., -10.];
        assert!(
            (wilcoxon(&d) - 14.0 / 1024.0).abs() < 1e-12,
            "{}",
            wilcoxon(&d)
        );
        assert_eq!(wilcoxon(&[0.0, 0.0]), 1.0);
    }

    #[test]
    fn t_test_reference_value() {
        // d = 1..5 shifted: mean 1, sd 1.5811, t = 1.4142, df 4: two-sided p = 0.2302 (R).
        let p = paired_t(&[-1.0, 0.0, 1.0, 2.0, 3.0]);
        assert!((p - 0.2302).abs() < 1e-4, "{p}");
        assert_eq!(paired_t(&[0.0; 5]), 1.0);
        assert_eq!(paired_t(&[0.01; 5]), 0.0);
    }

    #[test]
    fn min_detectable_shrinks_with_n() {
        let a = min_detectable(0.02, 10, 0.05).unwrap();
        let b = min_detectable(0.02, 40, 0.05).unwrap();
        assert!(a > b && b > 0.0);
        // n = 20, level 0.05: (t_.975,19 + t_.8,19) * sd / sqrt(20) = (2.093 + 0.861) * sd / 4.472.
        let c = min_detectable(1.0, 20, 0.05).unwrap();
        assert!((c - 2.954 / 20f64.sqrt()).abs() < 2e-3, "{c}");
        assert_eq!(min_detectable(1.0, 1, 0.05), None);
    }
}
