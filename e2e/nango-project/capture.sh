#!/usr/bin/env bash
# capture.sh: runs `nango deploy dev` (nango@0.71.10) against capture.mjs for each case and writes
# the captured bodies and headers to functions/testdata/deploy/ (see README.md there), and the CLI's
# exit code and output to functions/testdata/deploy/<case>-stdout.txt. Offline-friendly (loopback only).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
here=$(pwd)
out=$(cd ../../functions && mkdir -p testdata/deploy && cd testdata/deploy && pwd)
port=${PORT:-3999}
tmp=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
[ -L node_modules ] || ln -s ../node_modules node_modules
mkdir -p .nango

# run <case> <mode> <dir> <nango deploy args...>
run() {
	local name=$1 mode=$2 dir=$3
	shift 3
	rm -f "$tmp/$name.jsonl"
	CAPTURE_OUT="$tmp/$name.jsonl" PORT=$port MODE=$mode node "$here/capture.mjs" >/dev/null &
	server=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		sleep 0.1
	done
	local rc
	(cd "$dir" && NANGO_HOSTPORT=http://127.0.0.1:$port NANGO_SECRET_KEY_DEV=sk-test CI=true NANGO_CLI_UPGRADE_MODE=ignore \
		env "${ENVS[@]}" npx --no-install nango deploy dev "$@") >"$tmp/$name.out" 2>&1
	rc=$?
	kill "$server"
	wait "$server" 2>/dev/null
	server=
	{
		echo "\$ nango deploy dev $*   (MODE=$mode ${ENVS[*]})"
		sed -e 's/\x1b\[[0-9;]*m//g' "$tmp/$name.out"
		echo "exit code: $rc"
	} >"$out/$name-stdout.txt"
	node "$here/split.mjs" "$tmp/$name.jsonl" "$out" "$name"
	echo "$name: rc=$rc, $(cat "$tmp/$name.jsonl" 2>/dev/null | wc -l) requests"
}

ENVS=(NANGO_CLI_TELEMETRY=false)
run all empty . --auto-confirm --allow-destructive
run integration empty . -i fake --auto-confirm --allow-destructive
run action empty . --action create-item --auto-confirm --allow-destructive
run sync empty . --sync items --auto-confirm --allow-destructive
run version empty . --version 2.0.0 --auto-confirm --allow-destructive
run answer-two two . --auto-confirm --allow-destructive
run answer-error error . --auto-confirm --allow-destructive
run answer-deploy-error deploy-error . --auto-confirm --allow-destructive
ENVS=(NANGO_CLI_TELEMETRY=true)
run telemetry empty . --auto-confirm --allow-destructive
ENVS=(NANGO_CLI_TELEMETRY=false)

# An integration without legacy scripts (syncs/actions/on-events) is deployed as "functions": the
# CLI then calls the bundle endpoints, with reconciliationScope {kind:'integration'} and no functions.
run bundle empty . -i nosuch --auto-confirm --allow-destructive
run bundle-error error . -i nosuch --auto-confirm --allow-destructive
run bundle-deploy-error deploy-error . -i nosuch --auto-confirm --allow-destructive
run bundle-version empty . -i nosuch --version 2.0.0 --auto-confirm --allow-destructive

# (f) the same project with every function removed: an empty index.ts. The CLI refuses to compile
# it (exit 10, no request), so an environment cannot be emptied with 0.71.10 this way.
mkdir -p "$tmp/empty/.nango"
cp package.json tsconfig.json "$tmp/empty/"
: >"$tmp/empty/index.ts"
ln -s "$here/../node_modules" "$tmp/empty/node_modules"
run empty empty "$tmp/empty" --auto-confirm --allow-destructive

# These cases send the same bodies as "all" (or "bundle"): their body files are removed when
# byte-identical, keeping their headers and output.
for pair in answer-two:all answer-error:all answer-deploy-error:all telemetry:all bundle-error:bundle bundle-deploy-error:bundle; do
	name=${pair%%:*} ref=${pair#*:}
	for kind in confirmation deploy bundle-preview bundle; do
		[ -f "$out/$name-$kind.json" ] && cmp -s "$out/$name-$kind.json" "$out/$ref-$kind.json" && rm "$out/$name-$kind.json"
	done
done
exit 0
