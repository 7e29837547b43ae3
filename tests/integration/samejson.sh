#!/bin/bash
# One result vocabulary: fatelf VERB --root DIR --json prints what
# fatelfctl --json VERB prints against a fatelfd, member for member. The
# same bundles go through both on two equal roots (an image built
# offline, and a private fatelfd's root): install of one bundle (result)
# and of two (results), list (with config_files once a removal kept a
# changed config), files (a fat program's records, a symlink, the
# directories), owner of a path and of a word, verify with a problem,
# remove of one package and of two. Each pair must have the same set of
# member names, recursively (each entry of an array, values not compared:
# paths, times and ids differ). That the comparison can fail is shown on
# the install's reply with one member taken out.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/tests/lib/daemon.sh"

t_init samejson
t_require_exec "$FATELF" "$FATELFD" "$FATELFCTL"
t_require_tool jq gcc

daemon_vendor_key
hello_inputs
[ "${#inputs[@]}" -ge 1 ] || t_skip "no compiler built hello"

# app: a fat program, a config file, a doc and a symlink to it; lib and
# extra: a file each.
mkdir -p ta/usr/bin ta/etc/app ta/usr/share/doc/app tl/opt/lib tx/opt/extra
"$FATELF" glue -o ta/usr/bin/app "${inputs[@]}" >/dev/null || fail "glue app" "no FatELF program"
echo "setting=1" >ta/etc/app/app.conf
echo "app 1.0" >ta/usr/share/doc/app/README
ln -s README ta/usr/share/doc/app/LINK
echo "lib" >tl/opt/lib/file
echo "extra" >tx/opt/extra/file
"$FATELF" bundle create -o app-1.fatbundle --name app --version 1.0 --summary "an app" --license MIT \
	--homepage https://example.org/app --sign vendor.key ta >/dev/null
"$FATELF" bundle create -o lib-1.fatbundle --name lib --version 1 --sign vendor.key tl >/dev/null
"$FATELF" bundle create -o extra-1.fatbundle --name extra --version 1 --sign vendor.key tx >/dev/null

daemon_init
daemon_prepare d
daemon_start d || fail "fatelfd starts" "see $T_WORK/d/log"
IMG=$T_WORK/img
mkdir -p "$IMG/etc/fatelf/keys.d" && cp vendor.pub "$IMG/etc/fatelf/keys.d/"

# members: the member names of the JSON on stdin, one path a line
# (a.b.0.c: an array's entries by index, as equal states have the same
# entries in the same order, and each entry must have the members its
# counterpart has), sorted.
members() {
	jq -r '[paths | map(tostring) | join(".")] | sort | .[]'
}

# reply: fatelfctl's last reply on stdin (it prints a line a reply, the
# progress of an install first).
reply() {
	jq -c -s 'map(select(has("progress") | not)) | last'
}

# same DESC ROOT_JSON CTL_JSON: the same member names, and not none.
same() {
	local a b
	a=$(members <<<"$2" 2>&1)
	b=$(members <<<"$3" 2>&1)
	if [ -n "$a" ] && [ "$a" = "$b" ]; then
		pass "$1"
	else
		fail "$1" "fatelf --root | fatelfctl:" "$(diff <(echo "$a") <(echo "$b") | grep '^[<>]')" \
			"fatelf --root: $2" "fatelfctl: $3"
	fi
}

# both DESC ROOT_ARGS -- CTL_ARGS: runs each, both must exit alike, and
# compares their JSON.
both() {
	local desc=$1 rc_root
	shift
	local root_args=() ctl_args=()
	while [ "$1" != -- ]; do root_args+=("$1"); shift; done
	shift
	ctl_args=("$@")
	run "$FATELF" "${root_args[0]}" --root "$IMG" --json "${root_args[@]:1}"
	rc_root=$RC
	out_root=$RUN_OUT
	run ctl --json "${ctl_args[@]}"
	check_eq "$desc: the same exit status" "$rc_root" "$RC"
	same "$desc: the same members" "$out_root" "$(reply <<<"$RUN_OUT")"
}

both "install of one bundle" install app-1.fatbundle -- install app-1.fatbundle
INSTALL_ROOT=$(members <<<"$out_root")
check_match "... a result with its signature" "^result\.signer$" "$INSTALL_ROOT"
# The comparison fails where a member differs.
INSTALL_CTL=$(reply <<<"$RUN_OUT")
check_eq "a reply short of one member is told apart" "differ" \
	"$([ "$(members <<<"$INSTALL_CTL")" = "$(jq -c 'del(.result.signer)' <<<"$INSTALL_CTL" | members)" ] &&
		echo same || echo differ)"

both "install of two bundles in one transaction" install lib-1.fatbundle extra-1.fatbundle -- \
	install lib-1.fatbundle extra-1.fatbundle
check_match "... results" "^results\.1\.new_version$" "$(members <<<"$out_root")"
both "list" list -- list
both "files of a fat program's package" files app -- files app
check_match "... the records of the fat program" "^files\.[0-9]+\.records\.0\.kept$" "$(members <<<"$out_root")"
both "owner of a path" owner /usr/bin/app -- owner /usr/bin/app
check_match "... package and file" "^file\.installed_form$" "$(members <<<"$out_root")"
both "owner of a word" owner README -- owner README
check_match "... files" "^files\.0\.package$" "$(members <<<"$out_root")"

echo "changed" >"$IMG/usr/share/doc/app/README"
echo "changed" >"$ROOT/usr/share/doc/app/README"
both "verify with a problem" verify app -- verify app
check_match "... a problem" "^problems\.0\.detail$" "$(members <<<"$out_root")"

echo "mine" >"$IMG/etc/app/app.conf"
echo "mine" >"$ROOT/etc/app/app.conf"
both "remove of one package" remove app -- remove app
check_match "... a result" "^result\.config_kept$" "$(members <<<"$out_root")"
both "list with a package in config-files state" list -- list
check_match "... config_files" "^config_files\.0\.name$" "$(members <<<"$out_root")"
both "remove of two packages in one transaction" remove lib extra -- remove lib extra

daemon_stop
check_eq "fatelfd stops cleanly" 0 "$DAEMON_STATUS"
t_done
