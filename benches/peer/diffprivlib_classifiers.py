#!/usr/bin/env python3
"""diffprivlib 0.6.6 peer of benches/classifiers.rs: on breast cancer (the same 398 training
rows, read from the CSV the bench writes: class index, then the 30 features), with the catalog's
public bounds, time `GaussianNB(epsilon=1, bounds)` and
`RandomForestClassifier(n_estimators=10, max_depth=5, epsilon=1, bounds, classes=[0, 1])` fits.
Prints the median seconds of 15 fits of each, one per line (one thread).

    python3 benches/peer/diffprivlib_classifiers.py TRAIN.csv LO.csv HI.csv
"""
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import sys
import time
import warnings

import numpy as np
from diffprivlib.models import GaussianNB, RandomForestClassifier


def median_seconds(fit):
    times = []
    for seed in range(15):
        t = time.perf_counter()
        fit(seed)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main():
    warnings.simplefilter("ignore")
    a = np.loadtxt(sys.argv[1], delimiter=",")
    x, y = a[:, 1:], a[:, 0].astype(int)
    lo, hi = np.loadtxt(sys.argv[2], delimiter=","), np.loadtxt(sys.argv[3], delimiter=",")
    gnb = median_seconds(lambda s: GaussianNB(epsilon=1.0, bounds=(lo, hi), random_state=s).fit(x, y))
    forest = median_seconds(
        lambda s: RandomForestClassifier(
            n_estimators=10, max_depth=5, epsilon=1.0, bounds=(lo, hi), classes=[0, 1], random_state=s
        ).fit(x, y)
    )
    print(gnb)
    print(forest)


if __name__ == "__main__":
    main()
