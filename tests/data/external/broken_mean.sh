#!/bin/sh
# A deliberately broken external release: it declares an eps-DP Laplace mean but releases the
# exact mean (no noise). epsilab's audit must catch it. POSIX sh, sed and awk only.
req=$(cat)
eps=$(printf '%s' "$req" | sed -n 's/.*"epsilon":\([0-9.e-]*\).*/\1/p')
awk -F, -v eps="$eps" 'NR > 1 { s += $1; n++ }
END { printf "{\"release\": %.17g, \"ledger\": [{\"name\": \"release\", \"mechanism\": \"laplace\", \"epsilon\": %s}]}\n", s / n, eps }' train.csv
