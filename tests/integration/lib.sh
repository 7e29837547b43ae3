# Shared helpers for the integration tests (sourced, not run).
#
# Each test script is run by automake's test harness from the build
# directory, which may be a VPATH build whose source tree is read-only
# (make distcheck). So every file a test writes goes under
# $top_builddir/tests/work/NAME, which is removed when the test passes and
# kept for inspection when it fails.
#
# A script calls t_init NAME, then any number of check_* helpers, each of
# which prints "ok N - desc" or "not ok N - desc" (plus what it saw, on
# failure), and ends with t_done, which prints a summary and exits 0 when
# every check passed, 1 otherwise. t_skip exits 77, automake's SKIP, and is
# only for a missing tool the test cannot run without.
#
# A suite that runs a private fatelfd sources tests/lib/daemon.sh after
# this file; the reliability suites get both through tests/reliability/lib.sh.

set -u

# Defaults so a script can also be run by hand from a build directory.
: "${top_builddir:=$(pwd)}"
: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${FATELF:=$top_builddir/tools/fatelf}"
: "${MKFIXTURE:=$top_builddir/tests/fixtures/mkfixture}"
: "${MKCORPUS:=$top_builddir/tests/fixtures/mkcorpus}"
export top_builddir top_srcdir FATELF MKFIXTURE MKCORPUS

T_NAME=
T_WORK=
T_COUNT=0
T_FAILED=0

# t_init NAME: makes and enters a fresh work directory.
t_init() {
	T_NAME=$1
	T_WORK=$top_builddir/tests/work/$T_NAME
	rm -rf "$T_WORK"
	mkdir -p "$T_WORK" || { echo "Bail out! cannot create $T_WORK"; exit 99; }
	cd "$T_WORK" || exit 99
	echo "# $T_NAME: work directory $T_WORK"
}

t_skip() {
	echo "# SKIP $T_NAME: $*"
	cd / && rm -rf "$T_WORK"
	exit 77
}

# wait_for SECONDS CMD...: runs CMD every 50 ms until it succeeds (0) or
# SECONDS have passed (1).
wait_for() { # SECONDS CMD...
	local n=$(($1 * 20)) i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# t_require_exec PATH...: the build products the test needs.
t_require_exec() {
	local p
	for p in "$@"; do
		[ -x "$p" ] || { echo "Bail out! $p was not built"; exit 99; }
	done
}

# t_require_tool CMD...: tools from the system (skip when missing).
t_require_tool() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || t_skip "$c is not installed"
	done
}

# t_native_i686: true if this x86_64 host runs 32-bit x86 programs itself.
# Some kernels are built or booted without IA-32 emulation: there, exec of
# an i386 ELF fails with ENOEXEC and qemu-i386-static has to run it.
t_native_i686() {
	if [ -z "${T_NATIVE_I686:-}" ]; then
		T_NATIVE_I686=no
		if printf 'int main(void){return 0;}\n' >"$T_WORK/.probe32.c" &&
			i686-linux-gnu-gcc -static -o "$T_WORK/.probe32" "$T_WORK/.probe32.c" 2>/dev/null &&
			"$T_WORK/.probe32" 2>/dev/null; then
			T_NATIVE_I686=yes
		fi
		rm -f "$T_WORK/.probe32" "$T_WORK/.probe32.c"
		[ "$T_NATIVE_I686" = yes ] || echo "# this kernel does not run i386 programs: qemu-i386-static runs them"
	fi
	[ "$T_NATIVE_I686" = yes ]
}

t_done() {
	local passed=$((T_COUNT - T_FAILED))
	echo "# $T_NAME: $passed passed, $T_FAILED failed"
	if [ "$T_COUNT" -eq 0 ]; then
		echo "# $T_NAME: no checks ran"
		exit 1
	fi
	if [ "$T_FAILED" -eq 0 ]; then
		cd / && rm -rf "$T_WORK"
		exit 0
	fi
	echo "# $T_NAME: work files kept in $T_WORK"
	exit 1
}

# pass/fail DESC [DETAIL...]: record one result.
pass() {
	T_COUNT=$((T_COUNT + 1))
	echo "ok $T_COUNT - $1"
}

fail() {
	T_COUNT=$((T_COUNT + 1))
	T_FAILED=$((T_FAILED + 1))
	echo "not ok $T_COUNT - $1"
	shift
	local l
	for l in "$@"; do
		printf '%s\n' "$l" | sed 's/^/#   /'
	done
}

# run CMD...: runs a command, keeping its stdout in $RUN_OUT (file
# run.out), stderr in $RUN_ERR (file run.err) and exit status in $RC.
RC=0
RUN_OUT=
RUN_ERR=
run() {
	"$@" >"$T_WORK/.run.out" 2>"$T_WORK/.run.err"
	RC=$?
	RUN_OUT=$(cat "$T_WORK/.run.out")
	RUN_ERR=$(cat "$T_WORK/.run.err")
	return 0
}

# The last run as one line, for failure details.
last_run() {
	printf 'exit %s\nstdout: %s\nstderr: %s' "$RC" "$(head -c 2000 "$T_WORK/.run.out")" \
		"$(head -c 2000 "$T_WORK/.run.err")"
}

# check_exit CODE DESC CMD...: the command exits with CODE.
check_exit() {
	local want=$1 desc=$2
	shift 2
	run "$@"
	if [ "$RC" -eq "$want" ]; then
		pass "$desc"
	else
		fail "$desc" "expected exit $want: $*" "$(last_run)"
	fi
}

# check DESC CMD...: the command succeeds (exit 0).
check() {
	local desc=$1
	shift
	check_exit 0 "$desc" "$@"
}

# check_eq DESC EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "expected: $2" "actual:   $3"
	fi
}

# check_match DESC ERE STRING: STRING matches the extended regex.
check_match() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then
		pass "$1"
	else
		fail "$1" "expected to match: $2" "actual: $3"
	fi
}

# check_nomatch DESC ERE STRING
check_nomatch() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then
		fail "$1" "expected not to match: $2" "actual: $3"
	else
		pass "$1"
	fi
}

# check_cmp DESC FILE1 FILE2: byte-identical.
check_cmp() {
	local why
	if why=$(cmp -- "$2" "$3" 2>&1); then
		pass "$1"
	else
		fail "$1" "$why"
	fi
}

# check_one_line DESC TEXT: exactly one non-empty line.
check_one_line() {
	local n
	n=$(printf '%s\n' "$2" | grep -c .)
	if [ "$n" -eq 1 ]; then
		pass "$1"
	else
		fail "$1" "expected one line, got $n:" "$2"
	fi
}

# json FILE FILTER: jq -r, one value per line ("" on a jq error).
json() {
	jq -r "$2" <"$1" 2>/dev/null
}

# file_size FILE
file_size() {
	stat -c %s -- "$1"
}

# file_mode FILE (octal, e.g. 750)
file_mode() {
	stat -c %a -- "$1"
}

# flip_byte FILE OFFSET: inverts every bit of one byte in place, so the
# file surely changes whatever the byte was (writing a fixed byte over
# random data leaves it unchanged one time in 256).
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 -- "$1" | tr -d ' ')
	[ -n "$b" ] || { echo "flip_byte: $1 has no byte at offset $2" >&2; return 1; }
	# shellcheck disable=SC2059
	printf "$(printf '\\%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# nginx_www PORT: a foreground nginx on 127.0.0.1:PORT that serves
# $T_WORK/www and logs "METHOD URI STATUS BYTES" lines to
# $T_WORK/ngx/logs/files.log; its pid in NGPID. Returns once it answers.
nginx_www() {
	local i
	mkdir -p "$T_WORK/ngx"
	chmod -R go+rX "$T_WORK/www"
	nginx_conf "$T_WORK/ngx" "	log_format files '\$request_method \$uri \$status \$body_bytes_sent';
	server {
		listen 127.0.0.1:$1;
		root $T_WORK/www;
		access_log $T_WORK/ngx/logs/files.log files;
	}"
	nginx -c "$T_WORK/ngx/nginx.conf" -p "$T_WORK/ngx" -g 'daemon off;' 2>"$T_WORK/ngx/logs/stderr" &
	NGPID=$!
	for ((i = 0; i < 50; i++)); do
		curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
		sleep 0.1
	done
	return 1
}

# hello_inputs: tests/integration/hello.c built static as in-ARCH by gcc
# and by each of the aarch64, i686 and riscv64 cross compilers that is
# installed; the files in the array inputs, their list on stdout as a
# comment.
hello_inputs() {
	local a
	local -A cc=([x86_64]=gcc [aarch64]=aarch64-linux-gnu-gcc [i686]=i686-linux-gnu-gcc
		[riscv64]=riscv64-linux-gnu-gcc)
	inputs=()
	for a in x86_64 aarch64 i686 riscv64; do
		command -v "${cc[$a]}" >/dev/null 2>&1 || continue
		"${cc[$a]}" -static -O2 -o "in-$a" "$top_srcdir/tests/integration/hello.c" && inputs+=("in-$a")
	done
	echo "# architectures: ${inputs[*]}"
}

# oci_registry NAME PORT [YAML]: Debian's docker-registry (CNCF
# Distribution) on 127.0.0.1:PORT, its storage, config and log (with the
# access log) under $T_WORK/NAME, YAML appended to its config; its pid
# appended to REGISTRY_PIDS. Returns once it answers.
REGISTRY_PIDS=()
oci_registry() {
	local i
	mkdir -p "$T_WORK/$1/data"
	{
		printf 'version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n'
		printf 'storage:\n  filesystem:\n    rootdirectory: %s/%s/data\n' "$T_WORK" "$1"
		printf 'http:\n  addr: 127.0.0.1:%s\n' "$2"
		[ -n "${3:-}" ] && printf '%s\n' "$3"
	} >"$T_WORK/$1/config.yml"
	docker-registry serve "$T_WORK/$1/config.yml" >"$T_WORK/$1/log" 2>&1 &
	REGISTRY_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/v2/")" != 000 ] && return 0
		sleep 0.1
	done
	return 1
}

# registry_requests NAME: the "METHOD PATH STATUS" of each request in the
# access log of oci_registry NAME, in order.
registry_requests() {
	sed -n 's/.*"\([A-Z]*\) \([^ ]*\) HTTP[^"]*" \([0-9]*\) .*/\1 \2 \3/p' "$T_WORK/$1/log"
}

# hello_pair BIGBYTES: hello-1.fatbundle and hello-2.fatbundle, package
# hello 1.0 and 2.0 signed by vendor.key, of the glued inputs (hello_inputs),
# 40 small files and one of BIGBYTES random bytes (trees t1/ and t2/);
# file f07 differs in version 2.
hello_pair() {
	local d i
	for d in t1 t2; do
		mkdir -p "$d/opt/hello/bin" "$d/opt/hello/share"
		"$FATELF" glue -o "$d/opt/hello/bin/hello" "${inputs[@]}" >/dev/null || return 1
		for i in $(seq -w 0 39); do echo "file $i" >"$d/opt/hello/share/f$i"; done
	done
	echo "file 07 version 1" >t1/opt/hello/share/f07
	echo "file 07 version 2" >t2/opt/hello/share/f07
	head -c "$1" /dev/urandom >t1/opt/hello/share/big
	cp t1/opt/hello/share/big t2/opt/hello/share/big
	"$FATELF" bundle create -o hello-1.fatbundle --name hello --version 1.0 --sign vendor.key t1 >/dev/null &&
		"$FATELF" bundle create -o hello-2.fatbundle --name hello --version 2.0 --sign vendor.key t2 >/dev/null
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on at the moment.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nginx_conf DIR SERVER...: writes DIR/nginx.conf for one foreground nginx
# (no master process) whose pid, logs and temp files all stay in DIR, with
# the given server blocks (each one argument, the whole "server { ... }").
# Start it with: nginx -c DIR/nginx.conf -p DIR -g 'daemon off;'
nginx_conf() {
	local d=$1
	shift
	mkdir -p "$d/tmp" "$d/logs"
	{
		printf 'worker_processes 1;\nmaster_process off;\n'
		printf 'error_log %s/logs/error.log;\npid %s/nginx.pid;\n' "$d" "$d"
		printf 'events { worker_connections 64; }\nhttp {\n'
		printf '\taccess_log %s/logs/access.log;\n' "$d"
		printf '\tclient_body_temp_path %s/tmp/body;\n\tproxy_temp_path %s/tmp/proxy;\n' "$d" "$d"
		printf '%s\n' "$@"
		printf '}\n'
	} >"$d/nginx.conf"
}
