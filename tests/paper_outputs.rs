//! Paper outputs: PDF, pgfplots and wide tables from one report; a dot plot for a single-ε
//! comparison with one legend entry per label; the LaTeX document of every committed table and
//! figure compiled by a real TeX; `results/index.html` loaded in a real headless Chromium.

mod common;

use epsilab::data::DataDir;
use epsilab::report::figure::{Figure, kind_of};
use epsilab::runner::{RunOptions, run};
use epsilab::spec::{FigureKind, Format, Spec};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Table 4.2-shaped spec: one ε, a majority pipeline, a published value per pipeline.
const DOT_SPEC: &str = r#"
[experiment]
name = "dots"
trials = 3
seed = 5
datasets = ["dense"]

[dataset.dense]
source = "nb_sampled"
dimension = 10
theta = [0.8, 0.5]
train = 400
test = 400
seed = 1

[grid]
epsilon = [0.1]

[[pipeline]]
name = "private NB"
learner = "private_nb"

[[pipeline]]
name = "NB"
learner = "nb"

[[pipeline]]
name = "majority baseline"
learner = "majority"

[report]
x = "epsilon"
formats = ["png", "svg", "pdf", "pgf", "tex", "html"]
size = "one-column"
font_pt = 8

[[paper.cell]]
dataset = "dense"
pipeline = "NB"
value = 0.0
tolerance = 0.01

[[paper.cell]]
dataset = "dense"
pipeline = "private NB"
x = 0.1
value = 0.5
tolerance = 0.5
"#;

fn run_spec(text: &str) -> (tempfile::TempDir, Spec, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("spec.toml");
    std::fs::write(&path, text).unwrap();
    let spec = Spec::load(&path).unwrap();
    let opts = RunOptions {
        data_dir: DataDir(tmp.path().into()),
        ..common::run_options(&tmp.path().join("results"), 1)
    };
    let s = run(&spec, &opts).unwrap();
    epsilab::report::write(&spec, &s.results_dir).unwrap();
    (tmp, spec, s.results_dir)
}

#[test]
fn single_epsilon_comparison_is_a_dot_plot_with_published_values_and_a_clean_legend() {
    let (_t, spec, dir) = run_spec(DOT_SPEC);
    assert_eq!(kind_of(&spec), FigureKind::Dot);
    let records = epsilab::store::read_records(&dir.join("trials.jsonl")).unwrap();
    let summaries = epsilab::report::summarise(&spec, &records);
    let base = epsilab::report::baselines(&records);
    let verdicts = epsilab::report::verdict::evaluate(&spec, &records);
    let titles = Default::default();
    let metrics = vec!["test_accuracy".to_string()];
    let fig = Figure::build(&spec, &metrics, &summaries, &base, &titles, Some(&verdicts));
    assert!(fig.dots);
    // One x position per pipeline.
    let xs: Vec<f64> = fig.panels[0].series.iter().map(|s| s.points[0].0).collect();
    assert_eq!(xs, vec![0.0, 1.0, 2.0]);
    // Published values drawn with their verdicts: NB's 0% differs, private NB's 50 ± 50 holds.
    let mut published: Vec<(Option<f64>, &str)> = fig.panels[0]
        .published
        .iter()
        .map(|p| (p.x, p.verdict))
        .collect();
    published.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    assert_eq!(
        published,
        vec![(Some(0.0), "reproduced"), (Some(1.0), "differs")]
    );
    let legend: Vec<String> = fig.legend_entries().into_iter().map(|e| e.0).collect();
    let mut unique = legend.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        legend.len(),
        "duplicated legend entries: {legend:?}"
    );
    assert_eq!(
        legend.iter().filter(|l| l.contains("majority")).count(),
        1,
        "{legend:?}"
    );
    for l in &legend {
        assert!(
            l.ends_with("(private)") || l.ends_with("(non-private)") || l.starts_with("published"),
            "series label does not say whether it is private: {l}"
        );
    }
    // The series are numbered on the x axis and in the legend.
    assert!(legend.contains(&"1: private NB (private)".to_string()));
    assert!(legend.contains(&"2: NB (non-private)".to_string()));
    assert_eq!(
        fig.categories,
        Some(vec!["1".into(), "2".into(), "3".into()])
    );
    assert_eq!(
        fig.note,
        "Points and error bars: mean ± s.e. over 3 trials."
    );
}

#[test]
fn every_format_is_written_and_well_formed() {
    let (_t, _spec, dir) = run_spec(DOT_SPEC);
    let pdf = std::fs::read(dir.join("figure.pdf")).unwrap();
    assert!(pdf.starts_with(b"%PDF-"), "not a PDF");
    let text = String::from_utf8_lossy(&pdf);
    assert!(text.contains("/FontFile2"), "the TTF is not embedded");
    assert!(text.contains("/MediaBox [0 0 252"), "3.5 in = 252 pt wide");
    let tex = std::fs::read_to_string(dir.join("figure.tex")).unwrap();
    assert!(tex.contains("\\begin{groupplot}") && tex.contains("coordinates {"));
    let csv = std::fs::read_to_string(dir.join("figure_data.csv")).unwrap();
    assert!(csv.starts_with("key,x,y,se\n") && csv.lines().count() > 3);
    // The figure draws the CSV's points, inline: the same (x, y) pairs in the same order.
    let mut inline = Vec::new();
    for plot in tex.split("coordinates {").skip(1) {
        let mut tokens = plot.split('}').next().unwrap().split_whitespace();
        while let Some(t) = tokens.next() {
            if t == "+-" {
                tokens.next(); // the error bar (0,se)
            } else {
                inline.push(t.trim_matches(|c| c == '(' || c == ')').to_string());
            }
        }
    }
    let rows: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').skip(1).take(2).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(inline, rows, "{tex}");
    let table = std::fs::read_to_string(dir.join("table.tex")).unwrap();
    for k in ["\\toprule", "S[table-format=", "(0.0)", "\\bfseries"] {
        assert!(table.contains(k), "`{k}` missing:\n{table}");
    }
    let md = std::fs::read_to_string(dir.join("table.md")).unwrap();
    assert!(
        md.contains("| dataset | private NB (private) | NB (non-private) |"),
        "{md}"
    );
    assert!(md.contains("**"), "best private cell not bold:\n{md}");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("http://cdn") && !html.contains("<link"));
}

#[test]
fn format_list_defaults_and_spec_override() {
    let spec = Spec::parse(DOT_SPEC, Path::new("dots.toml")).unwrap();
    assert_eq!(epsilab::report::formats_of(&spec).len(), 6);
    let plain = Spec::parse(
        &DOT_SPEC.replace(
            "formats = [\"png\", \"svg\", \"pdf\", \"pgf\", \"tex\", \"html\"]\n",
            "",
        ),
        Path::new("plain.toml"),
    )
    .unwrap();
    assert_eq!(
        epsilab::report::formats_of(&plain),
        Format::DEFAULT.to_vec()
    );
}

/// The committed results folder beside the crate.
fn results() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results")
}

fn tool(name: &str) -> bool {
    Command::new(name).arg("--version").output().is_ok()
}

/// The committed `table.tex` and pgfplots `figure*.tex` files, each with whether it is set in
/// one column (`%` header of a one-column figure names `\\columnwidth`).
fn committed_latex() -> Vec<(PathBuf, bool)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for d in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let f = p.file_name().unwrap().to_string_lossy();
                (f.starts_with("figure") || f == "table.tex") && f.ends_with(".tex")
            })
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let one_column = text.contains("\\providecommand{\\epsilabwidth}{\\columnwidth}")
                || text.contains("% Blocks planned for 3.4 in");
            out.push((f, one_column));
        }
    }
    out
}

/// Compiles `body` in a document of the given class options with pdflatex; returns the log.
fn pdflatex(dir: &Path, name: &str, options: &str, geometry: &str, body: &str) -> String {
    let doc = format!(
        "\\documentclass[{options}]{{article}}\n\\usepackage[{geometry}]{{geometry}}\n\\usepackage[T1]{{fontenc}}\n\
         \\usepackage{{booktabs,siunitx,graphicx,pgfplots}}\n\\usepgfplotslibrary{{groupplots}}\n\
         \\pgfplotsset{{compat=1.16}}\n\\hbadness=10000\n\\def\\epsilabfloat{{table}}\n\
         \\newenvironment{{epsilabtable}}{{\\begin{{\\epsilabfloat}}[p]}}{{\\end{{\\epsilabfloat}}}}\n\
         \\begin{{document}}\n{body}\\end{{document}}\n"
    );
    std::fs::write(dir.join(format!("{name}.tex")), doc).unwrap();
    let out = Command::new("pdflatex")
        .args(["-interaction=nonstopmode", "-halt-on-error"])
        .arg(format!("{name}.tex"))
        .current_dir(dir)
        .output()
        .unwrap();
    let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
    assert!(
        out.status.success(),
        "pdflatex {name} failed:\n{}",
        log.lines()
            .skip_while(|l| !l.starts_with('!'))
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
    log
}

/// The overfull boxes of a TeX log wider (or higher) than 1 pt, with the line that follows,
/// and every float too large for its page.
fn overfull(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.contains("Float too large for page") {
            out.push(format!("{l} {}", lines.get(i + 1).unwrap_or(&"")));
            continue;
        }
        let Some(rest) = l.strip_prefix("Overfull \\") else {
            continue;
        };
        let pt: f64 = rest
            .split('(')
            .nth(1)
            .and_then(|r| r.split("pt").next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(f64::INFINITY);
        if pt > 1.0 {
            out.push(format!("{l} {}", lines.get(i + 1).unwrap_or(&"")));
        }
    }
    out
}

/// Every committed `table.tex` and pgfplots `figure*.tex` compiled with pdflatex in a one-column
/// document (6.5 in text) and in a two-column one (7 in text, 3.4 in columns: a text-width
/// figure in `figure*`, a table in `table*`, a one-column one in `figure`/`table`): no overfull
/// box over 1 pt in either. The PDFs are rendered to PNG (`EPSILAB_PAPER_PNG` keeps them).
#[test]
#[ignore = "needs texlive (pdflatex, pgfplots, siunitx) and poppler-utils; run by .ci/run"]
fn every_table_and_figure_fits_a_one_and_a_two_column_page() {
    assert!(
        tool("pdflatex") && tool("pdftoppm"),
        "pdflatex/pdftoppm not installed"
    );
    let files = committed_latex();
    assert!(
        files.len() > 40,
        "only {} LaTeX files under results/",
        files.len()
    );
    let mut one = String::new();
    let mut two = String::new();
    for (f, one_column) in &files {
        let table = f.file_name().unwrap() == "table.tex";
        let env = if table { "table" } else { "figure" };
        let star = if *one_column { "" } else { "*" };
        let input = format!("\\input{{{}}}", f.display());
        if table {
            // A table sets each block in its own `epsilabtable` float (defined in the preamble
            // as `\epsilabfloat`, a table or table*).
            one += &format!("\\def\\epsilabfloat{{table}}{input}\n\\clearpage\n");
            two += &format!("\\def\\epsilabfloat{{table{star}}}{input}\n\\clearpage\n");
            continue;
        }
        one += &format!("\\begin{{{env}}}[p]\n{input}\n\\end{{{env}}}\n\\clearpage\n");
        two += &format!("\\begin{{{env}{star}}}[p]\n{input}\n\\end{{{env}{star}}}\n\\clearpage\n");
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let documents = [
        ("one", "letterpaper", "margin=1in", &one),
        (
            "two",
            "letterpaper,twocolumn",
            "margin=0.75in,columnsep=0.2in",
            &two,
        ),
    ];
    // The two documents compile side by side (pdflatex is single-threaded: 5 min of CPU on a
    // 2-core EPYC, 161 s of wall), each in its own files of the temporary folder.
    let logs: Vec<(&str, String)> = std::thread::scope(|s| {
        let runs: Vec<_> = documents
            .iter()
            .map(|&(name, options, geometry, body)| {
                let dir = tmp.path();
                s.spawn(move || (name, pdflatex(dir, name, options, geometry, body)))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (name, log) in logs {
        failures.extend(overfull(&log).into_iter().map(|o| format!("{name}: {o}")));
    }
    let png_dir = std::env::var("EPSILAB_PAPER_PNG")
        .map(PathBuf::from)
        .unwrap_or_else(|_| tmp.path().to_path_buf());
    std::fs::create_dir_all(&png_dir).unwrap();
    for name in ["one", "two"] {
        let st = Command::new("pdftoppm")
            .args(["-r", "50", "-png"])
            .arg(tmp.path().join(format!("{name}.pdf")))
            .arg(png_dir.join(name))
            .status()
            .unwrap();
        assert!(st.success());
    }
    assert!(
        failures.is_empty(),
        "{} overfull boxes over 1 pt:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn overfull_reads_the_width_from_the_log() {
    let log = "Overfull \\hbox (257.3pt too wide) in paragraph at lines 3--9\n[]|\n\
               Overfull \\hbox (0.5pt too wide) detected at line 12\n\
               Overfull \\vbox (12.0pt too high) has occurred while \\output is active\n";
    let o = overfull(log);
    assert_eq!(o.len(), 2, "{o:?}");
    assert!(o[0].contains("257.3pt") && o[1].contains("12.0pt"));
    let tall = "LaTeX Warning: Float too large for page by 745.0pt on input line 10.\n";
    assert_eq!(overfull(tall).len(), 1);
}

/// `results/index.html` in headless Chromium: after its script ran, every experiment with
/// results is a section and every figure is an inline SVG; the verdict filter hides the rest.
#[test]
#[ignore = "needs chromium; run by .ci/run"]
fn html_report_loads_in_headless_chromium() {
    assert!(tool("chromium"), "chromium not installed");
    let index = results().join("index.html");
    let dump = |fragment: &str| {
        let profile = tempfile::tempdir().unwrap();
        let out = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--dump-dom",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("file://{}{fragment}", index.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let dom = dump("");
    assert!(
        dom.contains("data-ready=\"yes\""),
        "the page's script did not run"
    );
    let mut experiments = 0;
    let mut figures = 0;
    for e in std::fs::read_dir(results()).unwrap().filter_map(|e| e.ok()) {
        let d = e.path();
        if !d.join("trials.jsonl").exists() {
            continue;
        }
        let name = d.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            dom.contains(&format!("id=\"{name}\"")),
            "experiment {name} missing"
        );
        experiments += 1;
        for f in std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()) {
            let f = f.file_name().to_string_lossy().to_string();
            if let Some(stem) = f.strip_suffix(".svg") {
                let tag = format!("data-figure=\"{name}/{stem}\"><svg");
                assert!(dom.contains(&tag), "figure {name}/{stem} missing");
                figures += 1;
            }
        }
    }
    assert!(experiments > 20 && figures > 15, "{experiments} {figures}");
    let filtered = dump("#verdict=differs");
    assert!(filtered.contains("data-filter=\"differs\""));
    let hidden = filtered
        .matches("data-verdict=\"reproduced\" hidden")
        .count();
    let shown = filtered.matches("data-verdict=\"differs\">").count();
    assert!(
        hidden > 0 && shown > 0,
        "filter did not apply: {hidden} hidden, {shown} shown"
    );
}
