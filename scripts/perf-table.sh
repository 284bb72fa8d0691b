#!/usr/bin/env bash
# Issue 52's table of ratios (peer time / epsilab time, > 1 means epsilab is faster), every
# row measured in this run beside its peer: runs each bench that has a peer, each bench
# appending its comparisons to target/perf/ratios.jsonl (benches/common/ratio.rs), then prints
# the Markdown table. Needs python3 with numpy, scikit-learn and diffprivlib for the peers
# (a bench whose peer cannot run says SKIP and adds no row). The machine may be shared:
# compare ratios, and check the load printed before and after.
#
#   scripts/perf-table.sh            # every bench with a peer (3.5 minutes on 2 idle cores)
#   scripts/perf-table.sh --write    # also replace the table in docs/performance.md
#   BENCHES="naive_bayes dp_sgd" scripts/perf-table.sh
set -euo pipefail
cd "$(dirname "$0")/.."
benches=${BENCHES:-"naive_bayes dp_sgd release release_scale classifiers estimators dense_cell"}
mkdir -p target/perf
rm -f target/perf/ratios.jsonl target/perf/skips.txt
before=$(uptime)
for b in $benches; do
    echo "== cargo bench --bench $b" >&2
    # Short criterion phases: the ratios come from each bench's own timed runs after them.
    # A peer that cannot run prints `SKIP peer <script>: <reason>` on stdout: kept, so that
    # the table says which rows are missing and why (read once the bench has finished).
    cargo bench --locked --bench "$b" -- --warm-up-time 1 --measurement-time 3 \
        | tee "target/perf/$b.out" >&2
    { grep '^SKIP' "target/perf/$b.out" || true; } | sed "s|^|$b: |" >> target/perf/skips.txt
done
after=$(uptime)
python3 - "$before" "$after" "${1:-}" <<'PY'
import json, os, sys, datetime, platform, re
before, after, mode = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [json.loads(l) for l in open("target/perf/ratios.jsonl")] if os.path.exists("target/perf/ratios.jsonl") else []
skips = [l.strip() for l in open("target/perf/skips.txt")] if os.path.exists("target/perf/skips.txt") else []
def t(s):
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.2f} µs"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
out = [f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by `scripts/perf-table.sh` on {cpu}; load before: {before.split('load average:')[-1].strip()}, after: {after.split('load average:')[-1].strip()}.", "",
       "| case | what | epsilab | peer | peer time | peer / epsilab | target |", "|---|---|---|---|---|---|---|"]
for r in rows:
    out.append(f"| `{r['case']}` | {r['what']} | {t(r['epsilab_s'])} | {r['peer']} | {t(r['peer_s'])} | {r['ratio']:.2f} | {r['target'] or ''} |")
if skips:
    out += ["", "Rows missing from this run (a peer that did not run):", ""] + [f"- `{s}`" for s in skips]
table = "\n".join(out)
print(table)
if mode == "--write":
    path = "docs/performance.md"
    doc = open(path).read()
    begin, end = "<!-- perf-table:begin -->", "<!-- perf-table:end -->"
    if begin not in doc or end not in doc:
        sys.exit(f"{path}: no {begin} ... {end} block to replace")
    head, rest = doc.split(begin, 1)
    doc = head + begin + "\n" + table + "\n" + end + rest.split(end, 1)[1]
    open(path, "w").write(doc)
    print(f"wrote the table into {path}", file=sys.stderr)
# A peer that failed (not one that is absent) fails the script, after the table.
failed = [s for s in skips if ": it failed" in s]
if failed:
    sys.exit(f"{len(failed)} peer(s) failed: see the list under the table")
PY
