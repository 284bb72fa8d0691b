#!/usr/bin/env python3
"""scikit-learn peer of benches/logistic.rs: the same fits, timed the same way (median of
repeated runs), one BLAS thread. Prints one line per workload: median seconds and the
objective J = mean log-loss + lambda/(2N) ||w||^2 it reached (compare with the Rust bench's
stderr). Needs scikit-learn (pip install scikit-learn) and the datasets under $EPSILAB_DATA
(else ./datasets).

    python3 benches/peer/sklearn_lr.py [adult|xwindows|dense ...]
"""
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import sys
import time
import warnings

import numpy as np
from scipy import sparse
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

warnings.filterwarnings("ignore", category=ConvergenceWarning)
DATA = os.environ.get("EPSILAB_DATA", "datasets")


def median_time(f, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def objective(x, y, w, lam):
    z = y * (x @ w)
    return float(np.mean(np.logaddexp(0.0, -z)) + lam / (2 * x.shape[0]) * (w @ w))


def fit(x, y, lam, tol):
    # sklearn: C sum loss + ||w||^2 / 2 = N C (J with lambda = 1 / C).
    m = LogisticRegression(C=1.0 / lam, tol=tol, fit_intercept=False, max_iter=100_000)
    return m.fit(x, y)


def adult():
    x, y = load_svmlight_file(os.path.join(DATA, "a9a/a9a"), n_features=123)
    x = sparse.csr_matrix(x)
    sq = np.asarray(x.multiply(x).sum(axis=1)).ravel()
    x = sparse.diags(1.0 / np.sqrt(np.maximum(14.0, sq))) @ x
    y = np.where(y > 0, 1.0, -1.0)
    for tol in (1e-8, 1e-4):
        t, m = median_time(lambda: fit(x, y, 1.0, tol), 20)
        w = m.coef_.ravel()
        print(f"adult lbfgs tol {tol:g}: {t * 1e3:.2f} ms, iterations {m.n_iter_[0]}, "
              f"J = {objective(x, y, w, 1.0):.15f}")


def xwindows():
    xs, ys = [], []
    for f in ("xwindows_train.libsvm", "xwindows_test.libsvm"):
        x, y = load_svmlight_file(os.path.join(DATA, "xwindows", f), n_features=600)
        xs.append(x)
        ys.append(y)
    x = sparse.vstack(xs).toarray()[:900]
    y = np.concatenate(ys)[:900]
    keep = (x.sum(axis=0) > 0) & (x.sum(axis=0) < x.shape[0])
    x = (2.0 * x[:, keep] - 1.0) / np.sqrt(keep.sum())
    y = np.where(y == y.max(), 1.0, -1.0)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(y))
    folds = [perm[f::5] for f in range(5)]
    grid = [10.0**k for k in range(-3, 6)]

    def trial(tol):
        best = (-1, None)
        for lam in grid:
            hits = 0
            for f in range(5):
                va = folds[f]
                tr = np.setdiff1d(perm, va)
                m = fit(x[tr], y[tr], lam, tol)
                hits += int(np.sum((x[va] @ m.coef_.ravel() > 0) == (y[va] > 0)))
            if hits >= best[0]:
                best = (hits, lam)
        return fit(x, y, best[1], tol)

    for tol in (1e-4, 1e-8):
        t, _ = median_time(lambda: trial(tol), 5)
        print(f"xwindows T4.2 trial ({x.shape[0]} x {x.shape[1]}, 46 fits) tol {tol:g}: {t:.3f} s")


def dense():
    n = int(os.environ.get("EPSILAB_BENCH_DENSE_N", 1 << 17))
    d = 100
    rng = np.random.default_rng(0)
    w = rng.standard_normal(d)
    x = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(x @ w))), 1.0, -1.0)
    t, m = median_time(lambda: fit(x, y, 1.0, 1e-8), 5)
    print(f"dense {n} x {d} lbfgs tol 1e-8: {t * 1e3:.1f} ms, iterations {m.n_iter_[0]}")


if __name__ == "__main__":
    todo = sys.argv[1:] or ["adult", "xwindows", "dense"]
    for name in todo:
        {"adult": adult, "xwindows": xwindows, "dense": dense}[name]()
