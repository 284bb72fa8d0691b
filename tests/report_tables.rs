//! Every committed table as a reader sees it: `results/REPORT.md` and each `results/*/table.md`
//! split into cells as GitHub splits them, `results/index.html` parsed by a real HTML5 parser
//! (scraper / html5ever). Every row has its header's cell count, every number of a figure
//! report's table equals the one in its `table.csv` (and every CSV value has its cell), the
//! page's tables say what the Markdown says, and every in-page link lands on an id.

use epsilab::report::markdown::split_row;
use epsilab::report::{axis_symbol, dataset_title, is_accuracy, is_modal};
use epsilab::spec::{ReportKind, Spec};
use scraper::{ElementRef, Html, Selector};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A table as read: the heading above it, its header cells and its rows of cells.
#[derive(Debug, Clone, PartialEq)]
struct Table {
    heading: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// The text a Markdown cell shows: emphasis and link targets dropped, code marks removed.
fn shown(cell: &str) -> String {
    let mut out = String::new();
    let mut rest = cell.replace("**", "").replace('`', "");
    // `[text](target)` shows `text`.
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](").map(|m| open + m) else {
            break;
        };
        let Some(close) = rest[mid..].find(')').map(|c| mid + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..mid]);
        rest = rest[close + 1..].to_string();
    }
    out.push_str(&rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every table of a Markdown text, each row split as GFM splits it (raw cell text), and the
/// line of each row for messages. Fails on a row whose cell count differs from its header's.
fn markdown_tables(text: &str, file: &str) -> Vec<Table> {
    let lines: Vec<&str> = text.lines().collect();
    let mut tables = Vec::new();
    let mut heading = String::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        if l.starts_with('#') {
            heading = l.trim_start_matches('#').trim().to_string();
        }
        let is_rule =
            |l: &str| l.starts_with('|') && l.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
        if l.starts_with('|') && lines.get(i + 1).is_some_and(|n| is_rule(n.trim())) {
            let header = split_row(l);
            let mut rows = Vec::new();
            let mut j = i + 2;
            while j < lines.len() && lines[j].trim().starts_with('|') {
                let row = split_row(lines[j]);
                assert_eq!(
                    row.len(),
                    header.len(),
                    "{file}:{}: {} cells under a header of {}:\n{}\nheader: {}",
                    j + 1,
                    row.len(),
                    header.len(),
                    lines[j],
                    l
                );
                rows.push(row);
                j += 1;
            }
            tables.push(Table {
                heading: heading.clone(),
                header,
                rows,
            });
            i = j;
        } else {
            i += 1;
        }
    }
    tables
}

/// The same tables with each cell as the reader sees it.
fn as_shown(tables: &[Table]) -> Vec<Table> {
    tables
        .iter()
        .map(|t| Table {
            heading: shown(&t.heading),
            header: t.header.iter().map(|c| shown(c)).collect(),
            rows: t
                .rows
                .iter()
                .map(|r| r.iter().map(|c| shown(c)).collect())
                .collect(),
        })
        .collect()
}

/// One row of a figure report's `table.csv`.
#[derive(Debug, Clone)]
struct CsvRow {
    dataset: String,
    private: bool,
    x: String,
    metric: String,
    mean: f64,
    se: f64,
    trials: usize,
    series: String,
}

fn read_csv(path: &Path) -> Vec<CsvRow> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        head.last().map(String::as_str),
        Some("series"),
        "{}: no series column",
        path.display()
    );
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            CsvRow {
                dataset: rec[0].to_string(),
                private: &rec[2] == "true",
                x: rec[3].to_string(),
                metric: rec[4].to_string(),
                mean: rec[5].parse().unwrap(),
                se: rec[6].parse().unwrap(),
                trials: rec[7].parse().unwrap(),
                series: rec[8].to_string(),
            }
        })
        .collect()
}

/// A cell's text as the wide table writes it: mean ± s.e. scaled and rounded as shown.
fn expected_cell(row: &CsvRow) -> String {
    let (k, dec) = if is_accuracy(&row.metric) {
        (100.0, 1)
    } else {
        (1.0, 4)
    };
    format!("{:.dec$} ± {:.dec$}", k * row.mean, k * row.se, dec = dec)
}

/// Where a cell of a wide table sits: dataset name, x text, column header, and its text.
struct Cell<'a> {
    dataset: &'a str,
    x: Option<&'a str>,
    head: &'a str,
    text: &'a str,
}

/// Checks one cell against the CSV: "—" where the CSV has no value, else exactly one CSV row
/// whose mean ± s.e. it shows (modal metrics: only that the row exists), and a column tag
/// that says private only when every cell of the series is. Returns that CSV row.
fn check_cell(csv: &[CsvRow], metric: &str, at: &Cell, what: &str) -> Option<usize> {
    // A series whose own name ends with its tag ("linear SVM (non-private)") is not tagged twice.
    let (series, tag) = match csv.iter().find(|c| c.series == at.head) {
        Some(c) => (c.series.as_str(), at.head.rsplit_once(" (").unwrap().1),
        None => at.head.rsplit_once(" (").unwrap(),
    };
    let all_private = csv
        .iter()
        .filter(|c| c.metric == metric && c.series == series)
        .all(|c| c.private);
    assert_eq!(
        tag == "private)",
        all_private,
        "{what}: column {:?} and the CSV's privacy disagree",
        at.head
    );
    let matching: Vec<usize> = (0..csv.len())
        .filter(|&i| {
            let c = &csv[i];
            c.dataset == at.dataset
                && c.metric == metric
                && c.series == series
                && at.x.is_none_or(|x| c.x.is_empty() || c.x == x)
        })
        .collect();
    let place = format!("{what}: {} / {:?} / {}", at.dataset, at.x, at.head);
    if at.text == "—" {
        assert!(matching.is_empty(), "{place}: — but the CSV has a value");
        return None;
    }
    assert_eq!(matching.len(), 1, "{place}: CSV rows for {:?}", at.text);
    if !is_modal(metric) {
        let want = expected_cell(&csv[matching[0]]);
        // The cell is "mean ± se", then "[answered k of n]" where a release refused some of
        // the CSV's n trials, then "(published)" when the paper gives one.
        let rest = at.text.strip_prefix(want.as_str()).unwrap_or_else(|| {
            panic!(
                "{place}: the table shows {:?}, table.csv says {want:?}",
                at.text
            )
        });
        let n = csv[matching[0]].trials;
        let rest = match rest.strip_prefix(" [answered ") {
            Some(r) => {
                let (k, r) = r.split_once(&format!(" of {n}]")).unwrap_or_else(|| {
                    panic!("{place}: {:?} is not over the CSV's {n} trials", at.text)
                });
                assert!(k.parse::<usize>().unwrap() < n, "{place}: {:?}", at.text);
                r
            }
            None => rest,
        };
        assert!(
            rest.is_empty() || rest.starts_with(" ("),
            "{place}: the table shows {:?}, table.csv says {want:?}",
            at.text
        );
    }
    Some(matching[0])
}

/// Checks the wide tables of one figure report (as shown, from Markdown or HTML) against its
/// CSV: each cell's mean ± s.e. is the CSV's, and every CSV row has its cell. Modal metrics
/// (log10 λ) show the mode, which the CSV does not hold: their cells are only counted.
/// Returns the number of cells compared.
fn check_wide(spec: &Spec, csv: &[CsvRow], tables: &[Table], what: &str) -> usize {
    let titles: BTreeMap<String, String> = spec
        .experiment
        .datasets
        .iter()
        .map(|d| (dataset_title(spec, d), d.clone()))
        .collect();
    let x_head = axis_symbol(spec.report.x.as_deref().unwrap_or("x")).to_string();
    let mut compared = 0;
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    for t in tables {
        let Some(metric) = spec
            .report
            .metrics
            .iter()
            .find(|m| t.heading.starts_with(&format!("{} (", m.replace('_', " "))))
        else {
            continue;
        };
        let by_x = t.header.get(1) == Some(&x_head);
        let lead = 1 + usize::from(by_x);
        // A wide table: dataset (and x), then one column per series, each with its privacy
        // tag. (A verdict table under the same heading is not one.)
        let tagged = |h: &String| h.ends_with(" (private)") || h.ends_with(" (non-private)");
        if t.header[0] != "dataset" || !t.header[lead..].iter().all(tagged) {
            continue;
        }
        for row in &t.rows {
            let d = titles
                .get(&row[0])
                .unwrap_or_else(|| panic!("{what}: dataset {:?} is not a title", row[0]));
            for (ci, head) in t.header.iter().enumerate().skip(lead) {
                let at = Cell {
                    dataset: d,
                    x: by_x.then(|| row[1].as_str()),
                    head,
                    text: &row[ci],
                };
                if let Some(i) = check_cell(csv, metric, &at, what) {
                    seen.insert(i);
                    compared += usize::from(!is_modal(metric));
                }
            }
        }
    }
    for (i, c) in csv.iter().enumerate() {
        if spec.report.metrics.contains(&c.metric) && !tables.is_empty() {
            assert!(
                seen.contains(&i),
                "{what}: CSV row {c:?} has no cell in the table"
            );
        }
    }
    compared
}

/// Every spec of `experiments/` by experiment name.
fn specs() -> BTreeMap<String, Spec> {
    epsilab::report::reproduction::spec_files(&root().join("experiments"))
        .unwrap()
        .into_iter()
        .map(|p| {
            let s = Spec::load(&p).unwrap();
            (s.experiment.name.clone(), s)
        })
        .collect()
}

/// The results folders with a `table.md`, by name.
fn result_dirs() -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<(String, PathBuf)> = std::fs::read_dir(root().join("results"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("table.md").exists())
        .map(|p| (p.file_name().unwrap().to_string_lossy().to_string(), p))
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_committed_markdown_table_has_its_header_cell_count_and_its_csv_numbers() {
    let specs = specs();
    let (mut files, mut cells) = (0, 0);
    for (name, dir) in result_dirs() {
        let text = std::fs::read_to_string(dir.join("table.md")).unwrap();
        let tables = markdown_tables(&text, &format!("results/{name}/table.md"));
        files += 1;
        for tag in ["(non-private) (non-private)", "(private) (private)"] {
            assert!(!text.contains(tag), "results/{name}/table.md repeats {tag}");
        }
        let trials = std::fs::read_to_string(dir.join("trials.jsonl")).unwrap_or_default();
        if !trials.is_empty() && trials.lines().all(|l| l.contains("\"test_accuracy\":null")) {
            // Nothing scored on accuracy (k-means, PCA, regression): no majority baseline.
            assert!(
                !text.contains("ajority baseline"),
                "results/{name}/table.md"
            );
        }
        let Some(spec) = specs.get(&name) else {
            continue;
        };
        if spec.report.kind == ReportKind::Figure {
            let csv = read_csv(&dir.join("table.csv"));
            cells += check_wide(spec, &csv, &as_shown(&tables), &format!("{name}/table.md"));
        }
    }
    assert!(files > 40 && cells > 1000, "{files} files, {cells} cells");
}

/// REPORT.md split at its `<a id="…">` anchors: (anchor, section text).
fn report_sections(report: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in report.lines() {
        if let Some(id) = line
            .strip_prefix("<a id=\"")
            .and_then(|r| r.strip_suffix("\"></a>"))
        {
            out.push((id.to_string(), String::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    out
}

#[test]
fn report_md_tables_are_whole_and_its_links_land() {
    let report = std::fs::read_to_string(root().join("results/REPORT.md")).unwrap();
    let tables = markdown_tables(&report, "results/REPORT.md");
    assert!(tables.len() > 50, "{} tables", tables.len());
    let sections = report_sections(&report);
    let ids: BTreeSet<&str> = sections.iter().map(|s| s.0.as_str()).collect();
    let mut links = 0;
    for t in &tables {
        for cell in t.rows.iter().flatten() {
            for part in cell.split("](#").skip(1) {
                let target = part.split(')').next().unwrap();
                assert!(
                    ids.contains(target),
                    "REPORT.md links to #{target}: no such id"
                );
                links += 1;
            }
        }
    }
    assert!(
        links >= sections.len(),
        "{links} links, {} sections",
        sections.len()
    );
    // Each experiment's tables in REPORT.md are its table.md's, cell for cell.
    let specs = specs();
    let mut checked = 0;
    for (name, dir) in result_dirs() {
        let id = name.replace('.', "");
        let Some((_, text)) = sections.iter().find(|s| s.0 == id) else {
            continue;
        };
        let own = markdown_tables(
            &std::fs::read_to_string(dir.join("table.md")).unwrap(),
            &name,
        );
        let here = markdown_tables(text, &format!("REPORT.md#{id}"));
        assert!(
            here.len() >= own.len() && here[..own.len()] == own[..],
            "REPORT.md#{id}: its tables are not results/{name}/table.md's"
        );
        if let Some(spec) = specs
            .get(&name)
            .filter(|s| s.report.kind == ReportKind::Figure)
        {
            let csv = read_csv(&dir.join("table.csv"));
            check_wide(spec, &csv, &as_shown(&here), &format!("REPORT.md#{id}"));
        }
        checked += 1;
    }
    assert!(checked > 40, "{checked} sections checked");
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

fn text(e: ElementRef) -> String {
    e.text()
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The tables of an element in document order, each with the nearest heading before it.
fn html_tables(scope: ElementRef) -> Vec<Table> {
    let (th, td, tr) = (sel("th"), sel("td"), sel("tbody tr"));
    let mut out = Vec::new();
    let mut heading = String::new();
    for e in scope.select(&sel("h1, h2, h3, h4, table")) {
        if e.value().name() != "table" {
            heading = text(e);
            continue;
        }
        let header: Vec<String> = e.select(&th).map(text).collect();
        let rows: Vec<Vec<String>> = e
            .select(&tr)
            .map(|r| r.select(&td).map(text).collect())
            .collect();
        for r in &rows {
            assert_eq!(r.len(), header.len(), "row {r:?} under {header:?}");
        }
        out.push(Table {
            heading: heading.clone(),
            header,
            rows,
        });
    }
    out
}

#[test]
fn index_html_parsed_shows_every_number_under_its_column_and_every_link_lands() {
    let page = std::fs::read_to_string(root().join("results/index.html")).unwrap();
    let doc = Html::parse_document(&page);
    // Links: every in-page link names an element id.
    let ids: BTreeSet<&str> = doc
        .select(&sel("[id]"))
        .filter_map(|e| e.value().attr("id"))
        .collect();
    let mut links = 0;
    for a in doc.select(&sel("a[href^='#']")) {
        let target = &a.value().attr("href").unwrap()[1..];
        assert!(
            ids.contains(target),
            "link {:?} to #{target}: no such id",
            text(a)
        );
        links += 1;
    }
    assert!(links > 40, "{links} links");
    // The summary table: one row per section, each linking to it.
    let summary = html_tables(doc.root_element())
        .into_iter()
        .next()
        .expect("summary table");
    assert_eq!(summary.header[0], "experiment");
    let sections: Vec<ElementRef> = doc.select(&sel("section.experiment")).collect();
    assert_eq!(summary.rows.len(), sections.len());
    // Each section's tables are its table.md's, and a figure report's numbers its CSV's.
    let specs = specs();
    let mut cells = 0;
    for (name, dir) in result_dirs() {
        let id = name.replace('.', "");
        let Some(section) = sections
            .iter()
            .find(|s| s.value().attr("id") == Some(id.as_str()))
        else {
            continue;
        };
        let own = as_shown(&markdown_tables(
            &std::fs::read_to_string(dir.join("table.md")).unwrap(),
            &name,
        ));
        let here = html_tables(*section);
        for (a, b) in own.iter().zip(&here) {
            assert_eq!(
                (&a.header, &a.rows),
                (&b.header, &b.rows),
                "index.html#{id}: a table differs from table.md's"
            );
        }
        assert!(here.len() >= own.len(), "index.html#{id}: tables missing");
        if let Some(spec) = specs
            .get(&name)
            .filter(|s| s.report.kind == ReportKind::Figure)
        {
            let csv = read_csv(&dir.join("table.csv"));
            cells += check_wide(spec, &csv, &here, &format!("index.html#{id}"));
        }
    }
    assert!(cells > 1000, "{cells} cells compared");
}

#[test]
fn shown_drops_markup_only() {
    assert_eq!(shown("**59.5 ± 2.0** (60)"), "59.5 ± 2.0 (60)");
    assert_eq!(shown("[a |b|](#x) c"), "a |b| c");
    assert_eq!(shown("`q65`"), "q65");
}
