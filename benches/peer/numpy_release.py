#!/usr/bin/env python3
"""numpy peer of benches/release.rs: the mean of n = 1000 uniform values in [0, 1] (clamped to
the public bounds), then 10^6 Laplace releases at eps = 0.1 (scale 1/(eps n): the mean's
sensitivity (hi - lo)/n with n public, as the bench's `Query::Mean { n }`) written into a
preallocated array. Prints the median seconds of 15 runs (one thread).

    python3 benches/peer/numpy_release.py
"""
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import time

import numpy as np

N, RELEASES, EPSILON = 1000, 1_000_000, 0.1


def main():
    data = np.random.default_rng(0).random(N)
    out = np.empty(RELEASES)
    times = []
    for seed in range(15):
        t = time.perf_counter()
        truth = np.clip(data, 0.0, 1.0).mean()
        rng = np.random.default_rng(seed)
        np.add(rng.laplace(0.0, 1.0 / (EPSILON * N), size=RELEASES), truth, out=out)
        times.append(time.perf_counter() - t)
    times.sort()
    print(times[len(times) // 2])


if __name__ == "__main__":
    main()
