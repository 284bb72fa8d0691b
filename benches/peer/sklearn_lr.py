#!/usr/bin/env python3
"""scikit-learn peer of benches/logistic.rs: the same fits, timed the same way (median of
repeated runs), one BLAS thread. Prints one line per workload: median seconds and the
objective J = mean log-loss + lambda/(2N) ||w||^2 it reached (compare with the Rust bench's
stderr), and appends it as JSON to target/lr-peer/sklearn.jsonl. Needs scikit-learn
(pip install scikit-learn) and the datasets under $EPSILAB_DATA (else ./datasets; plain or .gz).
`scripts/lr-speed.sh` runs it beside the criterion benches and prints the ratios
(`table` mode below).

    python3 benches/peer/sklearn_lr.py [adult|xwindows|dense|gram|trim ...]
    python3 benches/peer/sklearn_lr.py table
"""
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import glob
import json
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
OUT = os.path.join("target", "lr-peer")


def data_file(rel):
    """A dataset file, plain or gzip-compressed (sklearn reads .gz itself)."""
    path = os.path.join(DATA, rel)
    return path if os.path.exists(path) else path + ".gz"


def record(workload, seconds, **extra):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "sklearn.jsonl"), "a") as f:
        f.write(json.dumps({"workload": workload, "seconds": seconds, **extra}) + "\n")


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
    x, y = load_svmlight_file(data_file("a9a/a9a"), n_features=123)
    x = sparse.csr_matrix(x)
    sq = np.asarray(x.multiply(x).sum(axis=1)).ravel()
    x = sparse.diags(1.0 / np.sqrt(np.maximum(14.0, sq))) @ x
    y = np.where(y > 0, 1.0, -1.0)
    for tol in (1e-8, 1e-4):
        t, m = median_time(lambda: fit(x, y, 1.0, tol), 20)
        w = m.coef_.ravel()
        print(f"adult lbfgs tol {tol:g}: {t * 1e3:.2f} ms, iterations {m.n_iter_[0]}, "
              f"J = {objective(x, y, w, 1.0):.15f}")
        record(f"adult_tol_{tol:g}", t, iterations=int(m.n_iter_[0]),
               objective=objective(x, y, w, 1.0))


def xwindows():
    xs, ys = [], []
    for f in ("xwindows_train.libsvm", "xwindows_test.libsvm"):
        x, y = load_svmlight_file(data_file(os.path.join("xwindows", f)), n_features=600)
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
        record(f"xwindows_tol_{tol:g}", t)


def dense():
    n = int(os.environ.get("EPSILAB_BENCH_DENSE_N", 1 << 17))
    d = 100
    rng = np.random.default_rng(0)
    w = rng.standard_normal(d)
    x = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(x @ w))), 1.0, -1.0)
    t, m = median_time(lambda: fit(x, y, 1.0, 1e-8), 5)
    print(f"dense {n} x {d} lbfgs tol 1e-8: {t * 1e3:.1f} ms, iterations {m.n_iter_[0]}")
    record(f"dense_{n}_tol_1e-08", t, iterations=int(m.n_iter_[0]))


def gram():
    """numpy's weighted Gram X^T diag(w) X on the bench's shape (one BLAS thread; numpy's
    BLAS fuses multiply-adds and reorders sums, which epsilab's kernel may not)."""
    n, d = 1 << 15, 1000
    rng = np.random.default_rng(0)
    x = rng.random((n, d)) * 2 - 1
    w = rng.random(n)
    t, _ = median_time(lambda: x.T @ (w[:, None] * x), 5)
    print(f"gram {n} x {d}: {t * 1e3:.1f} ms")
    record(f"gram_{n}_{d}", t)


def trim():
    """The functional mechanism's trimming step with numpy: eigh (LAPACK dsyevd, one BLAS
    thread), then the minimiser on the eigenvectors whose eigenvalues exceed 1e-12 of the
    largest |eigenvalue|, on the bench's shapes (random symmetric, entries in [-1, 1])."""
    rng = np.random.default_rng(0)
    for d in (1000, 1500):
        a = np.triu(rng.random((d, d)) * 2 - 1)
        a = a + np.triu(a, 1).T
        b = rng.random(d) - 0.5

        def solve():
            w, v = np.linalg.eigh(a)
            keep = w > 1e-12 * np.abs(w).max()
            vk = v[:, keep]
            return vk @ ((vk.T @ b) / w[keep])

        t, _ = median_time(solve, 5)
        print(f"trim d = {d}: {t * 1e3:.1f} ms")
        record(f"trim_{d}", t)


def criterion(group, bench):
    """Median seconds of a criterion bench (target/criterion/<group>/<bench>/new)."""
    path = os.path.join("target", "criterion", group, bench, "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"] * 1e-9
    except OSError:
        return None


def table():
    """docs/performance.md's timing table from the last run: epsilab (criterion medians) beside
    scikit-learn (this script's medians), with ratios sklearn / epsilab."""
    peer = {}
    path = os.path.join(OUT, "sklearn.jsonl")
    if os.path.exists(path):
        for line in open(path):
            r = json.loads(line)
            peer[r["workload"]] = r
    ours = {}
    its = os.path.join(OUT, "epsilab-iterations.txt")
    if os.path.exists(its):
        for line in open(its):
            name, n = line.split()
            ours[name] = n

    def fmt(t):
        return "—" if t is None else (f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s")

    def ratio(p, e):
        return "—" if p is None or e is None else f"{p / e:.1f}×"

    rows = []
    sk = {k: v["seconds"] for k, v in peer.items()}
    for solver in ("newton", "newton_cg", "lbfgs"):
        e = criterion("lr_adult", f"{solver}_tol_1e-8")
        it = ours.get(f"adult_{solver}_1e-8", "?")
        rows.append((f"Adult λ = 1, tol 1e-8, {solver} ({it} it.)", e,
                     sk.get("adult_tol_1e-08"), sk.get("adult_tol_0.0001")))
    for mech in ("output_perturbation", "objective_perturbation"):
        rows.append((f"Adult {mech.replace('_', ' ')}, tol 1e-8",
                     criterion("lr_adult", f"{mech}_tol_1e-8"),
                     sk.get("adult_tol_1e-08"), sk.get("adult_tol_0.0001")))
    rows.append(("XWindowsDoc T4.2 trial (46 fits), auto, tol 1e-10",
                 criterion("lr_xwindows", "t4_2_trial_auto_tol_1e-10"),
                 sk.get("xwindows_tol_1e-08"), sk.get("xwindows_tol_0.0001")))
    dense = sorted(glob.glob(os.path.join("target", "criterion", "lr_dense", "n_*_auto_tol_1e-8")))
    for path in dense:
        n = os.path.basename(path).split("_")[1]
        for solver in ("auto", "newton_cg"):
            e = criterion("lr_dense", f"n_{n}_{solver}_tol_1e-8")
            if e is not None:
                rows.append((f"Dense {n} x 100, tol 1e-8, {solver}", e,
                             sk.get(f"dense_{n}_tol_1e-08"), None))
    print("| workload | epsilab | sklearn lbfgs, equal tol | ratio | sklearn tol 1e-4 | ratio |")
    print("|---|---|---|---|---|---|")
    e = criterion("lr_gram", "n_32768_d_1000")
    if e is not None:
        rows.append(("Weighted Gram X^T diag(w) X, 32768 x 1000 (numpy)", e,
                     sk.get("gram_32768_1000"), None))
    for d in (1000, 1500):
        e = criterion("lr_trim", f"d_{d}")
        if e is not None:
            rows.append((f"FM trimming solve, D = {d} (numpy eigh)", e, sk.get(f"trim_{d}"), None))
    for name, e, p8, p4 in rows:
        print(f"| {name} | {fmt(e)} | {fmt(p8)} | {ratio(p8, e)} | {fmt(p4)} | {ratio(p4, e)} |")
    nb = criterion("algorithm1_adult", "fit_and_predict")
    print(f"| Private NB (Algorithm 1) fit + predict, Adult | {fmt(nb)} | | | | |")


if __name__ == "__main__":
    todo = sys.argv[1:] or ["adult", "xwindows", "dense", "gram", "trim"]
    for name in todo:
        {"adult": adult, "xwindows": xwindows, "dense": dense, "gram": gram, "trim": trim,
         "table": table}[name]()
