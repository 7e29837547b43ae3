# Shared helpers for the reliability suites (sourced, not run).
#
# On top of tests/integration/lib.sh (t_init, check_*, run, t_done), this
# gives a suite what a crash, fault or load test needs again and again: a
# private fatelfd that can be started, killed and restarted over the same
# root and state directory, bundles built from trees, and a snapshot of a
# root and of the store as text, so "the state after the crash is exactly
# the state before (or after) the operation" is one string comparison.
#
# Every daemon runs with its own root, state directory and config under
# the suite's work directory; sockets live in one directory under /tmp
# (a socket path has at most 107 bytes). rl_init sets that up and an EXIT
# trap that stops every daemon still running.
# Outside `make check` there is no work directory to confine the suites to:
# stop rather than write relative to the current directory.
if [ -z "${top_srcdir:-}" ] || [ -z "${top_builddir:-}" ]; then
	echo "Bail out! top_srcdir and top_builddir are not set (run through make check)"
	exit 99
fi
. "$top_srcdir/tests/integration/lib.sh"

: "${FATELFD:=$top_builddir/daemon/fatelfd}"
: "${FATELFCTL:=$top_builddir/client/fatelfctl}"
: "${FATELF_FAILPOINTS:=no}"
export FATELFD FATELFCTL

RL_SOCKDIR=
RL_PIDS=()
# The daemon last started: its pid, socket, root, directory and log.
DPID=
SOCK=
ROOT=
DDIR=
DLOG=

# rl_init NAME: t_init NAME, a socket directory, the cleanup trap, and a
# minisign key pair (RL_KEY, RL_PUB) that every daemon of the suite trusts.
rl_init() {
	t_init "$1"
	t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
	t_require_tool jq minisign sha256sum timeout
	RL_SOCKDIR=$(mktemp -d /tmp/fatelf-rl.XXXXXX) || { echo "Bail out! mktemp"; exit 99; }
	chmod 0755 "$RL_SOCKDIR"
	trap 'rl_stop_all; rm -rf "$RL_SOCKDIR"' EXIT
	RL_KEY=$T_WORK/rl.key
	RL_PUB=$T_WORK/rl.pub
	minisign -G -W -f -p "$RL_PUB" -s "$RL_KEY" >/dev/null 2>&1 ||
		{ echo "Bail out! minisign -G failed"; exit 99; }
	mkdir -p "$T_WORK/rl-keys"
	cp "$RL_PUB" "$T_WORK/rl-keys/rl.pub"
}

# rl_stop_all: SIGKILL every daemon rl_start started that still runs
# (one whose watcher has not written its status yet: a pid that ended is
# never signalled, it may belong to someone else by now).
rl_stop_all() {
	local e pid watcher seq
	for e in "${RL_PIDS[@]}"; do
		IFS=: read -r pid watcher seq <<<"$e"
		[ -e "$RL_SOCKDIR/$seq.status" ] || kill -9 "$pid" 2>/dev/null
		wait "$watcher" 2>/dev/null
	done
	RL_PIDS=()
}

# rl_prepare DIR [CONFIG-LINE...]: makes DIR/root, DIR/state and
# DIR/fatelfd.conf ([Daemon] trusting the suite's key, then the lines).
# DIR is relative to the work directory or absolute.
rl_prepare() {
	local d=$1
	shift
	case $d in /*) ;; *) d=$T_WORK/$d ;; esac
	mkdir -p "$d/root" "$d/state"
	{
		echo "[Daemon]"
		echo "TrustedKeys=$T_WORK/rl-keys"
		printf '%s\n' "$@"
	} >"$d/fatelfd.conf"
}

# rl_start DIR [VAR=VALUE...]: starts fatelfd over DIR (made by
# rl_prepare), with the given environment (e.g. FATELF_FAILPOINT=rename:2),
# and waits until it answers status. Sets DPID, SOCK, ROOT, DDIR, DLOG
# (the log is appended to, so restarts keep the earlier lines). Returns 0
# when it answers, 1 when it died first (RL_STATUS then holds its wait
# status), 2 when it neither answered nor died within ~20 s.
# The daemon runs under a watcher subshell that waits for it and writes
# its wait status to a file (DSTATUS): the test's shell would otherwise print
# "Killed" into the log for every kill -9, and a SIGKILLed daemon's
# status could not be told from a clean exit.
RL_STATUS=
RL_SEQ=0
DSTATUS=
rl_start() {
	local d=$1 i watcher pidf
	shift
	case $d in /*) ;; *) d=$T_WORK/$d ;; esac
	DDIR=$d
	ROOT=$d/root
	DLOG=$d/log
	SOCK=$RL_SOCKDIR/$(basename "$d").sock
	echo "--- start $* ---" >>"$DLOG"
	# A stale socket must not answer for the new daemon.
	rm -f "$SOCK"
	RL_SEQ=$((RL_SEQ + 1))
	pidf=$RL_SOCKDIR/$RL_SEQ.pid
	DSTATUS=$RL_SOCKDIR/$RL_SEQ.status
	(
		env "$@" "$FATELFD" --socket "$SOCK" --root "$ROOT" --state-dir "$d/state" \
			--config "$d/fatelfd.conf" 2>>"$DLOG" &
		echo $! >"$pidf"
		wait $!
		echo $? >"$DSTATUS.new"
		mv "$DSTATUS.new" "$DSTATUS"
	) 2>/dev/null &
	watcher=$!
	for ((i = 0; i < 500; i++)); do
		[ -s "$pidf" ] && break
		sleep 0.01
	done
	DPID=$(cat "$pidf")
	RL_PIDS+=("$DPID:$watcher:$RL_SEQ")
	for ((i = 0; i < 400; i++)); do
		if [ -e "$DSTATUS" ]; then
			rl_reap
			return 1
		fi
		if [ -S "$SOCK" ] && timeout 5 "$FATELFCTL" --socket "$SOCK" status >/dev/null 2>&1 &&
			[ ! -e "$DSTATUS" ]; then
			return 0
		fi
		sleep 0.05
	done
	return 2
}

# rl_reap: waits for the last daemon to end; RL_STATUS is its wait status
# (137 = killed by SIGKILL). Gives up after ~20 s (RL_STATUS=timeout).
rl_reap() {
	local i
	for ((i = 0; i < 400; i++)); do
		[ -e "$DSTATUS" ] && break
		sleep 0.05
	done
	if [ ! -e "$DSTATUS" ]; then
		RL_STATUS=timeout
		return 1
	fi
	RL_STATUS=$(cat "$DSTATUS")
	return 0
}

# rl_stop: a clean stop (SIGTERM), then reaps it.
rl_stop() {
	kill "$DPID" 2>/dev/null
	rl_reap
}

# rl_kill: kill -9 of the last daemon, then reaps it.
rl_kill() {
	kill -9 "$DPID" 2>/dev/null
	rl_reap
}

# rl_ctl ARGS...: fatelfctl against the last daemon (60 s at most).
rl_ctl() {
	timeout 60 "$FATELFCTL" --socket "$SOCK" "$@"
}

# rl_bundle OUT NAME VERSION TREE [OPTIONS...]: a bundle signed with the
# suite's key.
rl_bundle() {
	local out=$1 name=$2 ver=$3 tree=$4
	shift 4
	"$FATELF" bundle create -o "$out" --name "$name" --version "$ver" \
		--summary "the $name package" --vendor "fatelf tests" --sign "$RL_KEY" "$@" "$tree" \
		>/dev/null
}

# rl_fat_file OUT SEED SIZE: a FatELF file with an x86_64 and an aarch64
# record (mkfixture images of SIZE bytes, different content per SEED), so
# the native policy thins it to the x86_64 record.
rl_fat_file() {
	local out=$1 seed=$2 size=$3
	"$MKFIXTURE" -o "$out.x86_64" --machine x86_64 --type exec --size "$size" --seed "$seed" &&
		"$MKFIXTURE" -o "$out.aarch64" --machine aarch64 --type exec --size "$size" \
			--seed "$((seed + 1))" &&
		"$MKFIXTURE" --fat -o "$out" "$out.x86_64" "$out.aarch64" &&
		rm -f "$out.x86_64" "$out.aarch64"
}

# rl_snapshot_root DIR: one sorted line per entry beneath DIR: type, mode,
# path, and for a file its size and sha256, for a symlink its target.
# Times are left out: they are not part of what an install promises.
rl_snapshot_root() {
	(
		cd "$1" || exit 1
		# One sha256sum for all the files, then joined with find's lines.
		find . -mindepth 1 -type f -printf '%P\0' | LC_ALL=C sort -z |
			xargs -0 -r sha256sum -- >"$T_WORK/.rl-sums" || exit 1
		find . -mindepth 1 -printf '%y\t%m\t%s\t%P\t%l\n' | LC_ALL=C sort -t "$(printf '\t')" -k4,4 |
			awk -F '\t' -v sums="$T_WORK/.rl-sums" '
				BEGIN { while ((getline l < sums) > 0) h[substr(l, 67)] = substr(l, 1, 64) }
				$1 == "f" { print "f", $2, $4, $3, h[$4]; next }
				$1 == "l" { print "l", $4, "->", $5; next }
				{ print $1, $2, $4 }'
	)
}

# rl_snapshot_store PKG...: the store as the client shows it, as text:
# list, and per package info and files (--json, minus times and ids, which
# differ between two runs of the same transaction). A package that is not
# installed shows as "PKG: not installed". Needs a running daemon.
rl_snapshot_store() {
	local p strip='walk(if type == "object" then with_entries(select(.key | test("(_at|time|^id|^txid|^tx_id)$") | not)) else . end)'
	rl_ctl --json list | jq -S -c "$strip | .packages |= sort_by(.name)" 2>&1
	for p in "$@"; do
		if rl_ctl --json info "$p" >"$T_WORK/.rl-info" 2>/dev/null; then
			jq -S -c "$strip" <"$T_WORK/.rl-info"
			rl_ctl --json files "$p" | jq -S -c "$strip | .files |= sort_by(.path)" 2>&1
		else
			echo "$p: not installed"
		fi
	done
}

# rl_temps DIR: the hidden temp files left beneath DIR (none is right).
rl_temps() {
	find "$1" -name '.fatelf.*' 2>/dev/null
}

# rl_tx_states: "kind state" of every transaction in the history, oldest
# first (needs a running daemon).
rl_tx_states() {
	rl_ctl --json history --limit 100000 |
		jq -r '.transactions | sort_by(.id) | .[] | "\(.kind) \(.state)"' 2>&1
}
