#!/usr/bin/env bash
# stages.sh — quantiles of Prometheus histograms between two sets of scrapes:
#   deploy/tools/stages.sh before.prom… -- after.prom…
# Every histogram's buckets are summed over the "after" files minus the
# "before" files (one pair per run), and printed per series as a Markdown row:
# count, mean, and the p50 / p90 / p99 / p99.9 bucket upper bounds (ms).
# Used by deploy/bench-ledger.sh for the ledger's stage histograms.
#   -w NAME   (repeatable) a histogram the scrapes must hold observations of
# Nothing to show — unreadable or empty scrapes (a wrong port), no histogram
# observed between them, a -w histogram missing (renamed) — is a WARNING on
# stderr and exit status 1, with no table on stdout. So is a wrong delta: any
# one scrape without samples of the -w histograms (of any histogram without
# -w) — an empty "before" would turn its run's delta into the "after"'s
# lifetime totals — or unequal numbers of before and after scrapes.
# Portable to bash 3.2 and BSD tools (no GNU-only grep or paste syntax).
set -euo pipefail
warn() { echo "stages.sh: WARNING: $*" >&2; }
# want and before are counted as they fill: bash < 4.4 takes an empty array
# for an unbound variable under set -u (hence ${want[@]+"${want[@]}"} too).
want=() nwant=0
while (($#)) && [[ $1 == -w ]]; do
	(($# >= 2)) || { echo "usage: $0 [-w histogram]… before… -- after…" >&2; exit 2; }
	want+=("$2"); nwant=$((nwant + 1)); shift 2
done
before=() nbefore=0
while (($#)) && [[ $1 != -- ]]; do before+=("$1"); nbefore=$((nbefore + 1)); shift; done
shift || true
(($#)) || { echo "usage: $0 [-w histogram]… before… -- after…" >&2; exit 2; }
# One before and one after scrape per run: the deltas are summed over them.
if ((nbefore != $#)); then
	warn "$nbefore before and $# after scrapes: one of each per run. No stage quantiles."
	exit 1
fi
samples=0
for f in "${before[@]}" "$@"; do
	[[ -r $f ]] || { warn "cannot read scrape $f; no stage quantiles"; exit 1; }
	samples=$((samples + $(grep -Ecv '^[[:space:]]*(#|$)' "$f" || true)))
done
if ((samples == 0)); then
	warn "all $(($# + nbefore)) scrapes are empty (e.g. $1): wrong port, gateway down, or metrics renamed? No stage quantiles."
	exit 1
fi
# Every scrape holds samples of the histograms (their delta would be a
# lifetime total otherwise).
bad=0
for f in "${before[@]}" "$@"; do
	if ((nwant)); then
		for w in ${want[@]+"${want[@]}"}; do
			grep -Eq "^${w}_(bucket|sum|count)([{[:space:]])" "$f" ||
				{ warn "scrape $f holds no samples of $w: wrong port, gateway restarted, or metrics renamed?"; bad=1; }
		done
	elif ! grep -Eq '^[[:alnum:]_:]+_bucket([{[:space:]])' "$f"; then
		warn "scrape $f holds no histogram samples: wrong port, gateway restarted, or metrics renamed?"
		bad=1
	fi
done
if ((bad)); then
	warn "no stage quantiles printed"
	exit 1
fi
rows=$({
	for f in "${before[@]}"; do sed 's/^/- /' "$f"; done
	for f in "$@"; do sed 's/^/+ /' "$f"; done
} | awk '
function series(n, lab,   s) { s = lab; gsub(/,?le="[^"]*"/, "", s); sub(/^\{,?/, "{", s); if (s == "{}") s = ""; return n s }
{
	sign = ($1 == "-") ? -1 : 1; name = $2; val = $3
	lab = ""; if (match(name, /\{.*\}/)) { lab = substr(name, RSTART, RLENGTH); name = substr(name, 1, RSTART - 1) }
	if (name ~ /_bucket$/) {
		base = substr(name, 1, length(name) - 7); s = series(base, lab)
		match(lab, /le="[^"]*"/); le = substr(lab, RSTART + 4, RLENGTH - 5)
		b[s, le] += sign * val; if (!((s, le) in seen)) { seen[s, le] = 1; les[s] = les[s] " " le }; ser[s] = 1
	} else if (name ~ /_sum$/) { sum[series(substr(name, 1, length(name) - 4), lab)] += sign * val }
	else if (name ~ /_count$/) { cnt[series(substr(name, 1, length(name) - 6), lab)] += sign * val }
}
function q(s, p,   n, i, k, a, tot) {
	n = split(les[s], a, " "); tot = cnt[s]
	for (i = 1; i <= n; i++) if (b[s, a[i]] >= p * tot) return a[i]
	return "+Inf"
}
function ms(x) { return x == "+Inf" ? "> max" : sprintf("%g", x * 1000) }
END {
	for (s in ser) if (cnt[s] > 0) {
		isms = (s ~ /_seconds/)
		m = sum[s] / cnt[s]
		if (isms) printf "| %s | %d | %.2f | %s | %s | %s | %s |\n", s, cnt[s], m * 1000, ms(q(s, .5)), ms(q(s, .9)), ms(q(s, .99)), ms(q(s, .999))
		else printf "| %s | %d | %.2f (not ms) | %s | %s | %s | %s |\n", s, cnt[s], m, q(s, .5), q(s, .9), q(s, .99), q(s, .999)
	}
}' | sort)
if [[ -z $rows ]]; then
	warn "no histogram observed anything between the scrapes ($samples samples read): idle runs, or metrics renamed? No stage quantiles."
	exit 1
fi
missing=0
for w in ${want[@]+"${want[@]}"}; do
	grep -qE "^\| $w(\{| )" <<<"$rows" || { warn "no observations of $w in the scrapes (renamed?)"; missing=1; }
done
if ((missing)); then
	warn "histograms observed: $(cut -d' ' -f2 <<<"$rows" | sed 's/{.*//' | sort -u | paste -sd' ' -)"
	warn "no stage quantiles printed"
	exit 1
fi
echo "| series | count | mean ms | p50 ≤ ms | p90 ≤ | p99 ≤ | p99.9 ≤ |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
echo "$rows"
