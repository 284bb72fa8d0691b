#!/usr/bin/env bash
# Runs one fuzz target for a fixed time with its corpus kept in fuzz/corpus/TARGET.
#   fuzz/run.sh TARGET SECONDS        e.g. fuzz/run.sh libsvm_reader 600
# Targets: spec_loader, libsvm_reader, csv_reader. Needs cargo-fuzz (`cargo install cargo-fuzz`);
# only a stable toolchain is needed: RUSTC_BOOTSTRAP=1 lets cargo-fuzz's nightly flags through.
# A crash leaves its input in fuzz/artifacts/TARGET/ and exits non-zero; turn it into a
# regression test in tests/fuzz_regressions.rs. New corpus entries are minimised back into
# fuzz/corpus/TARGET at the end (cargo fuzz cmin), so the kept corpus stays small.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: fuzz/run.sh TARGET SECONDS}"
seconds="${2:?usage: fuzz/run.sh TARGET SECONDS}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz is not installed (cargo install cargo-fuzz); skipped" >&2
    exit 2
fi
export RUSTC_BOOTSTRAP=1
corpus="fuzz/corpus/$target"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$corpus"
cp -r "$corpus/." "$work/"
# -s none: the stable toolchain has no sanitizer runtimes; libFuzzer's coverage guidance and
# Rust's own checks (debug assertions, overflow checks) still apply.
cargo fuzz run -s none --debug-assertions "$target" "$work" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1
cargo fuzz cmin -s none "$target" "$work" >/dev/null 2>&1 || true
rm -rf "${corpus:?}"/*
cp -r "$work/." "$corpus/"
echo "fuzz/run.sh: $target ran ${seconds}s without a crash; corpus $(ls "$corpus" | wc -l) files"
