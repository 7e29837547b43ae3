#!/bin/bash
# A root that an unprivileged user owns: fatelf install|remove|list|owner
# --root DIR, run by root, reach DIR's state directory, its store and its
# trusted keys from a descriptor of DIR without following any symlink, so
# links uid 65534 planted in DIR lead nowhere outside it:
#  - DIR/var/lib/fatelf, DIR/var/lib or DIR/var a symlink to a directory
#    outside: refused (ELOOP, exit 3), the error naming the link; the
#    outside directory keeps its files and modes, nothing is created there;
#  - DIR/etc/fatelf/keys.d or DIR/etc a symlink to a directory of keys
#    outside: refused, and a bundle signed with such a key is not
#    installed;
#  - a state directory uid 65534 owns: refused (ENGINE_E_DIR_UNSAFE,
#    exit 1), naming it and its owner, by install and by list;
#  - fatelf.db a symlink to a SQLite database outside (an image unpacked
#    with its owners kept): refused by install and list (ELOOP), the file
#    outside unchanged; fatelf.db or the lock a hard link to a file
#    outside: refused (EMLINK), the file's mode unchanged;
#  - SQLite opens the store's files through the checked directory's
#    descriptor, never by the directory's name (strace);
#  - fatelfd --root DIR --state-dir DIR/var/lib/fatelf with that link
#    planted refuses to start, naming it; so does one whose --state-dir
#    outside the root is a symlink, or goes through one in a directory
#    others may write;
#  - a fatelfd started on such a root (--state-dir DIR/var/lib/fatelf)
#    keeps its files there through the state directory's descriptor: once
#    the user swaps DIR/var/lib for a symlink outside, update, install
#    (the download cache) and repo remove go on in the real state
#    directory, a verify (which opens the store anew) is refused, nothing
#    is written outside;
#  - a normal root that uid 65534 owns still works: install, list, owner,
#    remove.
. "$(dirname "$0")/lib.sh" || exit 99

rl_init rootlinks
t_require_tool sqlite3 stat
[ "$(id -u)" -eq 0 ] || t_skip "chown to uid 65534 and root's refusals: needs root"

mkdir -p tree/opt/rl
echo "a file of the rl package" >tree/opt/rl/README
rl_bundle rl-1.fatbundle rl 1 tree || { echo "Bail out! rl_bundle"; exit 99; }
# A key the root's owner controls, kept outside the root.
minisign -G -W -f -p evil.pub -s evil.key >/dev/null 2>&1 || { echo "Bail out! minisign -G"; exit 99; }
mkdir -p etree/opt/evil
echo "evil" >etree/opt/evil/file
"$FATELF" bundle create -o evil-1.fatbundle --name evil --version 1 --sign evil.key etree >/dev/null ||
	{ echo "Bail out! bundle create"; exit 99; }

# newroot NAME: a root uid 65534 owns, that trusts the suite's key.
newroot() {
	R=$T_WORK/$1
	rm -rf "$R"
	mkdir -p "$R/etc/fatelf/keys.d" "$R/var/lib"
	cp "$RL_PUB" "$R/etc/fatelf/keys.d/rl.pub"
	chown -R 65534:65534 "$R"
}

# OUT: a root-owned directory outside every root, with a file and a
# directory of its own; snap: what it holds, with owners and modes.
OUT=$T_WORK/outside
mkdir -p "$OUT/sub"
echo "outside" >"$OUT/file"
chmod 0755 "$OUT" "$OUT/sub"
chmod 0644 "$OUT/file"
snap() { (cd "$1" && find . -printf '%p %y %m %u %s %l\n' | LC_ALL=C sort &&
	find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); }
OUT_BEFORE=$(snap "$OUT")
out_unchanged() {
	check_eq "... the directory outside is unchanged (files, owners, modes)" "$OUT_BEFORE" "$(snap "$OUT")"
}

# refused DESC EXIT CODE ERE CMD...: CMD (a --root command with --json)
# exits EXIT, its JSON error has CODE, its message matches ERE.
refused() {
	local desc=$1 ex=$2 code=$3 ere=$4
	shift 4
	run "$@"
	check_eq "$desc: exit $ex" "$ex" "$RC"
	check_eq "... the error's code is $code" "$code" "$(jq -r .error.code <<<"$RUN_OUT" 2>&1)"
	check_match "... naming it" "$ere" "$RUN_ERR"
}

# ================================================================ a normal root
newroot good
run "$FATELF" install --root "$R" rl-1.fatbundle
check_eq "install --root of a root uid 65534 owns: exit 0" 0 "$RC"
check_eq "... the file is installed" "a file of the rl package" "$(cat "$R/opt/rl/README" 2>&1)"
check_eq "... the state directory is root's, 0700" "0:700" "$(stat -c %u:%a "$R/var/lib/fatelf")"
run "$FATELF" list --root "$R" --json
check_eq "list --root: exit 0" 0 "$RC"
check_eq "... lists rl 1" "rl 1" "$(jq -r '.packages[] | "\(.name) \(.version)"' <<<"$RUN_OUT" 2>&1)"
run "$FATELF" owner --root "$R" /opt/rl/README
check_eq "owner --root: exit 0" 0 "$RC"
check_match "... names rl" "rl" "$RUN_OUT"
run "$FATELF" remove --root "$R" rl
check_eq "remove --root: exit 0" 0 "$RC"
check_eq "... the file is gone" "no" "$([ -e "$R/opt/rl/README" ] && echo yes || echo no)"

# ================================================================ the state directory
for link in var/lib/fatelf var/lib var; do
	newroot "link-${link//\//-}"
	rm -rf "${R:?}/$link"
	mkdir -p "$(dirname "$R/$link")"
	ln -s "$OUT" "$R/$link"
	chown -h 65534:65534 "$R/$link" "$(dirname "$R/$link")"
	refused "$link a symlink to a directory outside: install refused" 3 ELOOP \
		"state directory $R/var/lib/fatelf: $R/$link is a symbolic link inside the root: refusing it" \
		"$FATELF" install --root "$R" --json rl-1.fatbundle
	out_unchanged
	check_eq "... nothing installed" "no" "$([ -e "$R/opt/rl" ] && echo yes || echo no)"
	refused "... remove refused" 3 ELOOP "$R/$link is a symbolic link" \
		"$FATELF" remove --root "$R" --json rl
	out_unchanged
done
# A list (read-only) of a root whose state directory leads outside,
# where a store is: refused, not read.
mkdir -p "$T_WORK/outstate"
run "$FATELF" install --root "$T_WORK/good" rl-1.fatbundle
cp -a "$T_WORK/good/var/lib/fatelf/." "$T_WORK/outstate/"
OUTSTATE_BEFORE=$(snap "$T_WORK/outstate")
newroot liststate
ln -s "$T_WORK/outstate" "$R/var/lib/fatelf"
refused "a store outside through var/lib/fatelf: list refused" 3 ELOOP \
	"$R/var/lib/fatelf is a symbolic link" "$FATELF" list --root "$R" --json
refused "... owner refused" 3 ELOOP "$R/var/lib/fatelf is a symbolic link" \
	"$FATELF" owner --root "$R" --json /opt/rl/README
check_eq "... the store outside is unchanged" "$OUTSTATE_BEFORE" "$(snap "$T_WORK/outstate")"

newroot owned
mkdir -p "$R/var/lib/fatelf"
chown 65534:65534 "$R/var/lib/fatelf"
chmod 0700 "$R/var/lib/fatelf"
refused "a state directory uid 65534 owns: install refused" 1 ENGINE_E_DIR_UNSAFE \
	"state directory $R/var/lib/fatelf is owned by uid 65534, not by uid 0: refusing it" \
	"$FATELF" install --root "$R" --json rl-1.fatbundle
check_eq "... nothing created in it" "" "$(ls -A "$R/var/lib/fatelf")"
check_eq "... its owner and mode unchanged" "65534:700" "$(stat -c %u:%a "$R/var/lib/fatelf")"
touch "$R/var/lib/fatelf/fatelf.db"
chown 65534:65534 "$R/var/lib/fatelf/fatelf.db"
refused "... list refused" 1 ENGINE_E_DIR_UNSAFE "state directory $R/var/lib/fatelf is owned by uid 65534" \
	"$FATELF" list --root "$R" --json

# ================================================================ the store's files
# A SQLite database outside (rollback journal): opening it as the store
# would turn it to WAL mode and write beside it.
sqlite3 "$T_WORK/outside.db" "CREATE TABLE t(a); INSERT INTO t VALUES (1);"
chmod 0644 "$T_WORK/outside.db"
dbsnap() { ls -l --time-style=+ "$T_WORK"/outside.db* | awk '{print $1, $5, $NF}'; sha256sum "$T_WORK/outside.db"; }
DB_BEFORE=$(dbsnap)
newroot dblink
mkdir -m 0700 "$R/var/lib/fatelf"
ln -s "$T_WORK/outside.db" "$R/var/lib/fatelf/fatelf.db"
refused "fatelf.db a symlink to a database outside: list refused" 3 ELOOP \
	"$R/var/lib/fatelf/fatelf.db is a symbolic link: refusing it" "$FATELF" list --root "$R" --json
check_eq "... the database outside is unchanged, nothing beside it" "$DB_BEFORE" "$(dbsnap)"
refused "... install refused" 3 ELOOP "$R/var/lib/fatelf/fatelf.db is a symbolic link" \
	"$FATELF" install --root "$R" --json rl-1.fatbundle
check_eq "... the database outside is unchanged, nothing beside it" "$DB_BEFORE" "$(dbsnap)"

newroot dbhard
mkdir -m 0700 "$R/var/lib/fatelf"
ln "$T_WORK/outside.db" "$R/var/lib/fatelf/fatelf.db"
refused "fatelf.db a hard link to a database outside: install refused" 3 EMLINK \
	"$R/var/lib/fatelf/fatelf.db has 2 hard links" "$FATELF" install --root "$R" --json rl-1.fatbundle
check_eq "... the database outside is unchanged (mode 0644)" "$DB_BEFORE" "$(dbsnap)"

newroot lockhard
mkdir -m 0700 "$R/var/lib/fatelf"
ln "$OUT/file" "$R/var/lib/fatelf/lock"
refused "the lock a hard link to a file outside: install refused" 3 EMLINK \
	"$R/var/lib/fatelf/lock has 2 hard links" "$FATELF" install --root "$R" --json rl-1.fatbundle
rm -f "$R/var/lib/fatelf/lock"
out_unchanged

# ================================================================ the trusted keys
mkdir -p "$T_WORK/outkeys"
cp evil.pub "$T_WORK/outkeys/evil.pub"
newroot keyslink
rm -rf "$R/etc/fatelf/keys.d"
ln -s "$T_WORK/outkeys" "$R/etc/fatelf/keys.d"
refused "etc/fatelf/keys.d a symlink to keys outside: install refused" 3 ELOOP \
	"trusted keys $R/etc/fatelf/keys.d: $R/etc/fatelf/keys.d is a symbolic link inside the root" \
	"$FATELF" install --root "$R" --json evil-1.fatbundle
check_eq "... the bundle signed with the key outside is not installed" "no" \
	"$([ -e "$R/opt/evil" ] && echo yes || echo no)"
newroot etclink
mkdir -p "$T_WORK/outetc/fatelf"
ln -s "$T_WORK/outkeys" "$T_WORK/outetc/fatelf/keys.d"
rm -rf "$R/etc"
ln -s "$T_WORK/outetc" "$R/etc"
refused "etc a symlink to a directory outside: install refused" 3 ELOOP \
	"trusted keys $R/etc/fatelf/keys.d: $R/etc is a symbolic link inside the root" \
	"$FATELF" install --root "$R" --json evil-1.fatbundle
check_eq "... the bundle signed with the key outside is not installed" "no" \
	"$([ -e "$R/opt/evil" ] && echo yes || echo no)"
newroot keyfile
ln -s "$T_WORK/outkeys/evil.pub" "$R/etc/fatelf/keys.d/evil.pub"
refused "a key in keys.d that is a symlink to a key outside: install refused" 3 ELOOP \
	"public key $R/etc/fatelf/keys.d/evil.pub is a symbolic link inside the root" \
	"$FATELF" install --root "$R" --json evil-1.fatbundle
check_eq "... the bundle signed with the key outside is not installed" "no" \
	"$([ -e "$R/opt/evil" ] && echo yes || echo no)"

# ================================================================ the store by descriptor
# SQLite opens the store, its log and its journal through the state
# directory's descriptor (/proc/self/fd/N/fatelf.db*), never by the
# directory's name, which the root's owner could point elsewhere between
# the check and the open.
if command -v strace >/dev/null; then
	newroot traced
	# LeakSanitizer cannot run under ptrace (a sanitizer build).
	nolsan=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	ASAN_OPTIONS=$nolsan strace -f -qq -o traced.txt -e trace=%file "$FATELF" install --root "$R" rl-1.fatbundle >/dev/null 2>&1
	check_eq "install --root under strace: exit 0" 0 "$?"
	ASAN_OPTIONS=$nolsan strace -f -qq -o traced-list.txt -e trace=%file "$FATELF" list --root "$R" >/dev/null 2>&1
	check_eq "list --root under strace: exit 0" 0 "$?"
	check_match "... the store was opened through a descriptor" '"/proc/self/fd/[0-9]+/fatelf\.db-wal"' \
		"$(cat traced.txt traced-list.txt)"
	check_eq "... and no file of the state directory by its name" "" \
		"$(grep -h -- "$R/var" traced.txt traced-list.txt)"
else
	echo "# skipped: the store opened by descriptor (strace is missing)"
fi

# ================================================================ fatelfd on such a root
newroot daemon
ln -s "$OUT" "$R/var/lib/fatelf"
printf '[Daemon]\nTrustedKeys=%s\n' "$DAEMON_KEYS" >daemon.conf
timeout 20 "$FATELFD" --socket "$DAEMON_SOCKDIR/rootlinks.sock" --root "$R" \
	--state-dir "$R/var/lib/fatelf" --config daemon.conf >daemon.log 2>&1
check_eq "fatelfd --state-dir ROOT/var/lib/fatelf, a symlink outside: refuses to start (exit 1)" 1 "$?"
check_match "... naming the link" "$R/var/lib/fatelf is a symbolic link inside the root: refusing it" \
	"$(cat daemon.log)"
out_unchanged
# A state directory named outside the root: a symlink on the way is
# followed only in a directory nobody but root may write, and the state
# directory itself is never one.
mkdir -p "$T_WORK/open"
chmod 0777 "$T_WORK/open"
ln -s "$OUT" "$T_WORK/open/st"
timeout 20 "$FATELFD" --socket "$DAEMON_SOCKDIR/rootlinks.sock" --root "$R" \
	--state-dir "$T_WORK/open/st/state" --config daemon.conf >daemon.log 2>&1
check_eq "fatelfd --state-dir through a symlink in a directory others may write: exit 1" 1 "$?"
check_match "... naming it" "$T_WORK/open/st is a symbolic link in a directory others may write" \
	"$(cat daemon.log)"
out_unchanged
timeout 20 "$FATELFD" --socket "$DAEMON_SOCKDIR/rootlinks.sock" --root "$R" \
	--state-dir "$T_WORK/open/st" --config daemon.conf >daemon.log 2>&1
check_eq "fatelfd --state-dir a symlink: exit 1" 1 "$?"
check_match "... naming it" "state directory $T_WORK/open/st is a symbolic link: refusing it" "$(cat daemon.log)"
out_unchanged


# ================================================================ fatelfd's own files, after a swap
# The daemon checked its state directory at start; the user who owns
# DIR/var then moves DIR/var/lib away and plants a symlink outside in its
# place. The repository's index, the download cache and last-verify.json
# are still written in the real state directory, never outside.
"$FATELF" repo init --sign "$RL_KEY" pub >/dev/null && "$FATELF" repo add --sign "$RL_KEY" pub rl-1.fatbundle >/dev/null ||
	{ echo "Bail out! repo init/add"; exit 99; }
daemon_prepare swap "Repositories=$T_WORK/swap/repos.d"
R=$T_WORK/swap/root
mkdir -p "$R/var/lib"
chown -R 65534:65534 "$R"
DAEMON_STATE_DIR=$R/var/lib/fatelf daemon_start swap || { echo "Bail out! fatelfd on the swap root"; exit 99; }
check "fatelfd --root DIR --state-dir DIR/var/lib/fatelf: repo add" ctl repo add a "file://$T_WORK/pub" --key "$RL_PUB"
check "... update" ctl update
check_eq "... the index kept in the state directory" "$("$FATELF" repo list --json pub | jq -r .serial)" \
	"$(jq -r .serial "$R/var/lib/fatelf/repos/a/index.json" 2>&1)"
check "... verify" ctl verify
check_eq "... last-verify.json in the state directory" "yes" \
	"$([ -f "$R/var/lib/fatelf/last-verify.json" ] && echo yes || echo no)"
mv "$R/var/lib" "$R/var/lib.old"
ln -s "$OUT" "$R/var/lib"
chown -h 65534:65534 "$R/var/lib"
STATE=$R/var/lib.old/fatelf
mkdir -p tree2/opt/rl
echo "rl 2" >tree2/opt/rl/README
rl_bundle rl-2.fatbundle rl 2 tree2 && "$FATELF" repo add --sign "$RL_KEY" pub rl-2.fatbundle >/dev/null ||
	{ echo "Bail out! repo add rl 2"; exit 99; }
check "var/lib swapped for a symlink outside: update" ctl update
check_eq "... the new index kept in the real state directory" "$("$FATELF" repo list --json pub | jq -r .serial)" \
	"$(jq -r .serial "$STATE/repos/a/index.json" 2>&1)"
out_unchanged
check "... install rl from the repository (the download cache)" ctl install rl
check_eq "... installed" "rl 2" "$(cat "$R/opt/rl/README" 2>&1)"
check_eq "... the cache in the real state directory" "yes" "$([ -d "$STATE/cache" ] && echo yes || echo no)"
out_unchanged
# A verify opens the store anew, by the state directory's name: refused.
run ctl verify
check_eq "... verify (the store opened anew by name): refused, exit 1" 1 "$RC"
check_match "... naming the link" "$R/var/lib is a symbolic link inside the root: refusing it" "$RUN_ERR"
out_unchanged
check "... repo remove a" ctl repo remove a
check_eq "... its index removed from the real state directory" "no" \
	"$([ -e "$STATE/repos/a" ] && echo yes || echo no)"
out_unchanged
daemon_stop
check_no_sanitizer_report

t_done
