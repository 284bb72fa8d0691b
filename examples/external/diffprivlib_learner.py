#!/usr/bin/env python3
"""diffprivlib's LogisticRegression or GaussianNB as an epsilab external learner.

params.model: "logistic_regression" (objective perturbation, Chaudhuri et al. 2011) or
"gaussian_nb" (Vaidya et al. 2013). Both are proven by diffprivlib for neighbours that
replace one example, so the program refuses any other relation. The ledger it declares is the
spend diffprivlib's BudgetAccountant recorded.

Logistic regression: params.scaling = "public" maps binary features 0/1 to -1/+1 and divides
every row by sqrt(D) (epsilab's public scaling), so data_norm = 1 holds without reading the
data; C = 1 / params.lambda (scikit-learn's C is epsilab's 1/lambda), no intercept.
GaussianNB: params.bounds = [lo, hi] for every feature (public), or the request's per-feature
bounds when the dataset declares them.
"""
import warnings

import numpy as np

from protocol import declared, load_split, reply, request, require_relation

warnings.simplefilter("ignore")  # diffprivlib warns on stderr; epsilab keeps only its tail

from diffprivlib import BudgetAccountant  # noqa: E402
from diffprivlib.models import GaussianNB, LogisticRegression  # noqa: E402

req = request()
params = req["params"]
model = params["model"]
require_relation(req, "replace_one", f"diffprivlib's {model}")
y_train, x_train = load_split(req["train"])
y_test, x_test = load_split(req["test"])
accountant = BudgetAccountant()
if model == "logistic_regression":
    if params.get("scaling") == "public":
        d = x_train.shape[1]
        x_train, x_test = (2 * x_train - 1) / np.sqrt(d), (2 * x_test - 1) / np.sqrt(d)
    clf = LogisticRegression(epsilon=req["epsilon"], data_norm=1.0, C=1.0 / params["lambda"],
                             fit_intercept=False, random_state=req["seed"],
                             accountant=accountant)
    mechanism = "diffprivlib LogisticRegression (objective perturbation)"
elif model == "gaussian_nb":
    if "bounds" in params:
        lo, hi = params["bounds"]
        bounds = (np.full(x_train.shape[1], lo), np.full(x_train.shape[1], hi))
    else:
        pairs = np.array(req["bounds"])
        bounds = (pairs[:, 0], pairs[:, 1])
    clf = GaussianNB(epsilon=req["epsilon"], bounds=bounds, random_state=req["seed"],
                     accountant=accountant)
    mechanism = "diffprivlib GaussianNB (Vaidya et al. 2013)"
else:
    raise SystemExit(f"unknown params.model {model!r}: logistic_regression or gaussian_nb")
clf.fit(x_train, y_train)
reply(predictions=clf.predict(x_test).tolist(),
      train_predictions=clf.predict(x_train).tolist(),
      ledger=declared(accountant, "train", mechanism))
