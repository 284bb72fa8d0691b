#!/usr/bin/env python3
"""Peers of benches/release_scale.rs, one thread: for each n given on the command line, the
median seconds of 15 runs of (a) numpy's one pass `np.clip(x, 0, 1).mean()` plus one Laplace
draw (the leanest private mean numpy can do), (b) diffprivlib's `tools.mean` with bounds
(0, 1) at eps = 0.1, (c) numpy's `np.sort` of the column (the median's reference), and (d)
diffprivlib's `tools.median` (n <= 10^5 only: it is slow). Prints one JSON object.

    python3 benches/peer/numpy_release_scale.py 10000 100000 1000000
"""
import os
import sys

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import json
import time
import warnings

import numpy as np

EPSILON = 0.1


def median_time(f, runs=15):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def main():
    warnings.filterwarnings("ignore")
    from diffprivlib import tools

    rng = np.random.default_rng(0)
    out = {}
    for n in map(int, sys.argv[1:]):
        x = rng.random(n)

        def lean_mean():
            return np.clip(x, 0.0, 1.0).mean() + rng.laplace(0.0, 1.0 / (EPSILON * n))

        row = {
            "numpy_mean": median_time(lean_mean),
            "diffprivlib_mean": median_time(
                lambda: tools.mean(x, epsilon=EPSILON, bounds=(0.0, 1.0))
            ),
            "numpy_sort": median_time(lambda: np.sort(x)),
        }
        if n <= 100_000:
            row["diffprivlib_median"] = median_time(
                lambda: tools.median(x, epsilon=EPSILON, bounds=(0.0, 1.0)), runs=5
            )
        out[str(n)] = row
    print(json.dumps(out))


if __name__ == "__main__":
    main()
