#!/usr/bin/env bash
# Issue 14's logistic-regression timing table, epsilab beside scikit-learn in one run: for each
# workload the criterion bench (benches/logistic.rs) and then the scikit-learn peer
# (benches/peer/sklearn_lr.py, one BLAS thread) on the same data and objective, then the
# private NB bench; prints the machine load and a Markdown table with ratios (sklearn time /
# epsilab time, so > 1 means epsilab is faster). The machine may be shared: compare the ratios,
# not the absolute times. Needs scikit-learn (`pip install scikit-learn`).
#
#   scripts/lr-speed.sh            # dense workload at the issue's N = 2^20 (800 MB per copy)
#   EPSILAB_BENCH_DENSE_N=131072 scripts/lr-speed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export EPSILAB_BENCH_DENSE_N="${EPSILAB_BENCH_DENSE_N:-1048576}"
if ! python3 -c 'import sklearn' 2>/dev/null; then
    echo "scikit-learn is not installed (pip install scikit-learn): no peer to compare with" >&2
    exit 1
fi
rm -rf target/lr-peer
echo "load before: $(uptime)"
for w in adult xwindows dense gram trim; do
    cargo bench --locked --bench logistic -- "lr_$w" 2>&1 | grep -E "^lr_|time:|^(adult|xwindows|dense|gram|trim)" || true
    python3 benches/peer/sklearn_lr.py "$w"
done
cargo bench --locked --bench naive_bayes -- algorithm1_adult/fit_and_predict 2>&1 | grep -E "^algorithm1|time:" || true
echo "load after: $(uptime)"
python3 benches/peer/sklearn_lr.py table
