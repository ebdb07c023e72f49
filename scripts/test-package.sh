#!/usr/bin/env bash
# Installs Mimic the way a user does, away from this checkout, and runs it: `npm pack`, then
# `npm install -g` of the tarball into an empty prefix (dependencies from the npm registry), then
# the installed `mimic` from an empty directory: --version, validate, serve (health, dashboard, a
# Python-backed instance, so the SDK inside the package is found) and `mimic mcp` answering an MCP
# initialize and a tool call on stdin (through the TypeScript client the tarball bundles). The
# client package alone (`npm pack -w mimic-sim-client`: its dist/ and nothing of the server) is
# installed into a fresh project, which gets a handful of packages at most and whose ESM script
# talks to the running server. Then the Python SDK's wheel holds protocol.json and py.typed, and
# building it leaves nothing in the sources. Run after `npm ci`; prints PASS or FAIL last.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
started=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/mimic-package-test.XXXXXX")"
server_pid=''
mcp_pid=''
result=FAIL

finish() {
  local status=$?
  for pid in $server_pid $mcp_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
  if [ "$result" = PASS ] && [ "$status" -eq 0 ]; then
    echo "test-package: PASS ($((SECONDS - started)) s)"
  else
    echo "test-package: FAIL (exit status $status, $((SECONDS - started)) s)" >&2
    [ "$status" -eq 0 ] && status=1
  fi
  exit "$status"
}
trap finish EXIT

step() { echo "test-package: $*"; }
fail() {
  echo "test-package: $*" >&2
  exit 1
}

step 'npm pack'
mkdir "$work/pack" "$work/pack-client" "$work/prefix" "$work/run" "$work/home" "$work/client-app"
(cd "$repo" && npm pack --pack-destination "$work/pack" >"$work/pack.log" 2>&1) || {
  cat "$work/pack.log" >&2
  fail 'npm pack failed'
}
tarball="$(ls "$work"/pack/*.tgz)"
listing="$(tar tzf "$tarball")"
for wanted in package/bin/mimic.js package/dist/cli/cli.js package/dist/src/index.js package/dist/ui/index.html \
  package/python/mimic_sdk/worker.py package/python/mimic_sdk/protocol.json package/docs/model-language.md package/README.md; do
  grep -qx "$wanted" <<<"$listing" || fail "the tarball lacks $wanted"
done
# The TypeScript client is its own package (packages/client), bundled: the server's tarball
# carries it, built, in node_modules/.
for wanted in package/node_modules/mimic-sim-client/package.json package/node_modules/mimic-sim-client/dist/index.js \
  package/node_modules/mimic-sim-client/dist/index.d.ts package/dist/src/client/index.js; do
  grep -qx "$wanted" <<<"$listing" || fail "the tarball lacks $wanted"
done
if grep -E '^package/(src|test|bench|ui/src|examples|scripts|python/tests|packages)/|^package/node_modules/mimic-sim-client/(src|node_modules)/|\.map$|__pycache__|\.tsbuildinfo' <<<"$listing"; then
  fail 'the tarball holds the files above, which an installed server does not need'
fi
step "$(basename "$tarball"): $(wc -l <<<"$listing") files, $(du -k "$tarball" | cut -f1) KiB"

step 'npm pack -w mimic-sim-client'
(cd "$repo" && npm pack -w mimic-sim-client --pack-destination "$work/pack-client" >"$work/pack-client.log" 2>&1) || {
  cat "$work/pack-client.log" >&2
  fail 'npm pack -w mimic-sim-client failed'
}
client_tarball="$(ls "$work"/pack-client/mimic-sim-client-*.tgz)"
client_listing="$(tar tzf "$client_tarball")"
for wanted in package/package.json package/README.md package/LICENSE package/dist/index.js package/dist/index.d.ts package/dist/transport.js; do
  grep -qx "$wanted" <<<"$client_listing" || fail "the client tarball lacks $wanted"
done
# Nothing of the server: only the client's own compiled modules (one per source file of
# packages/client/src), whose imports name each other and yaml and nothing else.
if grep -vE '^package/(package\.json|README\.md|LICENSE|dist/[a-z-]+\.(js|d\.ts))$' <<<"$client_listing"; then
  fail 'the client tarball holds the files above'
fi
expected_modules="$(cd "$repo/packages/client/src" && ls ./*.ts | sed 's|^\./||; s|\.ts$||' | sort)"
packed_modules="$(grep -E '^package/dist/.*\.js$' <<<"$client_listing" | sed 's|^package/dist/||; s|\.js$||' | sort)"
[ "$expected_modules" = "$packed_modules" ] ||
  fail "the client tarball's modules differ from packages/client/src: $(diff <(echo "$expected_modules") <(echo "$packed_modules") || true)"
mkdir "$work/client-unpacked"
tar xzf "$client_tarball" -C "$work/client-unpacked"
# Every module specifier of the built files, comments (the @example lines) left out.
# shellcheck disable=SC2016
specifiers="$(node -e '
  const { readFileSync, readdirSync } = require("node:fs")
  const dir = process.argv[1]
  const found = new Set()
  for (const name of readdirSync(dir)) {
    const code = readFileSync(`${dir}/${name}`, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "")
    const statements = /\bfrom\s*["\x27]([^"\x27]+)|\bimport\s*\(\s*["\x27]([^"\x27]+)|\bimport\s+["\x27]([^"\x27]+)|\brequire\s*\(\s*["\x27]([^"\x27]+)/g
    for (const m of code.matchAll(statements)) found.add(m[1] ?? m[2] ?? m[3] ?? m[4])
  }
  console.log([...found].sort().join("\n"))
' "$work/client-unpacked/package/dist")"
if grep -vE '^(\./[a-z-]+\.js|yaml)$' <<<"$specifiers"; then
  fail 'the client imports the modules above, which are not its own'
fi
client_deps="$(node -p "Object.keys(require('$work/client-unpacked/package/package.json').dependencies ?? {}).join(' ')")"
[ "$client_deps" = yaml ] || fail "the client package depends on '$client_deps', expected yaml alone"
step "$(basename "$client_tarball"): $(wc -l <<<"$client_listing") files, $(du -k "$client_tarball" | cut -f1) KiB, imports only itself and yaml"

step 'npm install -g into an empty prefix'
# Lifecycle scripts stay enabled, as for a user: a build step in the tarball would fail here.
npm install -g --prefix "$work/prefix" --no-audit --no-fund "$tarball" >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  fail 'npm install -g failed'
}
mimic="$work/prefix/bin/mimic"
[ -x "$mimic" ] || fail "no mimic command in $work/prefix/bin"
# A clean environment: no MIMIC_* settings, no tsx or node_modules of the checkout in reach.
run_mimic() { (cd "$work/run" && env -i PATH="$work/prefix/bin:$PATH" HOME="$work/home" "$mimic" "$@"); }

expected_version="$(node -p "require('$repo/package.json').version")"
version="$(run_mimic --version)"
[ "$version" = "$expected_version" ] || fail "mimic --version printed '$version', not $expected_version"
step "mimic --version: $version"

cp -r "$repo/examples/pt100/." "$work/run/"
run_mimic validate system.yaml >"$work/validate.log" 2>&1 || {
  cat "$work/validate.log" >&2
  fail 'mimic validate system.yaml failed'
}
step 'mimic validate system.yaml: valid'

step 'mimic serve --port 0'
(cd "$work/run" && exec env -i PATH="$work/prefix/bin:$PATH" HOME="$work/home" "$mimic" serve --system system.yaml --extensions extensions --port 0 --snapshots-mode memory) \
  >"$work/serve.log" 2>&1 &
server_pid=$!
url=''
for _ in $(seq 1 150); do
  url="$(grep -o 'Mimic listening on http://127\.0\.0\.1:[0-9]*' "$work/serve.log" | head -n 1 | sed 's/^Mimic listening on //')" || true
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.2
done
[ -n "$url" ] || {
  cat "$work/serve.log" >&2
  fail 'the server did not start'
}

health="$(curl -fsS "$url/health")" || fail "GET /health failed"
step "GET /health: $health"
dashboard="$(curl -fsS -D "$work/ui.headers" "$url/ui")" || fail 'GET /ui failed'
grep -qi '^content-type: text/html' "$work/ui.headers" || fail 'GET /ui did not answer HTML'
script="$(grep -o '/ui/assets/[^"]*\.js' <<<"$dashboard" | head -n 1)"
[ -n "$script" ] || fail 'the dashboard page names no script'
curl -fsS -o /dev/null "$url$script" || fail "GET $script failed"
step 'GET /ui: the dashboard page and its script'

api="$url/api/v3/system"
curl -fsS -X POST "$api/instances/tank_sensor/method/prepare" >/dev/null || {
  cat "$work/serve.log" >&2
  fail 'prepare of the Python-backed tank_sensor failed'
}
curl -fsS -X POST "$api/method/run" -H 'content-type: application/json' -d '{"kwargs": {"steps": 3, "dt": 1.0}}' >/dev/null ||
  fail 'run failed'
resistance="$(curl -fsS "$api/instances/tank_sensor/attributes/resistance/attr/internal_value")" || fail 'reading resistance failed'
# resistance has a Python getter only: a value here came from the worker.
grep -Eq '"value": ?[0-9]' <<<"$resistance" || fail "resistance read $resistance"
step "Python-backed tank_sensor prepared and run: resistance $resistance"

step 'mimic mcp: initialize over stdio'
initialize='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test-package","version":"1"}}}'
coproc MCP { cd "$work/run" && exec env -i PATH="$work/prefix/bin:$PATH" HOME="$work/home" "$mimic" mcp --url "$url" 2>"$work/mcp.log"; }
mcp_pid=$MCP_PID
echo "$initialize" >&"${MCP[1]}"
answer=''
read -r -t 30 answer <&"${MCP[0]}" || true
grep -q '"id":1' <<<"$answer" && grep -q '"serverInfo"' <<<"$answer" || {
  cat "$work/mcp.log" >&2
  fail "mimic mcp answered: ${answer:-nothing}"
}
step "mimic mcp: $(grep -o '"serverInfo":{[^}]*}' <<<"$answer")"
# A tool call goes through the bundled TypeScript client to the server.
echo '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&"${MCP[1]}"
echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_models","arguments":{}}}' >&"${MCP[1]}"
answer=''
read -r -t 30 answer <&"${MCP[0]}" || true
kill "$mcp_pid" 2>/dev/null || true
wait "$mcp_pid" 2>/dev/null || true
mcp_pid=''
grep -q '"id":2' <<<"$answer" && grep -q 'PT100' <<<"$answer" && ! grep -q '"isError":true' <<<"$answer" || {
  cat "$work/mcp.log" >&2
  fail "mimic mcp answered list_models with: ${answer:-nothing}"
}
step 'mimic mcp: list_models answered PT100 and Display, through the client'

step 'the client package alone in a fresh project'
(cd "$work/client-app" && npm init -y >/dev/null && npm install --no-audit --no-fund "$client_tarball" >"$work/client-install.log" 2>&1) || {
  cat "$work/client-install.log" >&2
  fail "npm install $(basename "$client_tarball") failed"
}
installed="$(cd "$work/client-app" && node -p "Object.keys(require('./package-lock.json').packages).filter((p) => p !== '').join(' ')")"
count="$(wc -w <<<"$installed")"
[ "$count" -le 5 ] || fail "installing the client alone added $count packages (at most 5 expected): $installed"
step "npm install mimic-sim-client: $count packages ($installed)"
cat >"$work/client-app/talk.mjs" <<'SCRIPT'
import assert from 'node:assert/strict'
import { connect, MimicApiError } from 'mimic-sim-client'

const sim = connect({ address: process.env.MIMIC_URL })
assert.equal((await sim.health()).status, 'ok')
assert.deepEqual((await sim.instances.keys()).sort(), ['panel', 'tank_sensor'])
const tank = sim.instances.at('tank_sensor')
const temperature = await tank.attributes.at('temperature').internalValue()
assert.equal(typeof temperature, 'number')
const calibrated = await tank.call('calibrate', { offset: 0.5 })
assert.equal(calibrated.offset, 0.5)
await tank.run({ dt: 1.0 })
await sim.models.set('Probe', 'attributes: { x: 1.5 }\n') // YAML text: read by the client's yaml
assert.deepEqual(await sim.models.get('Probe'), { attributes: { x: 1.5 } })
await assert.rejects(sim.instances.at('nope').get(), (err) => err instanceof MimicApiError && err.status === 404)
console.log(`instances listed, temperature ${temperature}, calibrate answered offset ${calibrated.offset}, model set from YAML, 404 as MimicApiError`)
SCRIPT
talked="$(cd "$work/client-app" && env -i PATH="$PATH" HOME="$work/home" MIMIC_URL="$url" node talk.mjs 2>&1)" || {
  echo "$talked" >&2
  fail 'the client-only project could not talk to the server'
}
step "client-only project: $talked"

kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=''

step 'the Python wheel'
python=/usr/bin/python3
[ -x "$python" ] || python="$(command -v python3)"
if "$python" -c 'import setuptools, wheel' 2>/dev/null && "$python" -m pip --version >/dev/null 2>&1; then
  before="$(cd "$repo" && git status --porcelain --ignored python)"
  "$python" -m pip wheel "$repo/python" -w "$work/wheel" --no-deps --no-build-isolation -q >"$work/wheel.log" 2>&1 || {
    cat "$work/wheel.log" >&2
    fail 'pip wheel ./python failed'
  }
  contents="$(unzip -l "$work"/wheel/mimic_sdk-*.whl)"
  for wanted in mimic_sdk/protocol.json mimic_sdk/py.typed mimic_sdk/worker.py; do
    grep -q " $wanted\$" <<<"$contents" || fail "the wheel lacks $wanted"
  done
  after="$(cd "$repo" && git status --porcelain --ignored python)"
  [ "$before" = "$after" ] || fail "building the wheel left files in python/: $(diff <(echo "$before") <(echo "$after") || true)"
  step "$(basename "$work"/wheel/*.whl): protocol.json and py.typed inside, python/ untouched"
else
  step "SKIPPED the wheel: $python lacks pip, setuptools or wheel (Debian: python3-pip python3-setuptools python3-wheel)"
fi

result=PASS
