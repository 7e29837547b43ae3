#!/bin/bash
# The --json outputs of fatelf repo are JSON whatever the names a user
# gives: a repository directory and a bundle file whose names hold a
# double quote, a backslash, control characters and non-ASCII letters come
# back out of a JSON parser (python3's) as the very same strings, in every
# verb's result and in an error's subject.
. "$(dirname "$0")/lib.sh"

t_init jsonout
t_require_exec "$FATELF"
t_require_tool python3

# jget FILE EXPR: python3 parses FILE (bytes, as printed) and prints
# repr() of EXPR over it (j is the document), or "PARSE ERROR: ...".
jget() {
	python3 -c '
import json, sys
try:
    j = json.loads(open(sys.argv[1], "rb").read())
except ValueError as e:
    print("PARSE ERROR:", e)
    sys.exit(0)
print(repr(eval(sys.argv[2])))' "$1" "$2"
}
# pyrepr STRING: repr() of the string as python3 reads it from argv
pyrepr() { python3 -c 'import sys; print(repr(sys.argv[1]))' "$1"; }

# Every kind of byte a JSON string must escape, and some it must not.
ODD=$'r"1 back\\slash tab\tnl\nbell\a esc\e del\x7f caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6'
DIR=$ODD.repo
BUNDLE=$ODD.fatbundle

mkdir -p tree/opt/x
printf 'data\n' >tree/opt/x/data
check "a bundle whose file name holds quotes, control and non-ASCII characters" \
	"$FATELF" bundle create -o "$BUNDLE" --name odd --version 1.0 tree

# ---- repo init
run "$FATELF" repo init --json "$DIR"
check_eq "repo init --json exits 0" 0 "$RC"
printf '%s\n' "$RUN_OUT" >init.json
check_eq "... its output parses, with the directory's name as given" "$(pyrepr "$DIR")" \
	"$(jget init.json 'j["repository"]')"
check_eq "... serial 1" 1 "$(jget init.json 'j["serial"]')"
ID=$(jget init.json 'j["id"]')
check_match "... and an id" "^'[0-9a-f]{16,}'$" "$ID"

# ---- repo add
run "$FATELF" repo add --json "$DIR" "$BUNDLE"
check_eq "repo add --json exits 0" 0 "$RC"
printf '%s\n' "$RUN_OUT" >add.json
check_eq "... its output parses, with the repository's and the bundle's names as given" \
	"$(pyrepr "$DIR") $(pyrepr "$BUNDLE")" "$(jget add.json 'j["repository"]') $(jget add.json 'j["added"][0]["bundle"]')"
check_eq "... the package added, serial 2" "'odd' '1.0' 2" \
	"$(jget add.json 'j["added"][0]["name"]') $(jget add.json 'j["added"][0]["version"]') $(jget add.json 'j["serial"]')"

# ---- repo list, verify
run "$FATELF" repo list --json "$DIR"
printf '%s\n' "$RUN_OUT" >list.json
check_eq "repo list --json parses, and keeps the id repo init printed" "$ID" "$(jget list.json 'j["repository"]')"
run "$FATELF" repo verify --json "$DIR"
check_eq "repo verify --json exits 0" 0 "$RC"
printf '%s\n' "$RUN_OUT" >verify.json
check_eq "... its output parses: ok, unsigned, 1 package, 1 version, serial 2" "True False 1 1 2" \
	"$(jget verify.json '" ".join(str(j[k]) for k in ("ok", "signed", "packages", "versions", "serial"))' | tr -d "'")"

# ---- repo remove, gc
run "$FATELF" repo remove --json "$DIR" odd
check_eq "repo remove --json exits 0" 0 "$RC"
printf '%s\n' "$RUN_OUT" >remove.json
check_eq "... its output parses: 1 removed, serial 3" "1 3" \
	"$(jget remove.json 'j["removed"]') $(jget remove.json 'j["serial"]')"
run "$FATELF" repo gc --json "$DIR"
check_eq "repo gc --json exits 0" 0 "$RC"
printf '%s\n' "$RUN_OUT" >gc.json
check_match "... its output parses: files and bytes removed" "^[1-9][0-9]* [1-9][0-9]*$" \
	"$(jget gc.json 'j["removed"]') $(jget gc.json 'j["bytes"]')"

# ---- an error names the odd directory in its subject
run "$FATELF" repo gc --json "$ODD.missing"
check_eq "repo gc --json of a missing directory exits 3" 3 "$RC"
printf '%s\n' "$RUN_OUT" >error.json
check_eq "... its error parses, with the directory's name as the subject" "$(pyrepr "$ODD.missing")" \
	"$(jget error.json 'j["error"]["subject"]')"

t_done
