//! What the audit modules' tests share: one audit of a module's rows at a fixed size and seed,
//! and the look-up of one row's bound.

use super::{AuditResult, Auditable, audit_each, table};
use crate::privacy::Relation;

/// Audits `rows` at 20,000 runs per side, seed 1, and asserts that there are `count` of them,
/// all under `relation`, and every one is `ok` (a correct row at or below its claim, a mutant caught, a weakening
/// variant within its stated excess): at this fixed seed none fails, and a correct row would
/// exceed its claim with probability at most 5% (the bound's level). Returns the results and
/// their table, for the module's own checks.
pub(super) fn audited(
    rows: &[Box<dyn Auditable>],
    count: usize,
    relation: Relation,
) -> (Vec<AuditResult>, String) {
    let results = audit_each(rows, 20_000, 1).unwrap();
    let table = table(&results);
    assert_eq!(results.len(), count, "{table}");
    for r in &results {
        assert!(r.ok, "{}\n{table}", r.mechanism);
        assert_eq!(r.relation, relation.key(), "{}\n{table}", r.mechanism);
    }
    (results, table)
}

/// Asserts that each named row's lower bound exceeds its given floor: the audit has power on
/// the tight rows' pairs (their bound comes close to the claim).
pub(super) fn assert_tight(results: &[AuditResult], floors: &[(&str, f64)]) {
    for &(name, floor) in floors {
        let bound = lower_bound(results, name);
        assert!(
            bound > floor,
            "{name}: {bound} <= {floor}\n{}",
            table(results)
        );
    }
}

/// The lower bound of the row called `name`.
fn lower_bound(results: &[AuditResult], name: &str) -> f64 {
    let r = results.iter().find(|r| r.mechanism == name);
    r.unwrap_or_else(|| panic!("no row {name}")).lower_bound
}
