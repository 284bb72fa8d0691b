//! `src/report/` has no import circle: no module reaches itself through the report modules it
//! names (`super::x`, `crate::report::x`, or `x::` in `report/mod.rs`), test modules aside.
//! `report/mod.rs` (the entry points) may name every module; no module names `mod.rs`'s own
//! items except through their leaf (`summary`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A file's text up to its test module.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at])
}

/// The report modules each module names: `name -> names`, `mod` for `report/mod.rs`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report");
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.extension().is_some_and(|e| e == "rs") {
            modules.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    let names: BTreeSet<String> = modules.keys().filter(|m| *m != "mod").cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, text) in &modules {
        let code: String = without_tests(text)
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut named = BTreeSet::new();
        let prefixes: &[&str] = if module == "mod" {
            &["self::", "crate::report::", ""]
        } else {
            &["super::", "crate::report::"]
        };
        for target in &names {
            for prefix in prefixes {
                let path = format!("{prefix}{target}::");
                let found = code.match_indices(&path).any(|(at, _)| {
                    // A whole path segment (not `foo_table::` for `table::`).
                    code[..at]
                        .chars()
                        .last()
                        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
                });
                let grouped = prefix.ends_with("::")
                    && code.match_indices(&format!("{prefix}{{")).any(|(at, _)| {
                        let rest = &code[at + prefix.len() + 1..];
                        let group = &rest[..rest.find('}').unwrap_or(rest.len())];
                        group
                            .split(',')
                            .any(|p| p.trim().split("::").next() == Some(target))
                    });
                if (found || grouped) && target != module {
                    named.insert(target.clone());
                }
            }
        }
        if module != "mod" && names_mod_items(&code, &names) {
            named.insert("mod".to_string());
        }
        graph.insert(module.clone(), named);
    }
    graph
}

/// Whether `code` (a module of `report/`) names an item of `report/mod.rs` itself:
/// `super::x` or `crate::report::x` (alone or in a group) where `x` is no module.
fn names_mod_items(code: &str, modules: &BTreeSet<String>) -> bool {
    ["super::", "crate::report::"].iter().any(|prefix| {
        code.match_indices(prefix).any(|(at, _)| {
            let rest = &code[at + prefix.len()..];
            let segments: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(|p| p.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or(""),
                ],
            };
            segments
                .iter()
                .any(|s| !s.is_empty() && *s != "self" && !modules.contains(*s))
        })
    })
}

/// A module that reaches itself through the graph, with the path, if any.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        at: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            return Some(path[i..].to_vec());
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(c) = visit(graph, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(graph, m, &mut Vec::new(), &mut done))
}

#[test]
fn report_modules_import_no_circle() {
    let graph = imports();
    assert!(graph.len() > 10, "found the report modules: {graph:?}");
    assert!(graph["mod"].contains("figure"), "mod.rs names its modules");
    assert!(graph["reproduction"].contains("verdict"));
    assert_eq!(circle(&graph), None, "{graph:#?}");
}

#[test]
fn a_circle_is_found() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert_eq!(circle(&edges(&[("a", "b"), ("b", "c")])), None);
    let found = circle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(found.len(), 3);
}
