#!/bin/bash
# fatelf bundle keygen against the real minisign: an encrypted key pair
# (the password fed on stdin) signs with minisign -S and verifies with
# minisign -V; fatelf bundle create --sign signs with it and bundle verify
# and minisign accept the signature; the key reads back only with its
# password; --no-password makes a key minisign uses without one; existing
# files are kept without --force, and replaced with it; mismatched or empty
# passwords are refused.
. "$(dirname "$0")/lib.sh"

t_init keygen
t_require_exec "$FATELF"
t_require_tool minisign bsdtar

echo "a message" >msg.txt

# ---- an encrypted pair
run bash -c "printf 'sesame\nsesame\n' | '$FATELF' bundle keygen -p k.pub -s k.key"
check_eq "keygen exits 0" 0 "$RC"
id=$(sed -n 's/^key \([0-9A-F]*\): .*(encrypted)$/\1/p' <<<"$RUN_OUT")
check_match "keygen names the key id and says it is encrypted" '^[0-9A-F]{1,16}$' "$id"
check_eq "the public key's comment is minisign's, with the id" \
	"untrusted comment: minisign public key $id" "$(head -1 k.pub)"
check_eq "the secret key is mode 600" 600 "$(file_mode k.key)"
check_eq "the public key is readable by all" 644 "$(file_mode k.pub)"
check_match "the secret key line says Ed, Sc (scrypt), B2" '^RWRTY0Iy' "$(sed -n 2p k.key)"

run bash -c "printf 'sesame\n' | minisign -S -s k.key -m msg.txt"
check_eq "minisign -S signs with it, given the password on stdin" 0 "$RC"
check "minisign -V verifies with the public key" minisign -V -p k.pub -m msg.txt
run bash -c "printf 'wrong\n' | minisign -S -s k.key -m msg.txt -x wrong.minisig"
check_eq "minisign refuses a wrong password (exit 2)" 2 "$RC"
check "... and wrote no signature" test ! -e wrong.minisig

# ---- bundle create --sign with it
mkdir -p tree/usr/share/demo && echo data >tree/usr/share/demo/file
echo sesame >pw
check "bundle create --sign with the key and --password-file" \
	"$FATELF" bundle create -o demo.fatbundle --name demo --version 1 --sign k.key \
	--password-file pw tree
check "bundle verify --key accepts the signature" "$FATELF" bundle verify --key k.pub demo.fatbundle
mkdir -p sig && (cd sig && bsdtar -xf ../demo.fatbundle fatbundle.json fatbundle.json.minisig)
check "minisign -V verifies the manifest's signature" \
	minisign -V -p k.pub -m sig/fatbundle.json -x sig/fatbundle.json.minisig
echo wrong >badpw
run "$FATELF" bundle create -o bad.fatbundle --name demo --version 1 --sign k.key --password-file badpw tree
check_eq "a wrong password fails create" 1 "$RC"
check_match "... saying so" "wrong password" "$RUN_ERR"

# ---- existing files
cp k.pub k.pub.orig
cp k.key k.key.orig
run bash -c "printf 'x\nx\n' | '$FATELF' bundle keygen -p k.pub -s other.key"
check_eq "keygen refuses to overwrite an existing public key" 3 "$RC"
check_match "... naming it and --force" "k.pub: already exists \(--force overwrites it\)" "$RUN_ERR"
check "... which is unchanged" cmp k.pub k.pub.orig
check "... and writes no secret key either" test ! -e other.key
run "$FATELF" bundle keygen --no-password -p new.pub -s k.key
check_eq "keygen refuses to overwrite an existing secret key" 3 "$RC"
check "... which is unchanged" cmp k.key k.key.orig
run "$FATELF" bundle keygen --no-password --force -p k.pub -s k.key
check_eq "--force replaces both" 0 "$RC"
check_nomatch "... with a new key" "$id" "$(cat k.pub)"
check_match "... unencrypted" "not encrypted" "$RUN_OUT"

# ---- an unencrypted pair
check "minisign -S signs with an unencrypted key, no password asked" \
	bash -c "minisign -S -s k.key -m msg.txt </dev/null"
check "minisign -V verifies it" minisign -V -p k.pub -m msg.txt
check "bundle create --sign needs no password for it" \
	"$FATELF" bundle create -o demo2.fatbundle --name demo --version 2 --sign k.key tree
check "bundle verify --key accepts it" "$FATELF" bundle verify --key k.pub demo2.fatbundle

# ---- a key minisign made, read by bundle create (the other direction)
printf 'pw2\npw2\n' | minisign -G -f -p m.pub -s m.key >/dev/null 2>&1
echo pw2 >pw2
check "a key of minisign -G signs with bundle create" \
	"$FATELF" bundle create -o demo3.fatbundle --name demo --version 3 --sign m.key --password-file pw2 tree

# ---- passwords
run bash -c "printf 'one\ntwo\n' | '$FATELF' bundle keygen -p d.pub -s d.key"
check_eq "two different passwords are refused (exit 2)" 2 "$RC"
check_match "... saying so" "the two passwords differ" "$RUN_ERR"
check "... and nothing is written" test ! -e d.pub -a ! -e d.key
run bash -c "printf '\n' | '$FATELF' bundle keygen -p d.pub -s d.key"
check_eq "an empty password is refused (exit 2)" 2 "$RC"
check_match "... pointing at --no-password" "no-password" "$RUN_ERR"
run bash -c "printf 'solo\n' | '$FATELF' bundle keygen -p s.pub -s s.key"
check_eq "one line on stdin is the password" 0 "$RC"
check "... which minisign takes" bash -c "printf 'solo\n' | minisign -S -s s.key -m msg.txt"
run "$FATELF" bundle keygen -p same -s same --no-password
check_eq "one file for both keys is a usage error" 2 "$RC"

t_done
