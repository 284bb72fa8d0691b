#!/usr/bin/env python3
"""diffprivlib 0.6.6 peer of benches/estimators.rs: one private fit, median seconds of 15
runs (k-means 5, PCA 1) (one thread), on the same data and eps as the Rust side, prints three lines
`NAME SECONDS`:

* linreg: diffprivlib.models.LinearRegression(epsilon=1, bounds_X, bounds_y) on diabetes
  (442 x 10, the catalog's public bounds);
* pca: diffprivlib.models.PCA(n_components=5, epsilon=1, bounds=(0, 16), data_norm=128, the
  public norm bound 16 * sqrt(64)) on digits (1797 x 64); one run only (a fit takes minutes);
* kmeans: diffprivlib.models.KMeans(n_clusters=10, epsilon=1, bounds=(0, 16)) on digits.

    python3 benches/peer/diffprivlib_estimators.py
"""
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import gzip
import time
import warnings

import numpy as np
from diffprivlib.models import KMeans, LinearRegression, PCA

warnings.filterwarnings("ignore")
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "datasets")
LO = [0, 1, 10, 40, 50, 0, 0, 0, 2, 40]
HI = [100, 2, 60, 160, 400, 300, 120, 12, 8, 160]


def load(rel):
    with gzip.open(os.path.join(ROOT, rel + ".gz"), "rt") as f:
        return np.loadtxt(f, delimiter=",", skiprows=1)


def median_time(fit, runs=15):
    times = []
    for seed in range(runs):
        t = time.perf_counter()
        fit(seed)
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def main():
    dia = load("diabetes/diabetes.csv")
    x, y = dia[:, :10], dia[:, 10]
    dig = load("digits/digits.csv")[:, :64]
    lr = lambda s: LinearRegression(
        epsilon=1.0, bounds_X=(LO, HI), bounds_y=(0, 400), random_state=s
    ).fit(x, y)
    pca = lambda s: PCA(
        n_components=5, epsilon=1.0, bounds=(0, 16), data_norm=128.0, random_state=s
    ).fit(dig)
    km = lambda s: KMeans(n_clusters=10, epsilon=1.0, bounds=(0, 16), random_state=s).fit(dig)
    for name, fit, runs in (("linreg", lr, 15), ("pca", pca, 1), ("kmeans", km, 5)):
        print(name, median_time(fit, runs), flush=True)


if __name__ == "__main__":
    main()
