#!/usr/bin/env bash
# build.sh: compiles this zero-yaml Nango project with the real CLI (nango@0.71.10, installed in
# e2e/node_modules by `npm ci --prefix e2e`); works offline once e2e/node_modules exists.
# Output: build/fake_<type>s_<name>.cjs and .nango/*.json.
# With --copy, also copies them to functions/jsruntime/testdata/cli/ (the Go JS runtime's test data).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
copy=0
if [ "${1:-}" = --copy ]; then
	copy=1
	shift
fi
if [ ! -e ../node_modules/nango/package.json ]; then
	npm ci --prefix .. --no-audit --no-fund
fi
# The CLI type-checks and bundles with the project's node_modules; a link to e2e/node_modules
# (not committed) makes `npx nango` and the `nango`/`zod` imports resolve without a second install.
[ -L node_modules ] || ln -s ../node_modules node_modules
mkdir -p .nango # the CLI takes a directory for a Nango project only if it has .nango/ and index.ts
rm -rf build
# CI=true: no prompts, no upgrade check, no `npm install` of devDependencies.
CI=true NANGO_CLI_TELEMETRY=false NANGO_CLI_UPGRADE_MODE=ignore NANGO_CLI_DEPENDENCY_UPDATE=false \
	npx --no-install nango compile --no-interactive --no-dependency-update "$@"
if [ "$copy" = 1 ]; then
	out=../../functions/jsruntime/testdata/cli
	mkdir -p "$out/nango"
	rm -f "$out"/*.cjs "$out"/nango/*.json
	cp build/*.cjs "$out/"
	cp .nango/*.json "$out/nango/"
fi
