#!/usr/bin/env python3
"""numpy peer of benches/dp_sgd.rs: one DP-SGD epoch on Adult (a9a train, 32561 x 123, rows
scaled by 1/max(sqrt(14), ||x||)), logistic loss, Poisson sampling with q = 256/32561,
per-example clipping to C = 1, Gaussian noise sigma C with sigma = 1, eta = 1, lambda = 1;
ceil(1/q) = 128 steps per epoch, the same algorithm as epsilab's DpSgdRun::step.

Two numpy epochs, both on a dense float64 design with one BLAS thread:
- the textbook vectorised way: a Binomial batch size and a uniform subset per step (the Poisson
  sample's law), per-example gradients as a (batch x 123) array;
- the leanest we could write (issue 52): row norms computed once, the clipped gradient sum as
  one c @ X_b (no per-example gradient array), the Poisson sample by Geometric(q) gaps (O(batch)
  per step, as epsilab draws it).
Prints the median seconds per epoch over REPS epochs (after 3 warm-up epochs) as
`numpy_dp_sgd_epoch_s <value>` and `numpy_lean_dp_sgd_epoch_s <value>`, and the mean CPU seconds
per epoch as `numpy_dp_sgd_epoch_cpu_s <value>` and `numpy_lean_dp_sgd_epoch_cpu_s <value>`.
Needs numpy only; the data folder is $EPSILAB_DATA, else ./datasets (a9a/a9a or a9a/a9a.gz).

    python3 benches/peer/numpy_dp_sgd.py [REPS]
"""
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import math
import sys
import time

import numpy as np

import a9a

N_FEATURES = a9a.N_FEATURES


def load_a9a(folder):
    ones, labels = a9a.rows(folder)
    x = np.zeros((len(ones), N_FEATURES))
    for i, row in enumerate(ones):
        x[i, row] = 1.0
    sq = x.sum(axis=1)
    x /= np.sqrt(np.maximum(14.0, sq))[:, None]
    return x, np.array(labels)


def epoch(x, y, theta, rng, q, steps, clip=1.0, sigma=1.0, eta=1.0, lam=1.0):
    n = x.shape[0]
    decay = lam / n
    for _ in range(steps):
        # Poisson sampling: a Binomial(n, q) size, then a uniform subset of that size
        # (Generator.choice without replacement is O(size) here, not O(n)).
        idx = rng.choice(n, rng.binomial(n, q), replace=False)
        xb, yb = x[idx], y[idx]
        m = yb * (xb @ theta)
        d = -1.0 / (1.0 + np.exp(m))  # logistic loss derivative at the margin
        g = (d * yb)[:, None] * xb
        norms = np.abs(d) * np.sqrt(np.einsum("ij,ij->i", xb, xb))
        g *= np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
        s = g.sum(axis=0) + sigma * clip * rng.standard_normal(theta.shape[0])
        theta -= eta * (s / (q * n) + decay * theta)
    return theta


def poisson_rows(rng, n, q):
    """The rows a Poisson(q) sample keeps: gaps between kept rows are Geometric(q) (from 1)."""
    batch = max(16, int(1.5 * n * q))
    idx = np.cumsum(rng.geometric(q, size=batch)) - 1
    while idx[-1] < n:
        more = np.cumsum(rng.geometric(q, size=batch)) + idx[-1]
        idx = np.concatenate([idx, more])
    return idx[idx < n]


def lean_epoch(x, y, norms, theta, rng, q, steps, clip=1.0, sigma=1.0, eta=1.0, lam=1.0):
    n = x.shape[0]
    decay = lam / n
    for _ in range(steps):
        idx = poisson_rows(rng, n, q)
        xb, yb = x[idx], y[idx]
        d = -1.0 / (1.0 + np.exp(yb * (xb @ theta)))
        c = (d * yb) * np.minimum(1.0, clip / np.maximum(np.abs(d) * norms[idx], 1e-300))
        s = c @ xb + sigma * clip * rng.standard_normal(theta.shape[0])
        theta -= eta * (s / (q * n) + decay * theta)
    return theta


def timed(run, reps):
    """Median wall seconds and mean CPU seconds per call of `run` over `reps` calls, after 3."""
    for _ in range(3):
        run()
    times = []
    cpu0 = time.process_time()
    for _ in range(reps):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), (time.process_time() - cpu0) / reps


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    x, y = load_a9a(os.environ.get("EPSILAB_DATA", "datasets"))
    n = x.shape[0]
    q = 256.0 / n
    steps = math.ceil(1.0 / q)
    rng = np.random.default_rng(0)
    theta = np.zeros(N_FEATURES)
    wall, cpu = timed(lambda: epoch(x, y, theta, rng, q, steps), reps)
    acc = float(np.mean((x @ theta > 0) == (y > 0)))
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    lean = np.zeros(N_FEATURES)
    lean_wall, lean_cpu = timed(lambda: lean_epoch(x, y, norms, lean, rng, q, steps), reps)
    lean_acc = float(np.mean((x @ lean > 0) == (y > 0)))
    print(f"numpy: {n} x {x.shape[1]}, q = {q:.6f}, {steps} steps/epoch, train accuracy {acc:.4f} (lean {lean_acc:.4f})")
    print(f"numpy_dp_sgd_epoch_s {wall:.6e}")
    print(f"numpy_dp_sgd_epoch_cpu_s {cpu:.6e}")
    print(f"numpy_lean_dp_sgd_epoch_s {lean_wall:.6e}")
    print(f"numpy_lean_dp_sgd_epoch_cpu_s {lean_cpu:.6e}")

if __name__ == "__main__":
    main()
