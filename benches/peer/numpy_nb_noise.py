#!/usr/bin/env python3
"""numpy peer of benches/naive_bayes.rs's `fit` (issue 52: NB noise + threshold): Algorithm 1's
mechanism and post-processing on Adult's class counts (a9a train, 2 classes x 123 features), as
epsilab's `PrivateNbParams::fit_counts` computes them: Laplace noise on every on- and off-count,
the threshold t, add-alpha smoothing theta = (m1 + a) / (m1 + m0 + 2a) with m = max(noisy, t), the
class weights, and the model's log tables (log prior, log(1 - theta) summed per class, log theta -
log(1 - theta)). The leanest numpy we could write: whole-array operations, no Python loop.

Prints the median seconds per fit over 15 batches of 200 fits (after a warm-up batch) as
`numpy_nb_fit_s <value>`. Needs numpy only; the data folder is $EPSILAB_DATA, else ./datasets.

    python3 benches/peer/numpy_nb_noise.py
"""
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import time

import numpy as np

import a9a

N_FEATURES = a9a.N_FEATURES


def class_counts(folder):
    """On-counts per (class, feature) and class sizes of a9a's training file."""
    on = np.zeros((2, N_FEATURES))
    size = np.zeros(2)
    for row, label in zip(*a9a.rows(folder)):
        c = 1 if label > 0 else 0
        size[c] += 1
        on[c, row] += 1
    return on, size[:, None] - on


def fit(on, off, rng, scale, t, a):
    noisy_on = on + rng.laplace(0.0, scale, on.shape)
    noisy_off = off + rng.laplace(0.0, scale, off.shape)
    m1 = np.maximum(noisy_on, t)
    m0 = np.maximum(noisy_off, t)
    theta = (m1 + a) / (m1 + m0 + 2.0 * a)
    weight = (m1 + m0).mean(axis=1)
    log_prior = np.log(np.maximum(weight / weight.sum(), np.finfo(float).tiny))
    log_off = np.log(1.0 - theta)
    return log_prior + log_off.sum(axis=1), np.log(theta) - log_off


def main():
    on, off = class_counts(os.environ.get("EPSILAB_DATA", "datasets"))
    rng = np.random.default_rng(0)
    # As the bench's `PrivateNbParams::new(0.1)` under `Ledger::default()` (add/remove): the
    # on- and off-counts of d features have L1 sensitivity d, and the default threshold is
    # the noise's 65% quantile, -scale ln(2 (1 - 0.65)).
    epsilon, a = 0.1, 1.0
    scale = N_FEATURES / epsilon
    t = -scale * np.log(2.0 * (1.0 - 0.65))
    batches = []
    for b in range(16):
        start = time.perf_counter()
        for _ in range(200):
            fit(on, off, rng, scale, t, a)
        if b > 0:
            batches.append((time.perf_counter() - start) / 200)
    print(f"numpy: Algorithm 1 fit on {int(on.sum() + off.sum()) // N_FEATURES} rows x {N_FEATURES}")
    print(f"numpy_nb_fit_s {float(np.median(batches)):.6e}")


if __name__ == "__main__":
    main()
