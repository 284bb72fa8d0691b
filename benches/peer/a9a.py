"""a9a's training file for the numpy peers: each row's feature indices (0-based) and its label
in {-1, +1}. The data folder is $EPSILAB_DATA, else ./datasets (a9a/a9a or a9a/a9a.gz)."""
import gzip
import os

N_FEATURES = 123


def rows(folder=None):
    folder = folder or os.environ.get("EPSILAB_DATA", "datasets")
    base = os.path.join(folder, "a9a", "a9a")
    opener = (open, base) if os.path.exists(base) else (gzip.open, base + ".gz")
    ones, labels = [], []
    with opener[0](opener[1], "rt") as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            labels.append(1.0 if float(parts[0]) > 0 else -1.0)
            ones.append([int(p.split(":")[0]) - 1 for p in parts[1:]])
    return ones, labels
