//! Replays every input kept in `fuzz/corpus/TARGET/` through the fuzz target's own body
//! (`epsilab::fuzzing`), without cargo-fuzz: a fix that regresses on a once-found input, or a
//! reader that panics on any kept input, fails `cargo test`.

use std::path::Path;

#[test]
fn every_fuzz_corpus_input_replays_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut replayed = 0;
    for (name, target) in epsilab::fuzzing::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: empty corpus", dir.display());
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name} panicked on {}", f.display());
            replayed += 1;
        }
    }
    // The corpora hold 2,600 inputs when this was written; a lost corpus folder must not pass.
    assert!(replayed >= 2000, "only {replayed} corpus inputs found");
}
