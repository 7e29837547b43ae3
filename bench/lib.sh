# Shared by the benchmarks (sourced): timing, medians, side-by-side
# comparison rows, and the closing table. Each script sets RUNS and runs
# in its own work directory.

# ns CMD...: runs CMD once, prints its wall time in nanoseconds. The clock
# is bash's own $EPOCHREALTIME (microseconds), read without a fork, so
# that the timer adds no process start of its own to what it times.
ns() {
	local t0 t1
	t0=${EPOCHREALTIME//[!0-9]/}
	"$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
	t1=${EPOCHREALTIME//[!0-9]/}
	echo $(((10#$t1 - 10#$t0) * 1000))
}

# batch N CMD...: runs CMD N times in a row (timed together by ns).
batch() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" || return 1
	done
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# compare LABEL TARGET SETUP "A CMD" "B CMD": A is fatelf, B the baseline,
# timed alternately RUNS times after one warm-up each, A first in even
# rounds and B first in odd ones. SETUP runs before
# every timed command (outside the timing), to remove outputs and write
# dirty pages back. Records one table row and PASS/FAIL.
#
# compare_net, with the same arguments, also times /bin/true in each round
# (after its own SETUP) and takes its median off both sides: the cost of
# the work without the start of a process, which no command run from a
# shell goes under. The floor goes to notes, for after the table.
rows=()
notes=()
failures=0
compare() {
	compare_rounds "$@" ""
}
compare_net() {
	compare_rounds "$@" /bin/true
}
compare_rounds() {
	local label=$1 target=$2 setup=$3 a=$4 b=$5 floor=$6 i ta=() tb=() tt=() ma mb mt=0 ratio verdict
	eval "$setup"; ns eval "$a" >/dev/null
	eval "$setup"; ns eval "$b" >/dev/null
	for ((i = 0; i < RUNS; i++)); do
		# odd rounds time B first, so that neither side always runs
		# just after the other (warm caches, writeback still going)
		if ((i % 2)); then
			eval "$setup"; tb+=("$(ns eval "$b")")
			eval "$setup"; ta+=("$(ns eval "$a")")
		else
			eval "$setup"; ta+=("$(ns eval "$a")")
			eval "$setup"; tb+=("$(ns eval "$b")")
		fi
		if [ -n "$floor" ]; then
			eval "$setup"; tt+=("$(ns "$floor")")
		fi
	done
	eval "$setup"
	ma=$(printf '%s\n' "${ta[@]}" | median)
	mb=$(printf '%s\n' "${tb[@]}" | median)
	if [ -n "$floor" ]; then
		mt=$(printf '%s\n' "${tt[@]}" | median)
		notes+=("$(printf '%s: process start (%s, median of %d): %.2f ms, taken off both sides of "%s"' \
			"${label%%:*}" "$floor" "$RUNS" "$(awk -v n="$mt" 'BEGIN { print n / 1e6 }')" "${label#*: }")")
	fi
	ratio=$(awk -v a="$ma" -v b="$mb" -v t="$mt" 'BEGIN { n = a - t; if (n < 0) n = 0; printf "%.3f", n / (b - t) }')
	if awk -v r="$ratio" -v t="$target" 'BEGIN { exit !(r <= t) }'; then
		verdict=PASS
	else
		verdict=FAIL
		failures=$((failures + 1))
	fi
	rows+=("$(printf '%-46s %11.2f %11.2f %7s %7s  %s' "$label" \
		"$(awk -v n="$ma" -v t="$mt" 'BEGIN { print (n - t) / 1e6 }')" \
		"$(awk -v n="$mb" -v t="$mt" 'BEGIN { print (n - t) / 1e6 }')" "$ratio" "<=$target" "$verdict")")
	echo "${rows[-1]}" >&2
}

# report: the table of every comparison and the "N passed, N failed" line;
# returns 0 when every ratio met its target.
# addrow LABEL A B RATIO TARGET: a row measured otherwise than by
# compare (bytes, sizes), PASS when RATIO <= TARGET; echoed to stderr too.
addrow() {
	local verdict=FAIL
	if [[ $4 =~ ^[0-9.]+$ ]] && awk -v r="$4" -v t="$5" 'BEGIN { exit !(r <= t) }'; then
		verdict=PASS
	else
		failures=$((failures + 1))
	fi
	rows+=("$(printf '%-46s %11s %11s %7s %7s  %s' "$1" "$2" "$3" "$4" "<=$5" "$verdict")")
	echo "${rows[-1]}" >&2
}

# upgrade_pair N: up-1.fatbundle and up-2.fatbundle, package "up" signed
# by vendor.key, of N files of 50 KB of random bytes (u1/, u2/), one of
# which (f0007) differs in version 2.
upgrade_pair() {
	mkdir -p u1/srv/data
	head -c $(($1 * 50000)) /dev/urandom | (cd u1/srv/data && split -b 50000 -a 4 -d - f)
	cp -a u1 u2
	head -c 50000 /dev/urandom >u2/srv/data/f0007
	"$FATELF" bundle create -o up-1.fatbundle --name up --version 1 --sign vendor.key u1 >/dev/null &&
		"$FATELF" bundle create -o up-2.fatbundle --name up --version 2 --sign vendor.key u2 >/dev/null
}

# bench_daemon [CONF-LINES...]: a private fatelfd on $work/d.sock (root
# $work/root, state $work/state, log daemon.log) with policy native,
# signatures required, TrustedKeys $work/keys and the lines given; its
# pid in PIDS; ctl talks to it. Returns once it answers.
bench_daemon() {
	local i
	mkdir -p "$work/root" "$work/state" "$work/keys"
	{
		printf '[Policy]\nPolicy=native\n[Daemon]\nRequireSignature=yes\nTrustedKeys=%s/keys\n' "$work"
		printf '%s\n' "$@"
	} >"$work/fatelfd.conf"
	SOCK=$work/d.sock
	"$FATELFD" --socket "$SOCK" --root "$work/root" --state-dir "$work/state" --config "$work/fatelfd.conf" \
		>/dev/null 2>>"$work/daemon.log" &
	PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		"$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
ctl() { "$FATELFCTL" --socket "$SOCK" "$@"; }

report() {
	local r
	printf '\n%-46s %11s %11s %7s %7s  %s\n' "benchmark (median of $RUNS)" "fatelf ms" "baseline ms" ratio target result
	for r in "${rows[@]}"; do
		echo "$r"
	done
	echo "$(( ${#rows[@]} - failures )) passed, $failures failed"
	[ "$failures" -eq 0 ]
}
