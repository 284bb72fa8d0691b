//! The README says the spec reference, docs/specs.md, describes every field: every registered
//! kind is named there, and every field a kind accepts is written there as `` `field` ``.

use epsilab::analysis::PROBES;
use epsilab::kinds::{ATTACKS, LEARNERS, RELEASES, Registered, SELECTORS};
use std::path::PathBuf;

fn reference() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/specs.md");
    std::fs::read_to_string(path).expect("docs/specs.md")
}

/// `(kind, field)` pairs of `registry` the reference does not name.
fn missing<K: ?Sized>(registry: &[Registered<K>], text: &str) -> Vec<String> {
    let named =
        |word: &str| text.contains(&format!("`{word}`")) || text.contains(&format!("\"{word}\""));
    let mut out = Vec::new();
    for kind in registry {
        if !named(kind.name) {
            out.push(format!("kind `{}`", kind.name));
        }
        for field in kind.fields {
            if !text.contains(&format!("`{field}`")) {
                out.push(format!("`{}` of `{}`", field, kind.name));
            }
        }
    }
    out
}

#[test]
fn the_spec_reference_names_every_kind_and_field() {
    let text = reference();
    let mut gaps = missing(LEARNERS, &text);
    gaps.extend(missing(SELECTORS, &text));
    gaps.extend(missing(RELEASES, &text));
    gaps.extend(missing(ATTACKS, &text));
    gaps.extend(missing(PROBES, &text));
    assert!(
        gaps.is_empty(),
        "docs/specs.md does not name: {}",
        gaps.join(", ")
    );
}

/// The check can fail: a field no reference could name is reported.
#[test]
fn a_field_the_reference_lacks_is_reported() {
    let text = "`nb` and `alpha`";
    let gaps = missing(LEARNERS, text);
    assert!(gaps.iter().any(|g| g == "kind `private_nb`"), "{gaps:?}");
    assert!(
        !gaps.iter().any(|g| g.starts_with("`alpha` of `nb`")),
        "{gaps:?}"
    );
}
