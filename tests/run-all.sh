#!/bin/bash
# The whole test suite, from a fresh clone on a fresh Debian 12 (as root):
#
#   bash tests/run-all.sh
#
# 1. installs the Debian packages the build, the demo and the tests need,
#    all of deps/packages (skipped when FATELF_NO_APT=1);
# 2. ./autogen.sh;
# 3. a normal build in build/ and make check;
# 4. a build with --enable-sanitizers (ASan + UBSan) in build-san/ and
#    make check;
# 5. make distcheck in build/;
# 6. the libFuzzer targets, one per untrusted input, 60 s each: a clang
#    tree in build-fuzz/ configured --enable-fuzzing, and make fuzz
#    (tests/fuzz/run.sh does both);
# 7. the Debian packages, last (tests/packaging/deb.sh: builds them from
#    a clean clone, runs lintian, installs them, checks fatelfd.socket and
#    fatelfctl status, purges them; about 3 minutes; skipped when
#    FATELF_NO_DEB=1). It runs after every other step, so no test sees
#    the installed programs.
#
# Then it counts the results: the Check unit tests' own checks, the
# "ok"/"not ok" lines of the shell tests and of the packaging script,
# distcheck as one test, each fuzz target as one test, and any step or
# test program that failed without reporting a count as one failure. The last line it prints is
# "N passed, N failed". It exits 0 only when nothing failed.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
logdir=$top/build-logs
rm -rf "$logdir"
mkdir -p "$logdir"

passed=0
failed=0
failed_steps=()

# step NAME CMD...: runs one step, its output to the terminal and to
# build-logs/NAME.log. A failed step counts as one failure.
step() {
	local name=$1 rc
	shift
	echo "==== $name: $*"
	"$@" 2>&1 | tee "$logdir/$name.log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ]; then
		echo "==== $name FAILED (exit $rc)"
		failed_steps+=("$name")
		return 1
	fi
	return 0
}

build_and_check() {
	local dir=$1
	shift
	rm -rf "$top/$dir" && mkdir -p "$top/$dir" && cd "$top/$dir" &&
		../configure "$@" && make -j"$JOBS" && make -j"$JOBS" check
	local rc=$?
	cd "$top"
	return $rc
}

# count_suite DIR: adds up the results of one build's make check, and
# prints how many failures it counted (so a failed step with none is
# still counted once).
count_suite() {
	local dir=$1 log trs res p f had counted=0
	for trs in "$dir"/tests/unit/*.trs "$dir"/tests/integration/*.trs; do
		[ -e "$trs" ] || continue
		log=${trs%.trs}.log
		res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
		had=0
		if [[ $trs == */unit/* ]]; then
			# Check's summary: "100%: Checks: 45, Failures: 0, Errors: 0"
			read -r p f < <(awk -F'[:,] *' '/^[0-9]+%: Checks: / {
				c += $3; fl += $5 + $7; n++ } END { if (n) print c - fl, fl; else print "x x" }' "$log")
			if [ "$p" != x ]; then
				passed=$((passed + p))
				had=$f
			fi
		else
			passed=$((passed + $(grep -c '^ok ' "$log")))
			had=$(grep -c '^not ok ' "$log")
		fi
		case $res in
		PASS | XFAIL) ;;
		SKIP)
			# Every tool is installed above, so a skip means checks did
			# not run: count it.
			echo "SKIPPED: $log" >&2
			had=$((had + 1)) ;;
		*)
			echo "FAILED: $log ($res)" >&2
			[ "$had" -gt 0 ] || had=1 ;;
		esac
		counted=$((counted + had))
	done
	failed=$((failed + counted))
	COUNTED=$counted
}

# step_failed NAME: whether step NAME failed.
step_failed() {
	local s
	for s in "${failed_steps[@]}"; do
		[ "$s" = "$1" ] && return 0
	done
	return 1
}

if [ "${FATELF_NO_APT:-0}" != 1 ]; then
	step apt bash deps/apt-install.sh build demo tests || true
fi
step autogen ./autogen.sh || true
step build build_and_check build --enable-failpoints || true
step build-san build_and_check build-san --enable-sanitizers --enable-failpoints || true
if [ -f build/Makefile ]; then
	if step distcheck make -C build -j"$JOBS" distcheck; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
fi
step fuzz bash tests/fuzz/run.sh "$FUZZ_SECONDS" || true
if [ "${FATELF_NO_DEB:-0}" != 1 ]; then
	step deb bash tests/packaging/deb.sh || true
fi

echo "==== results"
COUNTED=0
for b in build build-san; do
	count_suite "$b"
	if step_failed "$b" && [ "$COUNTED" -eq 0 ]; then
		failed=$((failed + 1))
	fi
done
# each fuzz target is one test
if [ -f "$logdir/fuzz.log" ]; then
	passed=$((passed + $(grep -c '^ok ' "$logdir/fuzz.log")))
	n=$(grep -c '^not ok ' "$logdir/fuzz.log")
	failed=$((failed + n))
	if step_failed fuzz && [ "$n" -eq 0 ]; then
		failed=$((failed + 1))
	fi
fi
# the packaging script's checks
if [ -f "$logdir/deb.log" ]; then
	passed=$((passed + $(grep -c '^ok ' "$logdir/deb.log")))
	n=$(grep -c '^not ok ' "$logdir/deb.log")
	failed=$((failed + n))
	if step_failed deb && [ "$n" -eq 0 ]; then
		failed=$((failed + 1))
	fi
fi
for s in apt autogen; do
	step_failed "$s" && failed=$((failed + 1))
done
for s in "${failed_steps[@]}"; do
	echo "step failed: $s (log: build-logs/$s.log)"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "${#failed_steps[@]}" -eq 0 ]
