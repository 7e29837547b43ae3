#!/bin/bash
# fatelfd's metrics for a fleet, read by Debian's real node_exporter
# (prometheus-node-exporter) from its textfile-collector directory. A
# private fatelfd has MetricsFile= in that directory and a file:// repository
# that offers hello 2.0; the test installs hello 1.0 (thinned), a package kept
# fat, a bundle that is no bundle (a failed transaction), verifies before and
# after damaging a file, holds and releases hello, upgrades it, and after
# each step scrapes
# http://127.0.0.1:PORT/metrics with curl. Each fatelf_ value must be the
# one the step implies (and the one Status reports), the file must parse
# (node_textfile_scrape_error 0, checked to become 1 for a broken file), be
# mode 0644 with no temp file left beside it, and say the same as
# 'fatelfctl status --prometheus'.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

NODE_EXPORTER=prometheus-node-exporter
t_init metrics
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool "$NODE_EXPORTER" curl jq minisign python3 gcc
[ "$(uname -m)" = x86_64 ] || t_skip "the thinned sizes are computed for an x86_64 host"

hello_inputs
[ "${#inputs[@]}" -ge 2 ] || t_skip "one compiler only: no fat file to thin (install gcc-aarch64-linux-gnu)"
minisign -G -W -f -p vendor.pub -s vendor.key >/dev/null 2>&1 || fail "minisign -G (vendor)" "no key"
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G (repository)" "no key"
mkdir -p keys && cp vendor.pub keys/ && DAEMON_KEYS=$T_WORK/keys

# hello VERSION: hello-VERSION.fatbundle, a fat program and two data files
for v in 1.0 2.0; do
	mkdir -p "t$v/opt/hello/bin" "t$v/opt/hello/share"
	"$FATELF" glue -o "t$v/opt/hello/bin/hello" "${inputs[@]}" >/dev/null
	echo "hello $v" >"t$v/opt/hello/share/version"
	echo "readme" >"t$v/opt/hello/share/README"
	"$FATELF" bundle create -o "hello-$v.fatbundle" --name hello --version "$v" --sign vendor.key "t$v" >/dev/null ||
		fail "bundle create hello $v" ""
done
mkdir -p tk/opt/kept/bin
"$FATELF" glue -o tk/opt/kept/bin/kept "${inputs[@]}" >/dev/null
"$FATELF" bundle create -o kept-1.fatbundle --name kept --version 1 --sign vendor.key tk >/dev/null ||
	fail "bundle create kept" ""
echo "not a bundle" >broken.fatbundle
check "repo init --sign" "$FATELF" repo init --sign repo.key www/repo
check "repo add hello 2.0" "$FATELF" repo add --sign repo.key www/repo hello-2.0.fatbundle

# ---- node_exporter with the textfile collector alone, on 127.0.0.1
mkdir -p textfile
PORT=$(free_port)
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$PORT" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$T_WORK/textfile" >node_exporter.log 2>&1 &
NEPID=$!
daemon_init
trap 'kill $NEPID 2>/dev/null; wait $NEPID 2>/dev/null; daemon_cleanup' EXIT
for ((i = 0; i < 100; i++)); do
	curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics" && break
	sleep 0.1
done
check "node_exporter answers on 127.0.0.1:$PORT" curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"

# scrape: the metrics page; value NAME [LABELS]: a sample's value in it
scrape() { SCRAPE=$(curl -sf "http://127.0.0.1:$PORT/metrics"); }
value() {
	awk -v want="$1${2:-}" '$1 == want { print $2 }' <<<"$SCRAPE"
}
# fatelf_lines: the fatelf_ families of the page, HELP and TYPE lines included
fatelf_lines() { grep -E '^(# (HELP|TYPE) )?fatelf_' <<<"$SCRAPE"; }
# status_value KEY: Status's number; whole NUMBER: a value as node_exporter
# prints it (1.968512e+06 past a million) as a whole number
status_value() { ctl --json status | jq -r ".$1"; }
whole() { python3 -c 'import sys; print("%d" % float(sys.argv[1]))' "$1" 2>/dev/null; }

PROM=$T_WORK/textfile/fatelf.prom
daemon_prepare d1 "Repositories=$T_WORK/d1/repos.d" "MetricsFile=$PROM"
daemon_start d1 || fail "fatelfd starts with MetricsFile=" "see $T_WORK/d1/log"

check_eq "at start, fatelfd wrote $PROM, mode 0644" 644 "$(stat -c %a "$PROM" 2>&1)"
scrape
check_eq "node_exporter read it: packages 0, files 0, no upgrade pending, none held" "0 0 0 0" \
	"$(value fatelf_packages) $(value fatelf_files) $(value fatelf_upgrades_pending) $(value fatelf_packages_held)"
check_eq "... nothing about a transaction or a verify yet" "" "$(fatelf_lines | grep -E 'last_(transaction|verify)')"
check_eq "... node_textfile_scrape_error 0" 0 "$(value node_textfile_scrape_error)"
check_eq "... with the HELP and TYPE lines fatelfd wrote" \
	"# HELP fatelf_packages Packages installed.|# TYPE fatelf_packages gauge" \
	"$(fatelf_lines | grep -E '^# (HELP|TYPE) fatelf_packages ' | paste -sd'|')"

check "repo add main file://" ctl repo add main "file://$T_WORK/www/repo" --key repo.pub
check "update" ctl update
check "install hello 1.0 (policy native: thinned)" ctl install hello-1.0.fatbundle
check "install kept --policy keep (installed fat)" ctl install --policy keep kept-1.fatbundle
scrape
check_eq "packages 2, files 4, fat files 2, one of them installed fat" "2 4 2 1" \
	"$(value fatelf_packages) $(value fatelf_files) $(value fatelf_fat_files) $(value fatelf_fat_files_installed_fat)"
check_eq "bytes on disk: Status's bytes_on_disk" "$(status_value bytes_on_disk)" "$(whole "$(value fatelf_bytes_on_disk)")"
saved=$(status_value bytes_saved)
check_match "bytes saved: more than 0 (hello thinned)" '^[1-9][0-9]*$' "$saved"
check_eq "... and Status's bytes_saved" "$saved" "$(whole "$(value fatelf_bytes_saved)")"
check_eq "one upgrade pending: the repository offers hello 2.0" 1 "$(value fatelf_upgrades_pending)"
check_eq "the last transaction: install of kept, committed, a success" "1 1" \
	"$(value fatelf_last_transaction_info '{kind="install",package="kept",result="committed"}') $(value fatelf_last_transaction_success)"
ts=$(ctl --json history | jq -r '.transactions[0].finished_at')
check_eq "... ended when History says" "$ts" "$(whole "$(value fatelf_last_transaction_timestamp_seconds)")"
check_eq "node_textfile_scrape_error 0" 0 "$(value node_textfile_scrape_error)"

run ctl install broken.fatbundle
check_match "installing a file that is no bundle fails" '^[1-9]' "$RC"
scrape
check_eq "the last transaction: a failed install, success 0" "1 0" \
	"$(value fatelf_last_transaction_info '{kind="install",package="",result="failed"}') $(value fatelf_last_transaction_success)"

check "verify" ctl verify
scrape
check_eq "the last verify: every package, 4 files checked, 0 problems" "1 4 0" \
	"$(value fatelf_last_verify_info '{package=""}') $(value fatelf_last_verify_files_checked) $(value fatelf_last_verify_problems)"
echo "changed" >>d1/root/opt/hello/share/README
run ctl verify hello
check_match "verify hello after a file changed: problems (exit not 0)" '^[1-9]' "$RC"
scrape
check_eq "the last verify: hello, 3 files checked, 1 problem" "1 3 1" \
	"$(value fatelf_last_verify_info '{package="hello"}') $(value fatelf_last_verify_files_checked) $(value fatelf_last_verify_problems)"

check "hold hello" ctl hold hello
scrape
check_eq "held: 1, and no upgrade pending (upgrade leaves a held package be)" "1 0" \
	"$(value fatelf_packages_held) $(value fatelf_upgrades_pending)"
check "unhold hello" ctl unhold hello
scrape
check_eq "unheld: 0 held, 1 upgrade pending again" "0 1" \
	"$(value fatelf_packages_held) $(value fatelf_upgrades_pending)"

check "upgrade hello to 2.0" ctl upgrade hello
scrape
check_eq "no upgrade pending after it" 0 "$(value fatelf_upgrades_pending)"
check_eq "the last transaction: upgrade of hello, committed" 1 \
	"$(value fatelf_last_transaction_info '{kind="upgrade",package="hello",result="committed"}')"

# the file and Status say the same, byte for byte
run ctl status --prometheus
check_eq "fatelfctl status --prometheus exits 0" 0 "$RC"
ctl status --prometheus >status.prom
check_cmp "... and prints what the file holds" status.prom "$PROM"
check_eq "no temp file is left in the textfile directory" "fatelf.prom" "$(ls -A textfile)"

# the metrics survive a restart: the verify is remembered
daemon_stop
check_eq "the daemon stops cleanly" 0 "$DAEMON_STATUS"
rm -f "$PROM"
daemon_start d1 || fail "fatelfd starts again" "see $T_WORK/d1/log"
scrape
check_eq "after a restart the file is back, with the last verify's problems" "2 1" \
	"$(value fatelf_packages) $(value fatelf_last_verify_problems)"

# the parse check can fail: a broken file beside ours is reported
printf 'fatelf_broken{x="unterminated} 1\n' >textfile/broken.prom
scrape
check_eq "a broken .prom file beside it: node_textfile_scrape_error 1" 1 "$(value node_textfile_scrape_error)"
rm -f textfile/broken.prom

# a MetricsFile= that cannot be written is logged, and serving goes on
daemon_stop
daemon_prepare d1 "Repositories=$T_WORK/d1/repos.d" "MetricsFile=$T_WORK/nodir/fatelf.prom"
daemon_start d1 || fail "fatelfd starts with a MetricsFile= in a missing directory" "see $T_WORK/d1/log"
check "... and serves" ctl status
check_match "... logging why the file was not written" "metrics: $T_WORK/nodir/fatelf.prom: cannot write: No such file or directory" \
	"$(cat d1/log)"
daemon_stop

# a MetricsFile= that is not *.prom is refused at start
daemon_prepare d2 "MetricsFile=$T_WORK/textfile/fatelf.txt"
daemon_start d2 >/dev/null
check_match "MetricsFile= not ending in .prom: fatelfd refuses to start, naming the rule" \
	"fatelfd.conf:[0-9]+: MetricsFile: '/.*' is not an absolute path of a file ending in .prom" "$(cat d2/log)"
check_no_sanitizer_report

t_done
