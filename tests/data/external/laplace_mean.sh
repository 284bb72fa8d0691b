#!/bin/sh
# A correct external release in POSIX sh and awk: the mean of ten values in [0, 1] (n = 10,
# public) plus Laplace(1 / (n eps)) noise seeded by the request's seed; eps-DP under
# replace-one, and it declares that step. (awk's rand() is a weak generator, fine for a test.)
req=$(cat)
eps=$(printf '%s' "$req" | sed -n 's/.*"epsilon":\([0-9.e-]*\).*/\1/p')
seed=$(printf '%s' "$req" | sed -n 's/.*"seed":\([0-9]*\).*/\1/p')
awk -F, -v eps="$eps" -v seed="$seed" 'NR > 1 { s += ($1 < 0 ? 0 : ($1 > 1 ? 1 : $1)) }
END {
  srand(seed % 2147483647); u = rand() - 0.5; b = 1 / (10 * eps)
  a = (u < 0 ? -u : u); sgn = (u < 0 ? -1 : 1)
  printf "{\"release\": %.17g, \"ledger\": [{\"name\": \"release\", \"mechanism\": \"laplace\", \"epsilon\": %s, \"sensitivity\": 0.1}]}\n", s / 10 - b * sgn * log(1 - 2 * a), eps
}' train.csv
