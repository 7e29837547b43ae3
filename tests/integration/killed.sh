#!/bin/bash
# A writer killed with SIGKILL at any moment: the target holds either its
# old bytes or the complete new result, never a mix, and what is left
# behind is only hidden ".fatelf.NAME.*" debris.
. "$(dirname "$0")/lib.sh"

t_init killed
t_require_exec "$FATELF" "$MKFIXTURE"

"$MKFIXTURE" -o x64 --machine 62 --class 64 --data le --size 160M --seed 1
"$MKFIXTURE" -o a64 --machine 183 --class 64 --data le --size 160M --seed 2
check "glue two 160 MiB images" "$FATELF" glue -o fat.orig x64 a64
old=$(sha256sum <fat.orig | cut -d' ' -f1)
new=$(sha256sum <a64 | cut -d' ' -f1)

# visible: the names in the directory that are not hidden debris.
visible() {
	find . -maxdepth 1 -mindepth 1 ! -name '.*' -printf '%f\n' | sort | tr '\n' ' '
}

for delay in 0 0.01 0.03 0.06 0.1 0.2; do
	cp fat.orig fat
	"$FATELF" thin fat aarch64 &
	pid=$!
	sleep "$delay"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	got=$(sha256sum <fat | cut -d' ' -f1)
	if [ "$got" = "$old" ] || [ "$got" = "$new" ]; then
		pass "thin killed after ${delay}s: the file is whole (old or new)"
	else
		fail "thin killed after ${delay}s: the file is whole (old or new)" "sha256 $got"
	fi
	check_eq "thin killed after ${delay}s: only hidden debris besides it" \
		"a64 fat fat.orig x64 " "$(visible)"

	"$FATELF" glue -o out x64 a64 &
	pid=$!
	sleep "$delay"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if [ ! -e out ]; then
		pass "glue killed after ${delay}s: no output, or a whole one"
	else
		check_cmp "glue killed after ${delay}s: no output, or a whole one" fat.orig out
	fi
	rm -f out .fatelf.*
done

t_done
