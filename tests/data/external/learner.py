#!/usr/bin/env python3
"""A test learner for epsilab's external protocol (docs/external.md), standard library only.

It predicts the label of the first feature's value (x1 = 1 -> the first class listed in
`classes`, else the second) and declares one Laplace step spending `spend` x epsilon.
`params.mode` makes it misbehave on purpose, one way per error epsilab must report:
exit, sleep, garbage, short, unknown; `fail_above` fails only when epsilon exceeds it;
`canary` predicts the label of a training row whose features are all 1 (a membership leak the
black-box audit must catch) and the other class when there is none.
`params.dump` (a folder) receives each request as sent, named by its epsilon and seed.
"""
import csv
import json
import os
import sys
import time

raw = sys.stdin.read()
req = json.loads(raw)
params = req["params"]
mode = params.get("mode", "ok")
eps = req["epsilon"]
if params.get("dump"):
    name = "request-%s-%s.json" % (eps, req["seed"])
    with open(os.path.join(params["dump"], name), "w") as f:
        f.write(raw)
if mode == "exit" or (eps is not None and eps > params.get("fail_above", float("inf"))):
    sys.stderr.write("warming up\nTraceback: something broke in the learner\n")
    sys.exit(3)
if mode == "sleep":
    time.sleep(60)
if mode == "garbage":
    print("this is not json")
    sys.exit(0)

def rows(path):
    with open(path) as f:
        r = csv.reader(f)
        header = next(r)
        assert header[0] == "label" and header[1] == "x1", header
        return [row for row in r]

classes = req["classes"]
train, test = rows(req["train"]), rows(req["test"])
predict = lambda row: classes[0] if float(row[1]) == 1.0 else classes[1]
if mode == "canary":
    seen = [row[0] for row in train if all(float(v) == 1.0 for v in row[1:])]
    predict = lambda row: seen[0] if seen else classes[0]
predictions = [predict(row) for row in test]
if mode == "short":
    predictions = predictions[1:]
if mode == "unknown":
    predictions[0] = "banana"
reply = {
    "predictions": predictions,
    "metrics": {"train_rows": len(train), "seed_mod_7": req["seed"] % 7},
}
if params.get("train_predictions", False):
    reply["train_predictions"] = [predict(row) for row in train]
if eps is not None:
    spend = params.get("spend", 1.0)
    reply["ledger"] = [{"name": "train", "mechanism": "laplace (declared)",
                        "epsilon": spend * eps, "sensitivity": 1.0}]
print(json.dumps(reply))
