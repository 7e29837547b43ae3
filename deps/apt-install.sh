#!/bin/bash
# deps/apt-install.sh KIND...: installs, with apt-get, the packages of
# deps/packages marked with any of the KINDs (build, demo, tests).
# Prints the list it installs first, so a log shows what was asked for.
set -euo pipefail
list=$(dirname "$0")/packages
[ $# -gt 0 ] || { echo "usage: $0 build|demo|tests..." >&2; exit 2; }
pkgs=$(awk -v kinds=" $* " '
	/^[[:space:]]*(#|$)/ { next }
	index(kinds, " " $2 " ") { print $1 }' "$list")
[ -n "$pkgs" ] || { echo "$0: no package in $list is marked $*" >&2; exit 1; }
echo "installing ($*):" $pkgs
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086 # one word per package
apt-get install -y --no-install-recommends $pkgs
