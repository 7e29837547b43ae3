# Shared helpers for the reliability suites (sourced, not run).
#
# On top of tests/integration/lib.sh (t_init, check_*, run, t_done) and
# tests/lib/daemon.sh (a private fatelfd that can be started, killed and
# restarted over the same root and state directory, and ctl), this gives a
# suite what a crash, fault or load test needs again and again: a key pair
# every daemon trusts, bundles built from trees, and a snapshot of a root
# and of the store as text, so "the state after the crash is exactly the
# state before (or after) the operation" is one string comparison.
# Outside `make check` there is no work directory to confine the suites to:
# stop rather than write relative to the current directory.
if [ -z "${top_srcdir:-}" ] || [ -z "${top_builddir:-}" ]; then
	echo "Bail out! top_srcdir and top_builddir are not set (run through make check)"
	exit 99
fi
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

: "${FATELF_FAILPOINTS:=no}"
# uid 65534 cannot run a python3 that lives in root's home (pyenv).
SYS_PYTHON=/usr/bin/python3
[ -x "$SYS_PYTHON" ] || SYS_PYTHON=$(command -v python3)

# rl_init NAME: t_init NAME, daemon_init, a minisign key pair (RL_KEY,
# RL_PUB) that every daemon of the suite trusts, and the raw Varlink
# client: VLC, a copy of tests/reliability/vlclient.py in DAEMON_SOCKDIR
# that any user can run, and a module on PYTHONPATH for the suites' own
# Python ("import vlclient").
rl_init() {
	t_init "$1"
	t_require_exec "$FATELF"
	t_require_tool jq minisign sha256sum
	daemon_init
	RL_KEY=$T_WORK/rl.key
	RL_PUB=$T_WORK/rl.pub
	minisign -G -W -f -p "$RL_PUB" -s "$RL_KEY" >/dev/null 2>&1 ||
		{ echo "Bail out! minisign -G failed"; exit 99; }
	DAEMON_KEYS=$T_WORK/rl-keys
	mkdir -p "$DAEMON_KEYS"
	cp "$RL_PUB" "$DAEMON_KEYS/rl.pub"
	VLC=$DAEMON_SOCKDIR/vlclient.py
	cp "$top_srcdir/tests/reliability/vlclient.py" "$VLC" && chmod 0644 "$VLC" ||
		{ echo "Bail out! cannot copy vlclient.py"; exit 99; }
	export PYTHONPATH=$DAEMON_SOCKDIR${PYTHONPATH:+:$PYTHONPATH}
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
	ctl --json list | jq -S -c "$strip | .packages |= sort_by(.name)" 2>&1
	for p in "$@"; do
		if ctl --json info "$p" >"$T_WORK/.rl-info" 2>/dev/null; then
			jq -S -c "$strip" <"$T_WORK/.rl-info"
			ctl --json files "$p" | jq -S -c "$strip | .files |= sort_by(.path)" 2>&1
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
	ctl --json history --limit 100000 |
		jq -r '.transactions | sort_by(.id) | .[] | "\(.kind) \(.state)"' 2>&1
}
