//! docs/algorithms.md, the algorithm index, kept true. Its table rows are
//! `| algorithm | spec name | source | experiments |`; this checks that every source link names
//! a file that exists, that every spec name (`learner = "..."`, with its fields) is a registered
//! kind that accepts those fields, that every registered kind and ablation variant has a row,
//! and that the experiments a row lists exist and run one of its kinds; without "…" they are
//! all the experiments that do.

mod common;

use epsilab::analysis::PROBES;
use epsilab::kinds::{ATTACKS, LEARNERS, RELEASES, Registered, SELECTORS, find, variant};
use epsilab::report::markdown::split_row;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The spec keys that name a kind.
const FAMILIES: [&str; 5] = ["learner", "selection", "release", "attack", "probe"];

/// The most experiments a row lists before "…".
const MAX_EXPERIMENTS: usize = 3;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One table row of the page, by column.
struct Row {
    line: usize,
    spec: String,
    source: String,
    experiments: String,
}

/// A spec name of the page: `family = "kind"` and the kind's other fields.
struct Named {
    family: String,
    kind: String,
    fields: toml::Table,
}

fn page() -> String {
    std::fs::read_to_string(root().join("docs/algorithms.md")).unwrap()
}

/// The table rows of `text` (a table's first line is its header, its second the separator).
fn rows(text: &str) -> Vec<Row> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let in_table = i > 0 && lines[i - 1].starts_with('|');
        if !line.starts_with('|') || !in_table || line.starts_with("|---") {
            continue;
        }
        // Split as GFM splits a row, so an escaped `\|` stays inside its cell.
        let cells = split_row(line);
        assert_eq!(cells.len(), 4, "line {}: 4 columns expected: {line}", i + 1);
        let [_, spec, source, experiments] = <[String; 4]>::try_from(cells).expect("4 cells");
        out.push(Row {
            line: i + 1,
            spec,
            source,
            experiments,
        });
    }
    out
}

/// The code spans of a cell.
fn spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// A spec-name span: its first key is the family, the rest are fields of the kind.
fn named(span: &str) -> Result<Named, String> {
    let family = span.split('=').next().unwrap().trim().to_string();
    let mut doc: toml::Table =
        toml::from_str(&format!("x = {{ {span} }}")).map_err(|e| format!("`{span}`: {e}"))?;
    let Some(toml::Value::Table(mut fields)) = doc.remove("x") else {
        return Err(format!("`{span}` is not `key = value, ...`"));
    };
    if !FAMILIES.contains(&family.as_str()) {
        return Err(format!("`{span}` does not start with one of {FAMILIES:?}"));
    }
    let Some(toml::Value::String(kind)) = fields.remove(&family) else {
        return Err(format!("`{span}`: `{family}` must be a string"));
    };
    Ok(Named {
        family,
        kind,
        fields,
    })
}

/// The spec names of a row.
fn row_names(row: &Row) -> Vec<Named> {
    let names: Result<Vec<Named>, String> = spans(&row.spec).into_iter().map(named).collect();
    names.unwrap_or_else(|e| panic!("line {}: {e}", row.line))
}

/// Checks that `n` is registered in `registry` and accepts its fields with their values (a
/// field the kind requires and the row does not give is not an error).
fn check_kind<K: ?Sized>(registry: &[Registered<K>], n: &Named) -> Result<(), String> {
    let r =
        find(registry, &n.kind).ok_or(format!("{} `{}` is not registered", n.family, n.kind))?;
    if let Some(field) = n.fields.keys().find(|f| !r.fields.contains(&f.as_str())) {
        return Err(format!("{} `{}` has no field `{field}`", n.family, n.kind));
    }
    if let Some(toml::Value::String(v)) = n.fields.get("variant") {
        variant::find(&n.kind, v).ok_or(format!("`{}` has no variant `{v}`", n.kind))?;
    }
    match (r.parse)(n.fields.clone()) {
        Err(e) if !e.contains("missing field") => Err(format!("{} `{}`: {e}", n.family, n.kind)),
        _ => Ok(()),
    }
}

fn check_named(n: &Named) -> Result<(), String> {
    match n.family.as_str() {
        "learner" => check_kind(LEARNERS, n),
        "selection" => check_kind(SELECTORS, n),
        "release" => check_kind(RELEASES, n),
        "attack" => check_kind(ATTACKS, n),
        _ => check_kind(PROBES, n),
    }
}

#[test]
fn every_source_link_names_a_file_that_exists() {
    let mut bad = Vec::new();
    for row in rows(&page()) {
        let found = common::markdown_links(&row.source);
        let missing = row.source.contains("not implemented");
        if missing && (!found.is_empty() || row.spec != "—" || row.experiments != "—") {
            bad.push(format!(
                "line {}: a row not implemented has no link, kind or experiment",
                row.line
            ));
        }
        if !missing && found.is_empty() {
            bad.push(format!(
                "line {}: no source link and not \"not implemented\"",
                row.line
            ));
        }
        for (text, target) in found {
            if !root().join("docs").join(target).is_file() {
                bad.push(format!("line {}: {target} does not exist", row.line));
            }
            if target.strip_prefix("../") != Some(text) {
                bad.push(format!(
                    "line {}: [{text}]({target}): the text is not the path",
                    row.line
                ));
            }
        }
    }
    assert!(bad.is_empty(), "docs/algorithms.md:\n{}", bad.join("\n"));
}

#[test]
fn every_spec_name_is_a_registered_kind_with_its_fields() {
    let mut bad = Vec::new();
    for row in rows(&page()) {
        if row.spec != "—" && spans(&row.spec).is_empty() {
            bad.push(format!(
                "line {}: spec names are code spans or \"—\"",
                row.line
            ));
        }
        for n in row_names(&row) {
            if let Err(e) = check_named(&n) {
                bad.push(format!("line {}: {e}", row.line));
            }
        }
    }
    assert!(bad.is_empty(), "docs/algorithms.md:\n{}", bad.join("\n"));
}

/// The names of a registry that no row names in `family`.
fn unindexed<K: ?Sized>(family: &str, registry: &[Registered<K>], rows: &[Row]) -> Vec<String> {
    let named: BTreeSet<(String, String)> = rows
        .iter()
        .flat_map(row_names)
        .map(|n| (n.family, n.kind))
        .collect();
    let listed = |name: &str| named.contains(&(family.to_string(), name.to_string()));
    registry
        .iter()
        .filter(|r| !listed(r.name))
        .map(|r| format!("{family} = \"{}\"", r.name))
        .collect()
}

#[test]
fn every_registered_kind_and_variant_has_a_row() {
    let rows = rows(&page());
    let mut missing = unindexed("learner", LEARNERS, &rows);
    missing.extend(unindexed("selection", SELECTORS, &rows));
    missing.extend(unindexed("release", RELEASES, &rows));
    missing.extend(unindexed("attack", ATTACKS, &rows));
    missing.extend(unindexed("probe", PROBES, &rows));
    let variants: BTreeSet<(String, String)> = rows
        .iter()
        .flat_map(row_names)
        .filter_map(|n| match n.fields.get("variant") {
            Some(toml::Value::String(v)) => Some((n.kind, v.clone())),
            _ => None,
        })
        .collect();
    for v in variant::VARIANTS {
        if !variants.contains(&(v.kind.to_string(), v.name.to_string())) {
            missing.push(format!("{} variant = \"{}\"", v.kind, v.name));
        }
    }
    assert!(
        missing.is_empty(),
        "no row in docs/algorithms.md for:\n{}",
        missing.join("\n")
    );
}

/// Whether some table of `value` has `key = "name"`.
fn runs(value: &toml::Value, key: &str, name: &str) -> bool {
    match value {
        toml::Value::Table(t) => {
            t.get(key).and_then(toml::Value::as_str) == Some(name)
                || t.values().any(|v| runs(v, key, name))
        }
        toml::Value::Array(a) => a.iter().any(|v| runs(v, key, name)),
        _ => false,
    }
}

/// Every spec in experiments/, by name.
fn experiments() -> Vec<(String, toml::Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root().join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let value = toml::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            out.push((
                path.file_stem().unwrap().to_string_lossy().into_owned(),
                value,
            ));
        }
    }
    out
}

#[test]
fn every_experiment_listed_exists_and_runs_the_row() {
    let all = experiments();
    let mut bad = Vec::new();
    for row in rows(&page()) {
        let listed: BTreeSet<&str> = spans(&row.experiments).into_iter().collect();
        let more = row.experiments.contains('…');
        if listed.len() > MAX_EXPERIMENTS {
            bad.push(format!(
                "line {}: at most {MAX_EXPERIMENTS}, then \"…\"",
                row.line
            ));
        }
        for name in &listed {
            if !all.iter().any(|(n, _)| n == name) {
                bad.push(format!(
                    "line {}: experiments/{name}.toml does not exist",
                    row.line
                ));
            }
        }
        let names = row_names(&row);
        if names.is_empty() {
            continue;
        }
        let running: BTreeSet<&str> = all
            .iter()
            .filter(|(_, v)| names.iter().any(|n| runs(v, &n.family, &n.kind)))
            .map(|(n, _)| n.as_str())
            .collect();
        if let Some(name) = listed.iter().find(|n| !running.contains(*n)) {
            bad.push(format!(
                "line {}: {name} runs none of the row's kinds",
                row.line
            ));
        }
        if !more && listed != running {
            bad.push(format!(
                "line {}: the experiments running it are {running:?}",
                row.line
            ));
        }
        if more && running.len() <= listed.len() {
            bad.push(format!(
                "line {}: \"…\" but only {running:?} run it",
                row.line
            ));
        }
    }
    assert!(bad.is_empty(), "docs/algorithms.md:\n{}", bad.join("\n"));
}
