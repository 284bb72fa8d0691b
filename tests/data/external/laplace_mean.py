#!/usr/bin/env python3
"""A correct external release for epsilab's tests: the mean of a column clamped to the public
`bounds`, over the public n given in `params.n`, plus Laplace((hi - lo) / (n eps)) noise drawn
from the request's seed (standard library only). Under replace-one the sensitivity is
(hi - lo) / n; it declares that step."""
import csv
import json
import math
import random
import sys

req = json.load(sys.stdin)
lo, hi = req["bounds"]
n = req["params"]["n"]
with open(req["train"]) as f:
    r = csv.reader(f)
    assert next(r) == ["x1"]
    xs = [min(hi, max(lo, float(row[0]))) for row in r]
eps = req["epsilon"]
sens = (hi - lo) / n
rng = random.Random(req["seed"])
u = rng.random() - 0.5
noise = -sens / eps * math.copysign(1.0, u) * math.log(1 - 2 * abs(u))
print(json.dumps({"release": sum(xs) / n + noise,
                  "ledger": [{"name": "release", "mechanism": "laplace", "epsilon": eps,
                              "sensitivity": sens}]}))
