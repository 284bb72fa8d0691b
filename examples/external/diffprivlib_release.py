#!/usr/bin/env python3
"""diffprivlib's mean or median of a bounded column as an epsilab external release.

params.query: "mean" (diffprivlib.tools.mean: truncated Laplace, sensitivity (hi - lo) / n
with the column's own length n) or "median" (diffprivlib.tools.median: the exponential
mechanism over the sorted values). The request's `bounds` are the public bounds. diffprivlib
proves both for neighbours that replace one value (n is public), so the program refuses any
other relation. The ledger it declares is the spend its BudgetAccountant recorded.
"""
import warnings

from protocol import declared, load_column, reply, request, require_relation

warnings.simplefilter("ignore")

from diffprivlib import BudgetAccountant  # noqa: E402
from diffprivlib.tools import mean, median  # noqa: E402

req = request()
query = req["params"]["query"]
require_relation(req, "replace_one", f"diffprivlib's {query}")
values = load_column(req["train"])
lo, hi = req["bounds"]
accountant = BudgetAccountant()
tools = {"mean": mean, "median": median}
if query not in tools:
    raise SystemExit(f"unknown params.query {query!r}: mean or median")
value = tools[query](values, epsilon=req["epsilon"], bounds=(lo, hi), random_state=req["seed"],
                     accountant=accountant)
reply(release=float(value),
      ledger=declared(accountant, "release", f"diffprivlib tools.{query}"))
