//! The README and the docs say only true things that a test can check: the ten-minute example
//! is the shipped spec and runs, every relative link resolves, and the README stays a front
//! page (at most 350 lines, starting with its two set-up commands).

mod common;

use common::run_options;
use epsilab::spec::Spec;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of `markdown` in language `lang`.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim() == format!("```{lang}") => current = Some(String::new()),
            Some(_) if line.trim() == "```" => out.push(current.take().unwrap()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn the_readme_starts_with_its_two_commands_and_stays_short() {
    let readme = read(&root().join("README.md"));
    let first = &blocks(&readme, "sh")[0];
    let commands: Vec<&str> = first
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert_eq!(
        commands,
        [
            "cargo run --release -- run experiments/quickstart.toml",
            "cargo test"
        ]
    );
    let lines = readme.lines().count();
    assert!(lines <= 350, "README.md has {lines} lines");
}

/// The README shows `examples/income.toml` in full (its header comment aside), and the spec
/// runs: in smoke mode here, on the shipped Adult file, with no setting.
#[test]
fn the_ten_minute_example_is_the_shipped_spec_and_runs() {
    let readme = read(&root().join("README.md"));
    let path = root().join("examples/income.toml");
    let shipped = read(&path);
    let body: String = shipped
        .lines()
        .skip_while(|l| l.starts_with('#') || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        blocks(&readme, "toml").contains(&body),
        "the README's spec differs from examples/income.toml"
    );
    let spec = Spec::load(&path).unwrap();
    let out = tempfile::tempdir().unwrap();
    let opts = epsilab::runner::RunOptions {
        smoke: true,
        data_dir: common::data_dir(),
        ..run_options(out.path(), 2)
    };
    let summary = epsilab::runner::run(&spec, &opts).unwrap();
    assert!(summary.ran > 0);
    let records = epsilab::store::read_dir_records(&summary.results_dir).unwrap();
    assert!(records.iter().all(|r| r.n_features == 5));
    assert!(records.iter().any(|r| r.private));
}

/// Every relative link of the README and of `docs/` names a file or folder that exists.
#[test]
fn every_relative_link_of_the_readme_and_docs_resolves() {
    let mut pages = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md") {
            pages.push(p);
        }
    }
    let mut dead = Vec::new();
    for page in &pages {
        let text = read(page);
        for (_, target) in common::markdown_links(&text) {
            let target = target.split('#').next().unwrap();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !page.parent().unwrap().join(target).exists() {
                dead.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}
