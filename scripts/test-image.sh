#!/usr/bin/env bash
# Builds the container image from the Dockerfile and runs it on a real Docker engine, checking from
# this machine what a user would: GET /health (and the image's HEALTHCHECK), the API's key, a
# Modbus read of the example system (examples/container) through a published port, its MQTT
# publications reaching a broker container by the compose service's name, a snapshot kept in a
# named volume across containers, `docker stop` ending the server with status 0 and a shutdown
# snapshot, a process that is not root, and the refusal to start without a product key. Prints
# PASS or FAIL last. Run as root on a fresh machine it installs what it lacks; docs/container.md.
#
# - The engine: the one `docker info` answers; otherwise Debian's docker.io (installed when
#   missing), started here with its own socket, data root and exec root, and stopped at the end.
#   Its data root (/var/lib/mimic-test-image/docker) stays, so the base image below is built once.
# - The base: node:24-slim when the engine has it; it is never pulled. Otherwise a stand-in built
#   from Debian's packages and the npm registry, the two sources this machine reaches:
#   `debootstrap --variant=minbase bookworm` from the machine's Debian mirror with python3, updated
#   from bookworm-updates and bookworm-security and slimmed like the official slim images, Node 24
#   from the npm registry's node@24 (scripts/node24.sh) and npm 11, imported as
#   mimic-local-base:bookworm-node24 and reused after that. MIMIC_TEST_IMAGE_BASE names another
#   base; MIMIC_TEST_IMAGE_REBUILD_BASE=1 builds the stand-in again.
# - Everything else it makes (image, containers, volume, network) is removed at the end.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
started=$SECONDS
export DEBIAN_FRONTEND=noninteractive

LOCAL_BASE=mimic-local-base:bookworm-node24
ENGINE_DIR=/var/lib/mimic-test-image
ENGINE_RUN=/run/mimic-test-image
run_id="$$-$(date +%s)"
image="mimic-test-image:$run_id"
label="mimic.test-image=$run_id"
net="mimic-test-image-$run_id"
volume="mimic-test-image-snapshots-$run_id"
key="test-image-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
work="$(mktemp -d "${TMPDIR:-/tmp}/mimic-image-test.XXXXXX")"
rootfs=''
engine_pid=''
dangling_before=''
dangling_recorded=''
result=FAIL

finish() {
  local status=$?
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    local ids
    ids="$(docker ps -aq --filter "label=$label")"
    # -v: the anonymous volumes of the image's VOLUME too (the broker mounts none of its own).
    [ -z "$ids" ] || docker rm -f -v $ids >/dev/null 2>&1 || true
    docker volume rm "$volume" >/dev/null 2>&1 || true
    docker network rm "$net" >/dev/null 2>&1 || true
    docker image rm "$image" >/dev/null 2>&1 || true
    # The build stage's image, left untagged by the classic builder: only those this run made.
    if [ -n "$dangling_recorded" ]; then
      for id in $(docker images -q --filter dangling=true); do
        grep -qx "$id" <<<"$dangling_before" || docker image rm "$id" >/dev/null 2>&1 || true
      done
    fi
  fi
  if [ -n "$engine_pid" ]; then
    kill "$engine_pid" 2>/dev/null || true
    for _ in $(seq 1 60); do
      kill -0 "$engine_pid" 2>/dev/null || break
      sleep 0.5
    done
  fi
  if [ -n "$rootfs" ]; then
    # An interrupted debootstrap may leave /proc and /sys mounted inside.
    grep -o " $rootfs/[^ ]*" /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null || true
    rm -rf "$rootfs"
  fi
  rm -rf "$work"
  if [ "$result" = PASS ] && [ "$status" -eq 0 ]; then
    echo "test-image: PASS ($((SECONDS - started)) s)"
  else
    echo "test-image: FAIL (exit status $status, $((SECONDS - started)) s)" >&2
    [ "$status" -eq 0 ] && status=1
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() { echo "test-image: $*"; }
fail() {
  echo "test-image: $*" >&2
  exit 1
}
apt_install() {
  [ "$(id -u)" = 0 ] || fail "$* missing, and only root can install it (apt-get install $*)"
  step "apt-get install $*"
  apt-get update -qq >"$work/apt.log" 2>&1 && apt-get install -y -qq --no-install-recommends "$@" >>"$work/apt.log" 2>&1 || {
    cat "$work/apt.log" >&2
    fail "apt-get install $* failed"
  }
}

# ---------------------------------------------------------------------------------------------
# The engine.
command -v docker >/dev/null 2>&1 && command -v dockerd >/dev/null 2>&1 || docker info >/dev/null 2>&1 || apt_install docker.io
if docker info >/dev/null 2>&1; then
  step "engine: the one at ${DOCKER_HOST:-the default socket}, $(docker version -f '{{.Server.Version}}')"
elif DOCKER_HOST="unix://$ENGINE_RUN/docker.sock" docker info >/dev/null 2>&1; then
  # Left by a run that could not stop it: used, and left as it was found.
  export DOCKER_HOST="unix://$ENGINE_RUN/docker.sock"
  step "engine: already running at $DOCKER_HOST"
else
  [ "$(id -u)" = 0 ] || fail 'no Docker engine answers, and only root can start one'
  command -v dockerd >/dev/null 2>&1 || apt_install docker.io
  mkdir -p "$ENGINE_DIR/docker" "$ENGINE_RUN"
  export DOCKER_HOST="unix://$ENGINE_RUN/docker.sock"
  step "engine: starting dockerd (socket $ENGINE_RUN/docker.sock, data root $ENGINE_DIR/docker, log $ENGINE_DIR/dockerd.log)"
  # Its own socket, data root and exec root, so it meets no other engine's files. iptables stays
  # on: the engine's NAT is what lets the build's RUN steps reach the npm registry from the
  # default bridge, and it publishes ports with it (with --iptables=false only the userland
  # proxy publishes, and containers reach nothing outside).
  dockerd --host "$DOCKER_HOST" --data-root "$ENGINE_DIR/docker" --exec-root "$ENGINE_RUN/exec" \
    --pidfile "$ENGINE_RUN/dockerd.pid" >"$ENGINE_DIR/dockerd.log" 2>&1 &
  engine_pid=$!
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$engine_pid" 2>/dev/null || break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || {
    tail -n 30 "$ENGINE_DIR/dockerd.log" >&2
    fail 'dockerd did not start'
  }
  step "engine: dockerd $(docker version -f '{{.Server.Version}}') started ($((SECONDS - started)) s)"
fi
dangling_before="$(docker images -q --filter dangling=true)"
dangling_recorded=1

# ---------------------------------------------------------------------------------------------
# The base image.

# The first Debian mirror (…/debian) and security mirror (…/debian-security) of this machine's
# APT sources, one-line or deb822.
apt_uris() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -nE 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p; s/^URIs:[[:space:]]*//p' | tr ' ' '\n' | grep -E "$1" | head -n 1 || true
}

build_local_base() {
  local mirror security node_bin node_version
  local changes=()
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  mirror="$(apt_uris '/debian/?$')"
  mirror="${mirror:-http://deb.debian.org/debian}"
  security="$(apt_uris '/debian-security/?$')"
  rootfs="$(mktemp -d /var/tmp/mimic-local-base.XXXXXX)"
  step "base: debootstrap --variant=minbase bookworm from $mirror (a few minutes, once)"
  debootstrap --variant=minbase --include=python3 bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    fail 'debootstrap failed'
  }
  # Like the official slim images: no documentation, manual pages or translations, now or later.
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
  {
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    [ -z "$security" ] || echo "deb $security bookworm-security main"
  } >"$rootfs/etc/apt/sources.list"
  step 'base: apt-get upgrade from bookworm-updates and bookworm-security'
  { chroot "$rootfs" apt-get update -qq && chroot "$rootfs" apt-get upgrade -y -qq -o Dpkg::Use-Pty=0; } >"$work/upgrade.log" 2>&1 || {
    tail -n 30 "$work/upgrade.log" >&2
    fail 'apt-get upgrade in the base failed'
  }
  chroot "$rootfs" apt-get clean
  find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/{man,info,groff,lintian,locale}/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/var/cache/debconf/*-old "$rootfs"/etc/{hostname,resolv.conf}
  # The engine writes these for each container.
  : >"$rootfs/etc/hostname"
  : >"$rootfs/etc/resolv.conf"

  step 'base: Node 24 from the npm registry (scripts/node24.sh) and npm 11'
  node_bin="$(bash "$repo/scripts/node24.sh")"
  install -m 0755 "$(readlink -f "$node_bin/node")" "$rootfs/usr/local/bin/node"
  node_version="$(chroot "$rootfs" /usr/local/bin/node -p process.version)" || fail 'the Node 24 binary does not run in the base'
  case "$node_version" in v24.*) ;; *) fail "the base's node is $node_version, not 24" ;; esac
  npm install -g --prefix "$rootfs/usr/local" --no-audit --no-fund --loglevel=error npm@11 >"$work/npm.log" 2>&1 || {
    cat "$work/npm.log" >&2
    fail 'npm install -g npm@11 into the base failed'
  }
  # Where this machine reaches the npm registry through a TLS-inspecting proxy, its npm trusts that
  # proxy's certificate through NODE_EXTRA_CA_CERTS; the base trusts the same, or npm ci in the
  # build stage could not fetch anything.
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$NODE_EXTRA_CA_CERTS" ]; then
    mkdir -p "$rootfs/usr/local/share/mimic-local-base"
    cp "$NODE_EXTRA_CA_CERTS" "$rootfs/usr/local/share/mimic-local-base/extra-ca.pem"
    changes+=(--change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/mimic-local-base/extra-ca.pem')
  fi

  step "base: docker import $LOCAL_BASE (node $node_version, $(chroot "$rootfs" python3 --version))"
  tar --numeric-owner -C "$rootfs" -c . | docker import \
    --change "ENV NODE_VERSION=${node_version#v}" \
    "${changes[@]}" \
    --change 'CMD ["node"]' \
    --message "Debian bookworm (minbase, python3) with Node $node_version and npm, built by scripts/test-image.sh" \
    - "$LOCAL_BASE" >/dev/null
  rm -rf "$rootfs"
  rootfs=''
}

base_started=$SECONDS
if [ -n "${MIMIC_TEST_IMAGE_BASE:-}" ]; then
  base="$MIMIC_TEST_IMAGE_BASE"
  docker image inspect "$base" >/dev/null 2>&1 || fail "MIMIC_TEST_IMAGE_BASE=$base: no such image on the engine"
  step "base: $base (MIMIC_TEST_IMAGE_BASE)"
elif docker image inspect node:24-slim >/dev/null 2>&1; then
  base=node:24-slim
  step 'base: node:24-slim, the default, found on the engine'
else
  base="$LOCAL_BASE"
  if [ "${MIMIC_TEST_IMAGE_REBUILD_BASE:-}" = 1 ] || ! docker image inspect "$base" >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || fail "node:24-slim is not on the engine (it is never pulled) and only root can build $LOCAL_BASE"
    build_local_base
    step "base: $base built ($((SECONDS - base_started)) s)"
  else
    step "base: node:24-slim is not on the engine (it is never pulled); $base, built before"
  fi
fi
base_time=$((SECONDS - base_started))

# ---------------------------------------------------------------------------------------------
# The image.
build_started=$SECONDS
step "docker build --build-arg BASE=$base (log: $work/build.log)"
# The build stage's RUN steps reach the npm registry through the default bridge network.
# --force-rm: the classic builder keeps the container of a failed step otherwise.
docker build --force-rm --build-arg "BASE=$base" --label "$label" -t "$image" "$repo" >"$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log" >&2
  fail 'docker build failed'
}
build_time=$((SECONDS - build_started))
size_mb=$(($(docker image inspect -f '{{.Size}}' "$image") / 1000000))
step "image built in $build_time s: $size_mb MB, user $(docker image inspect -f '{{.Config.User}}' "$image")"
version="$(docker run --rm --label "$label" --entrypoint mimic "$image" --version)"
[ "$version" = "$(node -p "require('$repo/package.json').version")" ] || fail "mimic --version in the image printed '$version'"

checks_started=$SECONDS

# (f) Listening on every address without a key is refused, with the reason.
step 'no product key: the server refuses to start'
status=0
timeout 120 docker run --rm --label "$label" "$image" >"$work/nokey.log" 2>&1 || status=$?
grep -q 'Refusing to listen on 0.0.0.0 without a product key' "$work/nokey.log" && [ "$status" = 1 ] || {
  cat "$work/nokey.log" >&2
  fail "without a key the container ended with status $status, not 1 and the refusal"
}
step "  exit status 1: $(head -n 1 "$work/nokey.log" | cut -c1-100)..."

# The example system, readable by the image's user whatever this checkout's modes are.
mkdir "$work/etc"
cp -R "$repo/examples/container/." "$work/etc/"
chmod -R a+rX "$work/etc"
docker network create --label "$label" "$net" >/dev/null
docker volume create --label "$label" "$volume" >/dev/null

# The compose file's broker, as a stand-in for eclipse-mosquitto (no image registry here): an MQTT
# broker (aedes, which the image carries for the embedded broker) under the service's name,
# printing every publication it receives.
broker_js="const { Aedes } = await import('/opt/mimic/lib/node_modules/mimic-sim/node_modules/aedes/aedes.js')
const broker = await Aedes.createBroker()
broker.on('publish', (packet, client) => { if (client) console.log(JSON.stringify({ topic: packet.topic, payload: String(packet.payload) })) })
const { createServer } = await import('node:net')
createServer(broker.handle).listen(1883, '0.0.0.0', () => console.log('broker listening'))
process.on('SIGTERM', () => process.exit(0))"
docker run -d --name "mimic-test-broker-$run_id" --label "$label" --network "$net" --network-alias mosquitto \
  --no-healthcheck --entrypoint node "$image" --input-type=module -e "$broker_js" >/dev/null

# Runs a Mimic container on the network and the volume; prints its name.
start_mimic() {
  local name="mimic-test-$1-$run_id"
  shift
  docker run -d --name "$name" --label "$label" --network "$net" \
    -p 127.0.0.1::8000 -p 127.0.0.1::5020 \
    -e MIMIC_PRODUCT_KEY="$key" --health-interval 2s --health-start-period 60s \
    -v "$volume:/var/lib/mimic/snapshots" -v "$work/etc:/etc/mimic:ro" \
    "$@" "$image" --system /etc/mimic/system.yaml >/dev/null
  echo "$name"
}
# The host port that a container's port is published on.
host_port() { docker port "$1" "$2/tcp" | sed -n 's/^127\.0\.0\.1:\([0-9]*\)$/\1/p' | head -n 1; }
wait_health() {
  local name="$1" url="$2"
  for _ in $(seq 1 120); do
    curl -fsS "$url/health" >"$work/health.json" 2>/dev/null && return 0
    [ "$(docker inspect -f '{{.State.Running}}' "$name")" = true ] || break
    sleep 0.5
  done
  docker logs "$name" >&2 2>&1 || true
  fail "$name: GET /health did not answer"
}
api() {
  local method="$1" path="$2"
  shift 2
  curl -fsS -X "$method" -H "Authorization: Bearer $key" -H 'content-type: application/json' "$@" "$url/api/v3/system$path"
}
# Reads holding registers as big-endian floats over Modbus TCP (function 3), with a raw socket.
modbus_floats() {
  node -e '
const net = require("node:net")
const [port, address, count] = process.argv.slice(1).map(Number)
const request = Buffer.from([0, 1, 0, 0, 0, 6, 1, 3, address >> 8, address & 255, 0, count * 2])
let answer = Buffer.alloc(0)
const socket = net.connect(port, "127.0.0.1", () => socket.write(request))
socket.setTimeout(5000, () => { console.error("no answer"); process.exit(1) })
socket.on("error", (err) => { console.error(err.message); process.exit(1) })
socket.on("data", (data) => {
  answer = Buffer.concat([answer, data])
  if (answer.length < 6 || answer.length < 6 + answer.readUInt16BE(4)) return
  if (answer[7] !== 3) { console.error("exception " + answer[8]); process.exit(1) }
  console.log(Array.from({ length: count }, (_, i) => Number(answer.readFloatBE(9 + 4 * i).toPrecision(7))).join(" "))
  socket.end()
})' "$@"
}
# Whether two numbers are within 1e-4 of each other.
near() { node -e 'process.exit(Math.abs(Number(process.argv[1]) - Number(process.argv[2])) < 1e-4 ? 0 : 1)' "$1" "$2"; }

# (a) Health, through the published port, and the image's own HEALTHCHECK.
c1="$(start_mimic first -e MIMIC_SNAPSHOT_ON_SHUTDOWN=1)"
url="http://127.0.0.1:$(host_port "$c1" 8000)"
wait_health "$c1" "$url"
grep -q '"status":"ok"' "$work/health.json" || fail "GET /health answered $(cat "$work/health.json")"
step "GET $url/health: $(cut -c1-80 "$work/health.json")..."
for _ in $(seq 1 60); do
  health="$(docker inspect -f '{{.State.Health.Status}}' "$c1")"
  [ "$health" = healthy ] && break
  sleep 0.5
done
[ "$health" = healthy ] || fail "the HEALTHCHECK reports $health"
step '  the HEALTHCHECK (node fetch of /health) reports healthy'
code="$(curl -s -o /dev/null -w '%{http_code}' "$url/api/v3/system")"
[ "$code" = 401 ] || fail "the API without the key answered $code, not 401"
step '  the API without the key: 401'

# (e) Neither the server nor its Python workers run as root.
uids="$(docker exec "$c1" sh -c 'grep -h "^Uid:" /proc/[0-9]*/status 2>/dev/null; true' | awk '{print $2}' | sort -u | tr '\n' ' ')"
[ "$uids" = '10001 ' ] || fail "processes in the container run as uids $uids, not 10001 only"
step "  every process runs as uid 10001 ($(docker exec "$c1" id -un)), pid 1 included"

# (b) The Python-backed meter over Modbus TCP through the published port.
api POST /instances/meter_1/method/prepare >/dev/null || {
  docker logs "$c1" >&2 2>&1
  fail 'prepare of meter_1 (Python-backed) failed'
}
api POST /method/run -d '{"kwargs": {"steps": 3600, "dt": 1.0}}' >/dev/null || fail 'run failed'
modbus_port="$(host_port "$c1" 5020)"
floats="$(modbus_floats "$modbus_port" 0 3)" || fail "Modbus read on 127.0.0.1:$modbus_port failed"
read -r power energy load <<<"$floats"
near "$power" 1200 && near "$energy" 1.2 && near "$load" 1200 ||
  fail "Modbus holding registers 0-5 read power $power, energy $energy, load $load (expected 1200, 1.2, 1200)"
step "Modbus 127.0.0.1:$modbus_port, holding registers 0-5 after an hour of steps: power $power W, energy $energy kWh, load $load W"

# MQTT: the meter publishes its power to the broker named mosquitto.
for _ in $(seq 1 40); do
  grep -Eq '"topic":"site/meter_1/power","payload":"1200(\.0*)?"' <(docker logs "mimic-test-broker-$run_id" 2>&1) && break
  sleep 0.5
done
docker logs "mimic-test-broker-$run_id" >"$work/broker.log" 2>&1
grep -Eq '"topic":"site/meter_1/power","payload":"1200(\.0*)?"' "$work/broker.log" || {
  cat "$work/broker.log" >&2
  fail 'the broker received no site/meter_1/power 1200'
}
grep -q '"topic":"site/meter_1/status","payload":"online"' "$work/broker.log" || fail 'the broker received no birth message'
step "MQTT: the broker 'mosquitto' received site/meter_1/status online and site/meter_1/power 1200"

# (c) A snapshot saved into the volume...
saved="$(api POST /snapshots/method/save -d '{"kwargs": {"label": "test-image", "include_state": true}}')" || fail 'snapshot save failed'
grep -q '"persisted_path":"/var/lib/mimic/snapshots/' <<<"$saved" || fail "the snapshot was not written to the volume: $saved"
step "snapshot saved: $(grep -o '"persisted_path":"[^"]*"' <<<"$saved")"

# (d) docker stop: SIGTERM, a shutdown snapshot, status 0 well within the time limit.
stop_started="$(date +%s%N)"
docker stop -t 30 "$c1" >/dev/null
stop_ms=$((($(date +%s%N) - stop_started) / 1000000))
exit_code="$(docker inspect -f '{{.State.ExitCode}}' "$c1")"
docker logs "$c1" >"$work/first.log" 2>&1
[ "$exit_code" = 0 ] || {
  tail -n 20 "$work/first.log" >&2
  fail "docker stop: exit status $exit_code, not 0"
}
[ "$stop_ms" -lt 25000 ] || fail "docker stop took $stop_ms ms"
grep -q 'snapshot saved on shutdown' "$work/first.log" || fail 'no snapshot saved on shutdown'
step "docker stop: exit status 0 after $stop_ms ms, snapshot saved on shutdown"

# ...and both snapshots in a new container on the same volume, which resumes from the newest.
c2="$(start_mimic second -e MIMIC_LOAD_SNAPSHOT=latest)"
url="http://127.0.0.1:$(host_port "$c2" 8000)"
wait_health "$c2" "$url"
listed="$(api POST /snapshots/method/list)" || fail 'snapshot list failed'
grep -q '"label":"test-image"' <<<"$listed" || fail "the new container does not list the saved snapshot: $listed"
grep -q '"automatic":true' <<<"$listed" || fail "the new container does not list the shutdown snapshot: $listed"
step "a new container on the volume lists $(grep -o '"id":' <<<"$listed" | wc -l) snapshots: test-image and the shutdown one"
floats="$(modbus_floats "$(host_port "$c2" 5020)" 0 3)" || fail 'Modbus read of the new container failed'
read -r power energy load <<<"$floats"
near "$energy" 1.2 || fail "the new container's energy reads $energy over Modbus, not the 1.2 of the shutdown snapshot"
step "  it resumed from the shutdown snapshot (--load-snapshot latest): energy $energy kWh over Modbus"
docker stop -t 30 "$c2" >/dev/null

step "times: base $base_time s, image build $build_time s, checks $((SECONDS - checks_started)) s; image $size_mb MB"
result=PASS
