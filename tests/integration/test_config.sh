#!/bin/sh
# test_config.sh: the config table through inferd itself: file parser, flags, errors and the docs.
set -u

inferd=${top_builddir:?}/inferd
conf=${top_srcdir:?}/conf/inferd.conf
test -x "$inferd" || { echo "no $inferd"; exit 99; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/inferd-config.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
failed=0

fail() {
	echo "FAIL: $*"
	failed=1
}

# Run inferd with the given arguments; stdout in $tmp/out, stderr in $tmp/err, status in $rc.
run() {
	"$inferd" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# The value --print-config shows for key $1 (after run).
value() {
	sed -n "s/^$1 = //p" "$tmp/out"
}

# Expect run "$@" to fail with a message matching each pattern given before "--".
expect_error() {
	pats=
	while [ "$1" != -- ]; do
		pats="$pats
$1"
		shift
	done
	shift
	run "$@"
	if [ $rc -eq 0 ]; then
		fail "inferd $* succeeded"
		return
	fi
	echo "$pats" | while IFS= read -r p; do
		[ -z "$p" ] && continue
		grep -F -q -- "$p" "$tmp/err" || { echo "FAIL: inferd $*: no '$p' in:"; cat "$tmp/err"; exit 1; }
	done || failed=1
}

# The checked-in inferd.conf is valid and changes nothing.
run --config="$conf" --model-repository="$top_srcdir/conf/models" --check-config
[ $rc -eq 0 ] || { fail "--check-config on $conf: status $rc"; cat "$tmp/err"; }
grep -q "configuration OK" "$tmp/out" || fail "--check-config printed no OK"
run --config="$conf" --print-config
cp "$tmp/out" "$tmp/from-conf"
run --config=/dev/null --print-config
cmp -s "$tmp/out" "$tmp/from-conf" || fail "conf/inferd.conf sets values other than the defaults"

# A file using every syntax: comments, blanks, spaces, quotes, sizes, booleans.
cat >"$tmp/good.conf" <<'CONF'
# a comment
   # an indented comment

http_port = 9000
	listen_address=::1
model_repository = "/srv/my \"models\" \\ x"
allow_users = 'alice, 1000 ,bob'
allow_groups = "inference"
max_body_bytes = 2K
pinned_pool_bytes = 3m
max_region_bytes = 1073741824
http_enable = no
shm_socket = ""
device = cuda:1
log_level = debug
inflight_batches = 16
CONF
run --config="$tmp/good.conf" --model-repository="$top_srcdir/conf/models" --check-config
[ $rc -eq 0 ] || { fail "--check-config on a good file: status $rc"; cat "$tmp/err"; }
run --config="$tmp/good.conf" --print-config
for kv in 'http_port=9000' 'listen_address="::1"' 'model_repository="/srv/my \"models\" \\ x"' \
    'allow_users="alice, 1000 ,bob"' 'max_body_bytes=2048' 'pinned_pool_bytes=3145728' \
    'max_region_bytes=1073741824' 'http_enable=no' 'shm_socket=""' 'device="cuda:1"' \
    'log_level="debug"' 'inflight_batches=16' 'allow_groups="inference"'; do
	k=${kv%%=*}
	[ "$(value "$k")" = "${kv#*=}" ] || fail "$k: got '$(value "$k")', want '${kv#*=}'"
done
# What --print-config prints reads back the same.
cp "$tmp/out" "$tmp/printed.conf"
run --config="$tmp/printed.conf" --print-config
cmp -s "$tmp/out" "$tmp/printed.conf" || fail "--print-config output does not read back the same"

# Flags override the file wherever they stand; dashes work as underscores.
run --http_port=9100 --config="$tmp/good.conf" --max-body-bytes=1M --print-config
[ "$(value http_port)" = 9100 ] || fail "--http_port did not override the file"
[ "$(value max_body_bytes)" = 1048576 ] || fail "--max-body-bytes did not override the file"
[ "$(value device)" = '"cuda:1"' ] || fail "a key without a flag lost its file value"
run --config="$tmp/good.conf" --shm_socket=/tmp/s.sock --http_enable=yes --print-config
[ "$(value shm_socket)" = '"/tmp/s.sock"' ] || fail "--shm_socket did not override the file"

# Bad files: non-zero, and the message names the file, the line and the key.
bad() {
	line=$1 key=$2 text=$3
	shift 3
	{ echo "# bad file"; echo "http_port = 8001"; echo "$text"; } >"$tmp/bad.conf"
	expect_error "bad.conf:3:" "$key" "$text" "$@" -- --config="$tmp/bad.conf" --check-config
}
bad 3 "unknown key 'no_such_key'" "no_such_key = 1"
bad 3 http_port "http_port = 80x"
bad 3 http_port "http_port = 65536" "out of range"
bad 3 http_threads "http_threads = 0" "out of range"
bad 3 max_body_bytes "max_body_bytes = 12Q" "not a size"
bad 3 max_body_bytes "max_body_bytes = 2T"
bad 3 max_body_bytes "max_body_bytes = 99999999999999999999G" "out of range"
bad 3 max_region_bytes "max_region_bytes = -5"
bad 3 http_enable "http_enable = maybe"
bad 3 device "device = gpu0"
bad 3 listen_address "listen_address = localhost"
bad 3 log_level "log_level = verbose"
bad 3 shm_socket "shm_socket = \"/run/unterminated"
bad 3 allow_users "allow_users = alice bob"
bad 3 "expected 'key = value'" "http_port 8000"
bad 3 model_repository 'model_repository = ""' "empty"
long=$(printf '%0200d' 0)
bad 3 shm_socket "shm_socket = /tmp/$long" "longer than"

# Every bad line is reported, each with its file and line; the good lines between do not hide them.
printf '%s\n' 'http_port = 80x' '# fine' 'log_level = verbose' 'http_threads = 2' 'bogus' >"$tmp/bad3.conf"
expect_error "bad3.conf:1: in \"http_port = 80x\"" "bad3.conf:3: in \"log_level = verbose\"" \
    "bad3.conf:5: in \"bogus\"" -- --config="$tmp/bad3.conf" --check-config
[ "$(grep -c 'bad3.conf:' "$tmp/err")" -eq 3 ] || fail "bad3.conf: want 3 errors, got: $(cat "$tmp/err")"
# A model repository that is not there fails the check (the daemon would serve nothing).
expect_error "model_repository $tmp/no-models" "No such file" -- --config=/dev/null \
    --model-repository="$tmp/no-models" --check-config
run --config=/dev/null --model-repository="$top_srcdir/conf/models" --check-config
[ $rc -eq 0 ] || fail "--check-config with the demo repository: status $rc: $(cat "$tmp/err")"

# Bad flags and arguments.
expect_error --http_port "not a number" -- --config=/dev/null --http_port=eighty --check-config
expect_error "unknown key 'no_such_flag'" -- --config=/dev/null --no-such-flag=1 --check-config
expect_error "--device needs a value" -- --config=/dev/null --device --check-config
expect_error "unexpected argument" -- --config=/dev/null stray --check-config
expect_error "$tmp/missing.conf" "No such file" -- --config="$tmp/missing.conf" --check-config
expect_error "--port-file needs HTTP" -- --config=/dev/null --http_enable=no --port-file="$tmp/p" --check-config

# Every key of the table is documented in conf/inferd.conf, and in --help.
run --print-config-keys
cp "$tmp/out" "$tmp/keys"
n=$(wc -l <"$tmp/keys")
[ "$n" -ge 10 ] || fail "--print-config-keys printed only $n keys"
run --help
[ $rc -eq 0 ] || fail "--help: status $rc"
while read -r key; do
	grep -q "^# $key = " "$conf" || fail "key $key is not documented in conf/inferd.conf"
	grep -q -- "--$key=VALUE" "$tmp/out" || fail "key $key is missing from --help"
done <"$tmp/keys"
# Each key's description in --help is whole sentences: its last line ends with a period.
awk '/^  --[a-z_]*=VALUE  \(default/ { if (d != "" && d !~ /\.$/) print key ": " d; key = $1; d = ""; next }
     /^      / && key != "" { d = $0; next }
     key != "" { if (d !~ /\.$/) print key ": " d; key = "" }' "$tmp/out" >"$tmp/cut"
[ -s "$tmp/cut" ] && { fail "--help cuts descriptions mid-sentence:"; cat "$tmp/cut"; }
grep -E '(e\.g|i\.e)\.$' "$tmp/out" >"$tmp/cut" && { fail "--help stops a description at an abbreviation:"; cat "$tmp/cut"; }
grep -q 'model\.onnx' "$tmp/out" || fail "--help does not mention model.onnx"
for want in '/v2/models/{m}/infer' '/config' '/stats' '/metrics' 'curl -s -d @docs/examples/fashion-request.json' \
    'runs in the foreground'; do
	grep -qF -- "$want" "$tmp/out" || fail "--help does not show '$want'"
done

# conf/inferd.conf is what the table generates, but for the build's data directory.
run --print-reference
sed 's|^# model_repository = .*|# model_repository = DATADIR|' "$tmp/out" >"$tmp/ref"
sed 's|^# model_repository = .*|# model_repository = DATADIR|' "$conf" >"$tmp/conf"
diff -u "$tmp/conf" "$tmp/ref" >"$tmp/diff" ||
	{ fail "conf/inferd.conf differs from inferd --print-reference (regenerate it):"; cat "$tmp/diff"; }

# An shm socket in a directory that does not exist (the default /run/inferd outside the packaged
# service) names the directory and the key to set.
expect_error "$tmp/no-such-dir" "--shm_socket=" -- --config=/dev/null --device=cpu --http_enable=no \
	--model_repository="$top_srcdir/conf/models" --shm_socket="$tmp/no-such-dir/inferd.sock"

# docs/CONFIG.md is what the table generates (the README links to it instead of copying the keys).
run --print-reference-md
diff -u "$top_srcdir/docs/CONFIG.md" "$tmp/out" >"$tmp/diff" ||
	{ fail "docs/CONFIG.md differs from inferd --print-reference-md (regenerate it):"; cat "$tmp/diff"; }
for key in $("$inferd" --print-config-keys); do
	grep -q "^### \`$key\`$" "$top_srcdir/docs/CONFIG.md" || fail "docs/CONFIG.md lacks $key"
done

# inferd(8) has every key of the table, and groff (when installed) reads it without a warning.
run --print-man
cp "$tmp/out" "$tmp/inferd.8"
for key in $("$inferd" --print-config-keys); do
	grep -q "^\.BR $key " "$tmp/inferd.8" || fail "inferd --print-man lacks $key"
done
if command -v groff >/dev/null 2>&1; then
	groff -man -Tutf8 -ww -z "$tmp/inferd.8" >"$tmp/groff" 2>&1 && [ ! -s "$tmp/groff" ] ||
		{ fail "groff warns about inferd --print-man:"; cat "$tmp/groff"; }
fi

run --version
grep -q '^inferd ' "$tmp/out" || fail "--version printed no version"

exit $failed
