#!/bin/bash
# The bash completion of fatelf, its historical names and fatelfctl
# (data/completions/), as bash-completion loads it: by command name, from
# the completions directory that make install-data filled (given to
# bash-completion as BASH_COMPLETION_USER_DIR). Each check sets COMP_WORDS, COMP_CWORD, COMP_LINE
# and COMP_POINT as bash does for a command line (words broken at '=' and
# ':' too), calls the function 'complete -p' names, and compares COMPREPLY,
# sorted. Package and repository names come from a private fatelfd
# (tests/lib/daemon.sh) with a package installed and a file:// repository,
# named with --socket, --socket=, or $FATELF_SOCKET; with no daemon there
# is nothing, quietly. Guards against drift: the verbs offered are the
# program's own, every option offered is one the verb accepts, and for
# the bundle and repo verbs (whose options are a table in the completion)
# the options offered are exactly those each verb accepts.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init completion
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool make gcc aarch64-linux-gnu-gcc minisign timeout jq
BASH_COMPLETION_MAIN=/usr/share/bash-completion/bash_completion
[ -r "$BASH_COMPLETION_MAIN" ] || t_skip "bash-completion is not installed"

# ---- the completions directory, as make install makes it
run make -C "$top_builddir" install-data DESTDIR="$T_WORK/dest"
check_eq "make install-data DESTDIR=... succeeds" 0 "$RC"
compdir=$(find "$T_WORK/dest" -type d -path '*/bash-completion/completions' | head -1)
check_eq "it installs the completions of fatelf and fatelfctl, and links for the historical names" \
	"fatelf fatelf-extract->fatelf fatelf-glue->fatelf fatelf-info->fatelf fatelf-remove->fatelf fatelf-replace->fatelf fatelf-split->fatelf fatelf-validate->fatelf fatelf-verify->fatelf fatelfctl" \
	"$(cd "$compdir" 2>/dev/null && for f in $(LC_ALL=C ls); do
		if [ -L "$f" ]; then printf '%s->%s ' "$f" "$(readlink "$f")"; else printf '%s ' "$f"; fi
	done | sed 's/ $//')"
check "... as they are in the source tree" cmp "$compdir/fatelfctl" "$top_srcdir/data/completions/fatelfctl"
mkdir -p bc
ln -s "$compdir" bc/completions
BIN=$(dirname "$FATELF")
CTLBIN=$(dirname "$FATELFCTL")

# The driver: a fresh bash per command line, with bash-completion loaded.
cat >driver.sh <<'EOF'
. "$BASH_COMPLETION_MAIN"
# comp LINE: COMPREPLY for LINE with the cursor at its end, one a line.
comp() {
	local line=$1 w f
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMP_WORDS=()
	for w in $line; do
		# readline breaks words at COMP_WORDBREAKS too ('=' and ':' here)
		while [[ $w =~ ^([^=:]*)([=:])(.*)$ ]]; do
			[[ -n ${BASH_REMATCH[1]} ]] && COMP_WORDS+=("${BASH_REMATCH[1]}")
			COMP_WORDS+=("${BASH_REMATCH[2]}")
			w=${BASH_REMATCH[3]}
		done
		[[ -n $w ]] && COMP_WORDS+=("$w")
	done
	[[ $line == *" " || $line == *[=:] ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	complete -p "${COMP_WORDS[0]}" >/dev/null 2>&1 || __load_completion "${COMP_WORDS[0]}"
	f=$(complete -p "${COMP_WORDS[0]}" 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
	[[ -n $f ]] || { echo "no completion for ${COMP_WORDS[0]}" >&2; return 1; }
	"$f" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]:-}"
	printf '%s\n' "${COMPREPLY[@]}"
}
comp "$1"
EOF

# complete LINE: sets GOT to the sorted completions (one a line), and
# fails a check when the completion wrote anything on stderr.
GOT=
complete_line() {
	GOT=$(cd "$T_WORK/files" && env -i HOME="$T_WORK" PATH="$BIN:$CTLBIN:/usr/bin:/bin" \
		BASH_COMPLETION_USER_DIR="$T_WORK/bc" BASH_COMPLETION_MAIN="$BASH_COMPLETION_MAIN" \
		${EXTRA_ENV:+"$EXTRA_ENV"} bash --norc --noprofile "$T_WORK/driver.sh" "$1" \
		2>"$T_WORK/comp.err" | LC_ALL=C sort)
	if [ -s "$T_WORK/comp.err" ]; then
		fail "'$1<TAB>' writes nothing on stderr" "$(head -5 "$T_WORK/comp.err")"
	fi
}

# check_comp LINE WANT...: the completions of LINE are exactly WANT.
check_comp() {
	local line=$1 want
	shift
	want=$(printf '%s\n' "$@" | LC_ALL=C sort)
	[ $# -eq 0 ] && want=
	complete_line "$line"
	check_eq "'$line<TAB>' offers: $*" "$want" "$GOT"
}

# lines TEXT: TEXT's words sorted, one a line.
lines() {
	printf '%s\n' $1 | LC_ALL=C sort -u
}

# ---- fixtures: a fat file, bundles, and a file:// repository
mkdir -p files/www files/tree/opt/hello files/nobundles
gcc -static -O2 -o in-x86_64 "$top_srcdir/tests/integration/hello.c"
aarch64-linux-gnu-gcc -static -O2 -o in-aarch64 "$top_srcdir/tests/integration/hello.c"
check "glue a fat file (x86_64, aarch64)" "$FATELF" glue -o files/fat in-x86_64 in-aarch64
echo hello >files/tree/opt/hello/readme
echo notes >files/notes.txt
echo other >files/nobundles/data.txt
check "bundle create hello 1.0" "$FATELF" bundle create -o files/hello-1.fatbundle --name hello --version 1.0 files/tree
check "bundle create webtool 2.0" "$FATELF" bundle create -o files/web-2.fatbundle --name webtool --version 2.0 files/tree
minisign -G -W -f -p repo.pub -s repo.key >/dev/null 2>&1 || fail "minisign -G" "no key"
check "repo init" "$FATELF" repo init --sign repo.key files/www
check "repo add both" "$FATELF" repo add --sign repo.key files/www files/hello-1.fatbundle files/web-2.fatbundle

daemon_init
mkdir -p keys
DAEMON_KEYS=$T_WORK/keys
daemon_prepare d RequireSignature=no "Repositories=$T_WORK/d/repos.d"
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
check "install hello from its bundle" ctl install files/hello-1.fatbundle
check "repo add main file://" ctl repo add main "file://$T_WORK/files/www" --key repo.pub
check "update main" ctl update
check "key add repo.pub" ctl key add repo.pub
keyid=$(ctl --json key list | jq -r '.keys[0].id')

# ---- fatelfctl: verbs and options from its own help
ctl_verbs=$("$FATELFCTL" --help | awk '$0 == "Verbs:" { on = 1; next } on && /^$/ { exit } on { print $1 }')
complete_line "fatelfctl "
check_eq "'fatelfctl <TAB>' offers the verbs of fatelfctl --help" "$(lines "$ctl_verbs")" "$GOT"
check_match "... among them install, remove, repo and search" \
	'install.*remove.*repo.*search' "$(echo $GOT)"
check_comp "fatelfctl in" info install
check_comp "fatelfctl -" --help --json --socket --version
check_comp "fatelfctl install --po" --policy
check_comp "fatelfctl install --policy " compatible keep native targets
check_comp "fatelfctl list -" --help --json --socket --upgradable
check_comp "fatelfctl thin --all --targets x86_64,aa" x86_64,aarch64 x86_64,aarch64_be
check_comp "fatelfctl help rem" remove

# every option offered for a verb is one it accepts: fatelfctl VERB --OPT x
# gives no "unknown option" (the socket leads nowhere, so nothing runs)
bad=
for v in $ctl_verbs; do
	[ "$v" = help ] && continue
	complete_line "fatelfctl $v --"
	for o in $GOT; do
		err=$(timeout 10 "$FATELFCTL" --socket "$T_WORK/none.sock" "$v" "$o" x 2>&1 >/dev/null </dev/null | head -1)
		case $err in *"unknown option"* | *"unrecognized option"*) bad+=" $v $o" ;; esac
	done
done
check_eq "every option offered for each fatelfctl verb is accepted by it" "" "$bad"

# ---- fatelfctl: names from the daemon, through --socket, --socket= and $FATELF_SOCKET
check_comp "fatelfctl --socket $SOCK remove h" hello
check_comp "fatelfctl remove --socket=$SOCK h" hello
check_comp "fatelfctl --socket $SOCK files " hello
check_comp "fatelfctl --socket $SOCK hold " hello
check_comp "fatelfctl --socket $SOCK key " add list remove
check_comp "fatelfctl --socket $SOCK key remove " "$keyid"
EXTRA_ENV="FATELF_SOCKET=$SOCK" check_comp "fatelfctl info " hello webtool
# the aliases as the verbs they run: show as info, purge as remove
EXTRA_ENV="FATELF_SOCKET=$SOCK" check_comp "fatelfctl show " hello webtool
check_comp "fatelfctl --socket $SOCK purge h" hello
check_comp "fatelfctl --socket $SOCK install w" web-2.fatbundle webtool www
check_comp "fatelfctl --socket $SOCK install " hello hello-1.fatbundle nobundles tree web-2.fatbundle webtool www
check_comp "fatelfctl --socket $SOCK install webtool=" 2.0
check_comp "fatelfctl --socket $SOCK install ./h" ./hello-1.fatbundle
check_comp "fatelfctl --socket $SOCK search " hello webtool
check_comp "fatelfctl --socket $SOCK repo " add list remove
check_comp "fatelfctl --socket $SOCK repo remove " main
check_comp "fatelfctl --socket $SOCK update " main
start=$(date +%s)
check_comp "fatelfctl --socket $T_WORK/none.sock remove h"
check_eq "... quietly and at once when no daemon listens" yes "$([ $(($(date +%s) - start)) -lt 5 ] && echo yes)"

# ---- fatelf: commands and options from its own help
cmds=$("$FATELF" --help | awk '$0 == "Commands:" { on = 1; next } on && /^$/ { exit } on { print $1 }')
complete_line "fatelf "
check_eq "'fatelf <TAB>' offers the commands of fatelf --help" "$(lines "$cmds")" "$GOT"
check_comp "fatelf th" thin
check_comp "fatelf thin -" --compatible --elf --fat --help --host --output
check_comp "fatelf targets -" --help --json --names
bad=
for c in $cmds; do
	case $c in bundle | repo | help) continue ;; esac
	complete_line "fatelf $c --"
	for o in $GOT; do
		err=$(cd "$T_WORK/files/nobundles" && "$FATELF" "$c" "$o" x 2>&1 >/dev/null </dev/null | head -1)
		case $err in *"unknown option"* | *"unrecognized option"*) bad+=" $c $o" ;; esac
	done
done
check_eq "every option offered for each fatelf command is accepted by it" "" "$bad"

# ---- target names: the file's own records once it is named, else every familiar one
check_comp "fatelf extract -o out fat " aarch64 host x86_64
check_comp "fatelf extract -o out fat a" aarch64
check_comp "fatelf verify fat x" x86_64
check_comp "fatelf remove -o out fat " aarch64 x86_64
check_comp "fatelf bundle extract --target aa" aarch64 aarch64_be
check_comp "fatelf bundle create --from arm" arm= arm64= armeb= armhf=
complete_line "fatelf bundle extract --target "
names=$("$FATELF" targets --names)
check_eq "'fatelf bundle extract --target <TAB>' offers fatelf targets --names and host" \
	"$(lines "$names host")" "$GOT"
bad=
for n in $names; do
	"$FATELF" verify files/fat "$n" 2>&1 | grep -q "target name '" && bad+=" $n"
done
check_eq "every name of fatelf targets --names is a target name the commands take" "" "$bad"
check_match "... x86_64, amd64, aarch64 and arm64 among them" \
	'x86_64 amd64 .*aarch64 arm64' "$(echo $names)"
run "$FATELF" targets --names --json
check_eq "targets --names --json: aarch64's row" "arm64 aarch64:64bits:le" \
	"$(jq -r '.[] | select(.arch == "aarch64") | "\(.debian) \(.target)"' <<<"$RUN_OUT")"

# ---- fatelf bundle and repo: their verbs, operands and files
sub=$("$FATELF" bundle --help | awk '{ for (i = 1; i < NF; i++) if ($i == "fatelf" && $(i + 1) == "bundle") print $(i + 2) }')
complete_line "fatelf bundle "
check_eq "'fatelf bundle <TAB>' offers the verbs of its help" "$(lines "$sub")" "$GOT"
check_match "... create, extract, inspect and verify among them" \
	'create extract inspect .*verify' "$(echo $GOT)"
check_comp "fatelf repo " add gc init list push remove verify
check_comp "fatelf bundle inspect " hello-1.fatbundle nobundles tree web-2.fatbundle www
check_comp "fatelf bundle verify --key ../repo" ../repo.pub
check_comp "fatelf bundle inspect nobundles/" nobundles/data.txt
check_comp "fatelf bundle extract hello-1.fatbundle " nobundles tree www
check_comp "fatelf bundle create --compression " gzip none xz zstd
check_comp "fatelf repo remove www " hello webtool
check_comp "fatelf repo add www " hello-1.fatbundle nobundles tree web-2.fatbundle www
check_comp "fatelf info n" nobundles notes.txt
check_comp "fatelf help b" bundle

# The options offered for each bundle and repo verb are exactly those it
# accepts, among every option their helps name (run in an empty
# directory). getopt_long takes an unambiguous prefix of an option too, so
# a name that begins another accepted one (--vendor of --vendor-key) is
# not counted.
cands=$( { "$FATELF" bundle --help; "$FATELF" repo --help; "$FATELF" repo push --help; } |
	grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
mkdir -p probe
for group in bundle repo; do
	for v in $(awk -v g=$group '{ for (i = 1; i < NF; i++) if ($i == "fatelf" && $(i + 1) == g) print $(i + 2) }' \
		<<<"$("$FATELF" $group --help)" | sort -u); do
		complete_line "fatelf $group $v --"
		accepted=
		for o in $cands $GOT; do
			rm -rf probe && mkdir probe
			err=$(cd probe && timeout 10 "$FATELF" $group "$v" "$o" x 2>&1 >/dev/null </dev/null | head -1)
			case $err in *"unknown option"* | *"unrecognized option"*) ;; *) accepted+=" $o" ;; esac
		done
		whole=
		for o in $accepted; do
			[[ " $accepted " == *" $o"-* ]] || whole+=" $o"
		done
		accepted=$whole
		check_eq "'fatelf $group $v --<TAB>' offers the options it accepts" "$(lines "$accepted")" "$GOT"
	done
done

# ---- the historical names, loaded through their links
check_comp "fatelf-extract out fat " aarch64 host x86_64
check_comp "fatelf-verify fat a" aarch64
check_comp "fatelf-info n" nobundles notes.txt

daemon_stop
check_no_sanitizer_report
t_done
