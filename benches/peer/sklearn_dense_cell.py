#!/usr/bin/env python3
"""scikit-learn peer of benches/dense_cell.rs: the same rows (written by the bench to
target/dense-cell/{x_train,y_train,x_test,y_test}.npy), the same objective
(C = 1 / lambda = 1, no intercept: sum of log-losses + ||w||^2 / 2, which is N times epsilab's
mean log-loss + lambda / (2N) ||w||^2), scikit-learn's default solver (lbfgs) and tolerance
(1e-4), its default threads (all cores). Times fit + predict on the test rows, as the harness
cell fits and predicts, and one matrix-vector product over the training rows on one BLAS thread
(the memory-bound pass a gradient method repeats). Prints `key value` lines:

    sklearn_cell_s         median seconds of fit + predict over REPS runs
    sklearn_iterations     L-BFGS iterations of the last fit
    sklearn_test_accuracy  its test accuracy
    sklearn_relative_gradient  ||grad F(w)|| / ||grad F(0)|| at the fitted w (2-norms; the
                           accuracy its default tolerance reached, in the measure of epsilab's
                           `tolerance`: a ratio, so the objective's scale N cancels)
    gemv_1thread_s         median seconds of x_train @ w on one BLAS thread
    gemv_1thread_pair_s    the same with two such products running at once (both cores busy)

    python3 benches/peer/sklearn_dense_cell.py [REPS]
"""
import os
import sys
import time
import warnings

import numpy as np

ROWS = os.path.join("target", "dense-cell")


def median_time(f, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def relative_gradient(x, y, w):
    """||grad F(w)|| / ||grad F(0)|| for F(w) = sum_i log(1 + exp(-s_i x_i.w)) + ||w||^2 / 2."""
    s = 2.0 * y - 1.0

    def grad(v):
        return -(x.T @ (s / (1.0 + np.exp(s * (x @ v))))) + v

    return float(np.linalg.norm(grad(w)) / np.linalg.norm(grad(np.zeros_like(w))))


def gemv_times(x, reps):
    """One-thread x @ w alone, then two at once (threadpoolctl limits BLAS to one thread)."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    w = np.ones(x.shape[1])
    half = x.shape[0] // 2
    with threadpool_limits(1):
        alone = median_time(lambda: x @ w, reps)
        # Two products over halves, each a thread: numpy releases the GIL in BLAS.
        with ThreadPoolExecutor(2) as pool:
            pair = median_time(
                lambda: list(pool.map(lambda s: x[s] @ w, [slice(0, half), slice(half, None)])),
                reps,
            )
    return alone, 2 * pair


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    from sklearn.linear_model import LogisticRegression

    warnings.filterwarnings("ignore")
    x, y, xt, yt = (
        np.load(os.path.join(ROWS, f"{name}.npy"))
        for name in ("x_train", "y_train", "x_test", "y_test")
    )
    model = LogisticRegression(C=1.0, fit_intercept=False)
    acc = []

    def cell():
        m = model.fit(x, y)
        acc.append(float((m.predict(xt) == yt).mean()))

    cell()  # warm-up: page in the rows
    s = median_time(cell, reps)
    alone, pair = gemv_times(x, 7)
    print(f"sklearn_cell_s {s}")
    print(f"sklearn_iterations {int(model.n_iter_[0])}")
    print(f"sklearn_test_accuracy {acc[-1]}")
    print(f"sklearn_relative_gradient {relative_gradient(x, y, model.coef_[0])}")
    print(f"gemv_1thread_s {alone}")
    print(f"gemv_1thread_pair_s {pair}")


if __name__ == "__main__":
    main()
