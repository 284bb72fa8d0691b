"""epsilab's external-program protocol (docs/external.md), the Python side: read the request,
load the CSV files, print the reply. Shared by the diffprivlib examples beside it."""
import csv
import json
import sys

import numpy as np


def request():
    """The one JSON request epsilab sends on standard input."""
    return json.load(sys.stdin)


def require_relation(req, relation, why):
    """Exit with an error unless the run's neighbouring relation is the one the library proves."""
    if req["relation"] != relation:
        sys.exit(f"{why}: proven for {relation} neighbours, the run asks for {req['relation']}")


def load_split(path):
    """(labels as written, features as a float matrix) of a `label,x1,...,xD` file."""
    with open(path, newline="") as f:
        text = f.read()
    if '"' in text:  # a quoted label: the csv module's parser
        rows = list(csv.reader(text.splitlines()))[1:]
        labels = np.array([r[0] for r in rows])
        x = np.array([[float(v) for v in r[1:]] for r in rows], dtype=float)
        return labels, x
    lines = text.splitlines()[1:]
    cut = [line.split(",", 1) for line in lines]
    labels = np.array([c[0] for c in cut])
    d = cut[0][1].count(",") + 1 if cut and len(cut[0]) > 1 else 0
    x = np.array(",".join(c[1] for c in cut).split(","), dtype=float).reshape(len(lines), d)
    return labels, x


def load_column(path):
    """The values of an `x1` file (a release's column)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return np.array([float(r[0]) for r in rows[1:]], dtype=float)


def declared(accountant, name, mechanism):
    """One ledger step with the spend diffprivlib's own accountant recorded."""
    eps, delta = accountant.total()
    step = {"name": name, "mechanism": mechanism, "epsilon": float(eps)}
    if delta > 0:
        step["delta"] = float(delta)
    return [step]


def reply(**fields):
    """Prints the one JSON reply on standard output."""
    json.dump(fields, sys.stdout)
    sys.stdout.write("\n")
