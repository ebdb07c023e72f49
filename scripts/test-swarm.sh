#!/usr/bin/env bash
# Deploys deploy/swarm/stack.yaml on a Docker Swarm of three engines and checks, from a subscriber
# on another host, what a user of a sharded fleet would: the 6,000 MQTT meters of
# examples/fleet/system.yaml, generated from one template over three shards, each seen; one host
# cut off, its shard back on another host and every meter seen again; a fleet snapshot saved into
# the stack's S3 store and loaded back on every shard. Prints PASS or FAIL last, and removes
# everything it made. Run as root, after scripts/test-image.sh (whose engine keeps the base image);
# docs/scale-out.md, "Swarm".
#
# - The hosts: three network namespaces (mimic-swarm-1..3) on a bridge of their own (mimicsw0,
#   10.213.79.0/24, no route out: no packet leaves the machine), each with its own dockerd (own
#   socket, data root and exec root under /run/mimic-test-swarm and /var/lib/mimic-test-swarm).
#   Host 1 is the manager and runs the broker, NATS and the store; 2 and 3 are workers.
# - The images, built on the engine of scripts/test-image.sh (its base: node:24-slim when that
#   engine has it, else mimic-local-base:bookworm-node24 that test-image.sh made): Mimic from this
#   checkout, and from deploy/swarm/images the broker and the NATS server from Debian's packages
#   and s3rver from the npm registry. Those three are kept on that engine, tagged by a hash of
#   their Dockerfile and base, so a later run builds nothing but Mimic. They reach the swarm's
#   engines by `docker save | docker load`, and the stack is deployed with --resolve-image never:
#   nothing is pulled.
# - The host that is cut off is one running a shard but not the broker (the broker, NATS and the
#   store are placed on the node labelled mimic.infra=true); the subscriber runs on the third.
# A run that was interrupted leaves nothing a new run trips on: the names are fixed and whatever
# of them exists at the start is removed first.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
started=$SECONDS
export DEBIAN_FRONTEND=noninteractive

LOCAL_BASE=mimic-local-base:bookworm-node24
BUILD_DIR=/var/lib/mimic-test-image
BUILD_RUN=/run/mimic-test-image
STATE=/var/lib/mimic-test-swarm
RUN_DIR=/run/mimic-test-swarm
BRIDGE=mimicsw0
NET_PREFIX=10.213.79
ADDR_POOL=10.214.0.0/16
STACK=mimic
METERS=6000
HOSTS=(1 2 3)
key="test-swarm-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
work="$(mktemp -d "${TMPDIR:-/tmp}/mimic-swarm-test.XXXXXX")"
chmod 755 "$work"
build_engine_pid=''
BUILD_HOST=''
mimic_image=''
forward_rule=''
sub_pid=''
result=FAIL

step() { echo "test-swarm: $*"; }
fail() {
  echo "test-swarm: FAIL: $*" >&2
  exit 1
}
ns() { echo "mimic-swarm-$1"; }
sock() { echo "unix://$RUN_DIR/h$1/docker.sock"; }
# docker on host i of the swarm.
dk() {
  local i="$1"
  shift
  DOCKER_HOST="$(sock "$i")" docker "$@"
}

# Stops the engines of the swarm, whatever state they are in, and removes their hosts and files.
teardown_swarm() {
  local i pid
  for i in "${HOSTS[@]}"; do
    pid="$(cat "$RUN_DIR/h$i/dockerd.pid" 2>/dev/null || true)"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill "$pid" 2>/dev/null || true
  done
  for i in "${HOSTS[@]}"; do
    pid="$(cat "$RUN_DIR/h$i/dockerd.pid" 2>/dev/null || true)"
    for _ in $(seq 1 60); do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    # What is left in the host's namespace (a dockerd that would not stop, containerd, shims, the
    # containers' processes) is killed.
    if ip netns list 2>/dev/null | grep -qw "$(ns "$i")"; then
      ip netns pids "$(ns "$i")" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      sleep 0.2
      ip netns del "$(ns "$i")" 2>/dev/null || true
    fi
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  for i in "${HOSTS[@]}"; do ip link del "msw$i" 2>/dev/null || true; done
  # Mounts an engine killed before it could unmount (containers' layers, network namespaces) go
  # before the files.
  grep -oE " ($STATE|$RUN_DIR)/[^ ]*" /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null || true
  rm -rf "$STATE" "$RUN_DIR"
}

# The Mimic image this run built, and the build stage's image the classic builder left untagged.
dangling_before=''
remove_mimic_image() {
  DOCKER_HOST="$BUILD_HOST" docker image rm "$mimic_image" >/dev/null 2>&1 || true
  local id
  for id in $(DOCKER_HOST="$BUILD_HOST" docker images -q --filter dangling=true 2>/dev/null); do
    grep -qx "$id" <<<"$dangling_before" || DOCKER_HOST="$BUILD_HOST" docker image rm "$id" >/dev/null 2>&1 || true
  done
}

finish() {
  local status=$?
  [ -z "$sub_pid" ] || kill "$sub_pid" 2>/dev/null || true
  if [ "$result" != PASS ] && [ -S "$RUN_DIR/h1/docker.sock" ]; then
    # What the shards said, for the reader of a failure.
    dk 1 service ps --no-trunc "${STACK}_shard" >&2 2>/dev/null || true
    # Their logs less the one line per meter, and each shard container's last health checks (a
    # task Swarm stopped as unhealthy shows it there).
    dk 1 service logs "${STACK}_shard" 2>&1 | grep -v '"mqtt adapter st' | tail -n 40 >&2 || true
    local i c
    for i in "${HOSTS[@]}"; do
      [ -S "$RUN_DIR/h$i/docker.sock" ] || continue
      for c in $(dk "$i" ps -aq --filter "name=${STACK}_shard" 2>/dev/null); do
        dk "$i" inspect --format "host $i {{.Name}} {{.State.Status}} exit {{.State.ExitCode}} health {{json .State.Health}}" "$c" >&2 2>/dev/null || true
      done
    done
  fi
  [ -S "$RUN_DIR/h1/docker.sock" ] && timeout 30 docker --host "$(sock 1)" stack rm "$STACK" >/dev/null 2>&1 || true
  teardown_swarm
  [ -z "$forward_rule" ] || iptables -D FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT 2>/dev/null || true
  [ -z "$mimic_image" ] || remove_mimic_image
  if [ -n "$build_engine_pid" ]; then
    kill "$build_engine_pid" 2>/dev/null || true
    for _ in $(seq 1 60); do
      kill -0 "$build_engine_pid" 2>/dev/null || break
      sleep 0.5
    done
  fi
  rm -rf "$work"
  if [ "$result" = PASS ] && [ "$status" -eq 0 ]; then
    echo "test-swarm: PASS ($((SECONDS - started)) s)"
  else
    echo "test-swarm: FAIL (exit status $status, $((SECONDS - started)) s)" >&2
    [ "$status" -eq 0 ] && status=1
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "$(id -u)" = 0 ] || fail 'needs root: it makes network namespaces, a bridge and Docker engines'
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v mosquitto_sub >/dev/null 2>&1 || missing+=(mosquitto-clients)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$work/apt.log" 2>&1 || {
    cat "$work/apt.log" >&2
    fail "apt-get install ${missing[*]} failed"
  }
fi

# Whatever an interrupted run left.
teardown_swarm

# ---------------------------------------------------------------------------------------------
# The images, on the engine of scripts/test-image.sh.
if docker info >/dev/null 2>&1; then
  BUILD_HOST="${DOCKER_HOST:-unix:///var/run/docker.sock}"
elif DOCKER_HOST="unix://$BUILD_RUN/docker.sock" docker info >/dev/null 2>&1; then
  BUILD_HOST="unix://$BUILD_RUN/docker.sock"
else
  BUILD_HOST="unix://$BUILD_RUN/docker.sock"
  mkdir -p "$BUILD_DIR/docker" "$BUILD_RUN"
  step "build engine: starting dockerd (data root $BUILD_DIR/docker, as scripts/test-image.sh does)"
  dockerd --host "$BUILD_HOST" --data-root "$BUILD_DIR/docker" --exec-root "$BUILD_RUN/exec" \
    --pidfile "$BUILD_RUN/dockerd.pid" >"$work/build-dockerd.log" 2>&1 &
  build_engine_pid=$!
  for _ in $(seq 1 120); do
    DOCKER_HOST="$BUILD_HOST" docker info >/dev/null 2>&1 && break
    kill -0 "$build_engine_pid" 2>/dev/null || break
    sleep 0.5
  done
  DOCKER_HOST="$BUILD_HOST" docker info >/dev/null 2>&1 || {
    tail -n 30 "$work/build-dockerd.log" >&2
    fail 'the build engine did not start'
  }
fi
export BUILD_HOST
bd() { DOCKER_HOST="$BUILD_HOST" docker "$@"; }

if [ -n "${MIMIC_TEST_IMAGE_BASE:-}" ]; then
  base="$MIMIC_TEST_IMAGE_BASE"
elif bd image inspect node:24-slim >/dev/null 2>&1; then
  base=node:24-slim
else
  base="$LOCAL_BASE"
fi
bd image inspect "$base" >/dev/null 2>&1 || fail "the base $base is not on the build engine ($BUILD_HOST): run scripts/test-image.sh first, which builds it"
step "base: $base"

images_started=$SECONDS
# The broker, NATS and the store: built once per Dockerfile and base, then kept.
extras_tag="$({
  cat "$repo/deploy/swarm/images/Dockerfile"
  bd image inspect -f '{{.Id}}' "$base"
} | sha256sum | cut -c1-12)"
build_extras() {
  local target image old
  for target in mosquitto nats s3; do
    image="mimic-test-swarm-$target:$extras_tag"
    if bd image inspect "$image" >/dev/null 2>&1; then
      step "image $image: built before"
      continue
    fi
    step "docker build --target $target deploy/swarm/images (once for this Dockerfile and base)"
    bd build --force-rm --build-arg "BASE=$base" --target "$target" -t "$image" "$repo/deploy/swarm/images" \
      >"$work/build-$target.log" 2>&1 || {
      tail -n 30 "$work/build-$target.log" >&2
      echo "test-swarm: docker build --target $target failed" >&2
      return 1
    }
    # Older builds of it are of no more use.
    for old in $(bd images --format '{{.Repository}}:{{.Tag}}' "mimic-test-swarm-$target"); do
      [ "$old" = "$image" ] || bd image rm "$old" >/dev/null 2>&1 || true
    done
  done
}
# Beside the build of Mimic: they wait mostly on the package mirrors, it on the processor.
build_extras &
extras_pid=$!
if [ -n "${MIMIC_TEST_SWARM_IMAGE:-}" ]; then
  # An image of Mimic built before, used as it is and left on the build engine.
  bd image inspect "$MIMIC_TEST_SWARM_IMAGE" >/dev/null 2>&1 || fail "MIMIC_TEST_SWARM_IMAGE=$MIMIC_TEST_SWARM_IMAGE: no such image on $BUILD_HOST"
  step "image of Mimic: $MIMIC_TEST_SWARM_IMAGE (MIMIC_TEST_SWARM_IMAGE)"
  mimic_image_built="$MIMIC_TEST_SWARM_IMAGE"
else
  mimic_image="mimic-test-swarm-mimic:$$"
  mimic_image_built="$mimic_image"
  dangling_before="$(bd images -q --filter dangling=true)"
  step "docker build -t $mimic_image . (log: $work/build-mimic.log)"
  bd build --force-rm --build-arg "BASE=$base" -t "$mimic_image" "$repo" >"$work/build-mimic.log" 2>&1 || {
    tail -n 40 "$work/build-mimic.log" >&2
    fail 'docker build of Mimic failed'
  }
fi
wait "$extras_pid" || fail 'the images of the broker, NATS and the store could not be built'
build_time=$((SECONDS - images_started))
step "images ready in $build_time s"
images=("$mimic_image_built" "mimic-test-swarm-mosquitto:$extras_tag" "mimic-test-swarm-nats:$extras_tag" "mimic-test-swarm-s3:$extras_tag")
bd save -o "$work/images.tar" "${images[@]}"
# The build engine is not needed any more; one this script started is stopped now, to leave the
# machine's two cores to the swarm.
if [ -n "$build_engine_pid" ]; then
  [ -z "$mimic_image" ] || remove_mimic_image
  kill "$build_engine_pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$build_engine_pid" 2>/dev/null || break
    sleep 0.5
  done
  build_engine_pid=''
  mimic_image=''
fi

# ---------------------------------------------------------------------------------------------
# The hosts and their engines.
swarm_started=$SECONDS
# The containers inherit the engines' limit of open files: the broker holds a connection per meter.
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -gt $((METERS + 1000)) ] || fail "the limit of open files is $(ulimit -n): the broker needs more than $METERS"
ip link add "$BRIDGE" type bridge
ip addr add "$NET_PREFIX.1/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
# With bridge netfilter on, frames between the hosts pass the FORWARD chain, whose policy an engine
# in this namespace may have set to DROP.
if iptables -C FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT 2>/dev/null || iptables -I FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT; then
  forward_rule=1
fi
for i in "${HOSTS[@]}"; do
  ip netns add "$(ns "$i")"
  ip link add "msw$i" type veth peer name eth0 netns "$(ns "$i")"
  ip link set "msw$i" master "$BRIDGE" up
  ip -n "$(ns "$i")" addr add "$NET_PREFIX.1$i/24" dev eth0
  ip -n "$(ns "$i")" link set eth0 up
  ip -n "$(ns "$i")" link set lo up
  mkdir -p "$STATE/h$i" "$RUN_DIR/h$i"
  # Into the host's network namespace only (`ip netns exec` would also remount /sys, hiding the
  # cgroup mounts from dockerd), with a host name of its own (the swarm's node name).
  nsenter --net="/run/netns/$(ns "$i")" unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$(ns "$i")" \
    dockerd --host "$(sock "$i")" --data-root "$STATE/h$i/docker" \
    --exec-root "$RUN_DIR/h$i/exec" --pidfile "$RUN_DIR/h$i/dockerd.pid" \
    >"$STATE/h$i/dockerd.log" 2>&1 &
done
for i in "${HOSTS[@]}"; do
  for _ in $(seq 1 120); do
    dk "$i" info >/dev/null 2>&1 && break
    sleep 0.5
  done
  dk "$i" info >/dev/null 2>&1 || {
    tail -n 30 "$STATE/h$i/dockerd.log" >&2
    fail "the engine of host $i did not start"
  }
done
step "engines: dockerd $(dk 1 version -f '{{.Server.Version}}') on $NET_PREFIX.11-13 ($((SECONDS - swarm_started)) s)"

# The images, loaded into the three engines at once.
load_started=$SECONDS
pids=()
for i in "${HOSTS[@]}"; do
  dk "$i" load -q -i "$work/images.tar" >"$work/load-$i.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "docker load failed: $(cat "$work"/load-*.log)"; done
rm -f "$work/images.tar"
step "images loaded into the three engines ($((SECONDS - load_started)) s)"

dk 1 swarm init --advertise-addr "$NET_PREFIX.11" --listen-addr "$NET_PREFIX.11:2377" \
  --default-addr-pool "$ADDR_POOL" --dispatcher-heartbeat 2s >/dev/null
worker_token="$(dk 1 swarm join-token -q worker)"
for i in 2 3; do
  dk "$i" swarm join --token "$worker_token" --advertise-addr "$NET_PREFIX.1$i" --listen-addr "$NET_PREFIX.1$i:2377" \
    "$NET_PREFIX.11:2377" >/dev/null
done
node1="$(dk 1 info -f '{{.Swarm.NodeID}}')"
dk 1 node update --label-add mimic.infra=true "$node1" >/dev/null
step "swarm: $(dk 1 node ls --format '{{.Hostname}}' | wc -l) nodes ($((SECONDS - swarm_started)) s)"

# ---------------------------------------------------------------------------------------------
# The stack.
deploy_started=$SECONDS
MIMIC_PRODUCT_KEY="$key" MIMIC_IMAGE="$mimic_image_built" \
  MOSQUITTO_IMAGE="mimic-test-swarm-mosquitto:$extras_tag" NATS_IMAGE="mimic-test-swarm-nats:$extras_tag" \
  S3_IMAGE="mimic-test-swarm-s3:$extras_tag" \
  dk 1 stack deploy --resolve-image never -c "$repo/deploy/swarm/stack.yaml" "$STACK" >"$work/deploy.log" 2>&1 || {
  cat "$work/deploy.log" >&2
  fail 'docker stack deploy failed'
}
step "docker stack deploy --resolve-image never -c deploy/swarm/stack.yaml $STACK"

# A client of the shards' API, on the stack's network: node's fetch to each address of
# tasks.shard. Prints one JSON line per shard: {address, status, body}.
cat >"$work/api.mjs" <<'EOF'
import { lookup } from 'node:dns/promises'
const [method, path, body] = process.argv.slice(2)
const addresses = (await lookup('tasks.shard', { all: true, family: 4 }).catch(() => [])).map((a) => a.address)
await Promise.all(
  addresses.map(async (address) => {
    let line
    try {
      const res = await fetch(`http://${address}:8000${path}`, {
        method,
        headers: { authorization: `Bearer ${process.env.KEY}`, 'content-type': 'application/json' },
        body: method === 'GET' ? undefined : body,
        signal: AbortSignal.timeout(60000),
      })
      line = { address, status: res.status, body: await res.json().catch(() => null) }
    } catch (err) {
      line = { address, status: 0, error: String(err) }
    }
    console.log(JSON.stringify(line))
  }),
)
EOF
chmod 644 "$work/api.mjs"
# api HOST METHOD PATH [BODY]: runs the client in a container on that host.
api() {
  local host="$1"
  shift
  dk "$host" run --rm --network "${STACK}_fleet" --label mimic.test-swarm=client -e KEY="$key" \
    -v "$work/api.mjs:/tmp/api.mjs:ro" --entrypoint node "$mimic_image_built" /tmp/api.mjs "$@"
}
# shards_answer HOST N: the lines of GET /health, true when N different shards of 3 answer 200.
health_of_shards() {
  api "$1" GET /health >"$work/health.jsonl" 2>/dev/null || return 1
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").filter(Boolean).map(JSON.parse)
    const ok = lines.filter((l) => l.status === 200 && l.body && l.body.shard)
    const shards = new Set(ok.map((l) => l.body.shard))
    const sum = ok.reduce((s, l) => s + (l.body.instances ?? 0), 0)
    console.log([...shards].sort().join(" ") + " instances " + sum)
    process.exit(shards.size === 3 && ok.length === 3 ? 0 : 1)
  ' "$work/health.jsonl"
}
wait_shards() {
  local host="$1" what="$2"
  for _ in $(seq 1 120); do
    health_of_shards "$host" >"$work/shards.txt" 2>&1 && return 0
    sleep 2
  done
  cat "$work/health.jsonl" >&2 || true
  fail "$what: three shards did not answer GET /health on tasks.shard"
}

# The subscriber, on a host of the swarm that is not the broker's (2, or 3 when 2 is cut off):
# every meter's topic it sees.
sub_host=2
subscribe() {
  : >"$work/seen.txt"
  ip netns exec "$(ns "$sub_host")" mosquitto_sub -h "$NET_PREFIX.11" -p 1883 -t 'meters/+/power' -F '%t' -i "test-swarm-sub-$$" \
    >"$work/seen.txt" 2>"$work/sub.log" &
  sub_pid=$!
}
unsubscribe() {
  kill "$sub_pid" 2>/dev/null || true
  wait "$sub_pid" 2>/dev/null || true
  sub_pid=''
}
seen() { sort -u "$work/seen.txt" | wc -l; }
# wait_meters WHAT SECONDS: until every meter was seen.
wait_meters() {
  local what="$1" limit="$2" t0=$SECONDS n=0
  while [ $((SECONDS - t0)) -lt "$limit" ]; do
    n="$(seen)"
    [ "$n" -ge "$METERS" ] && break
    kill -0 "$sub_pid" 2>/dev/null || {
      # The broker may not listen yet: subscribe again.
      sleep 2
      subscribe
    }
    sleep 2
  done
  [ "$n" -ge "$METERS" ] || fail "$what: the subscriber saw $n of $METERS meters in $limit s"
  # Exactly the meters of the fleet, no other topic.
  local expected
  expected="$(node -e 'for (let i = 0; i < 6000; i++) console.log(`meters/meter_${String(i).padStart(4, "0")}/power`)' | sort)"
  diff <(sort -u "$work/seen.txt") <(echo "$expected") >/dev/null || fail "$what: the topics seen are not meters/meter_0000..5999/power"
  step "PASS $what: all $METERS meters seen by a subscriber on host $sub_host ($((SECONDS - t0)) s)"
}
# mimic fleet, from a container on the stack's network, with tasks.shard as the shards. Each call
# may take minutes here (a shard that loads or starts connects its 2,000 meters, three shards and
# the broker on two busy cores), where the default --timeout is 30 s.
fleet() {
  local host="$1"
  shift
  dk "$host" run --rm --network "${STACK}_fleet" --label mimic.test-swarm=client -e MIMIC_PRODUCT_KEY="$key" \
    --entrypoint mimic "$mimic_image_built" fleet "$@" --shards http://tasks.shard:8000 --timeout 300
}

wait_shards 1 'deploy'
step "PASS three shards answer /health: $(cat "$work/shards.txt") ($((SECONDS - deploy_started)) s after deploy)"
grep -q " instances $((METERS + 1))$" "$work/shards.txt" || fail "the shards hold $(cat "$work/shards.txt"), not $((METERS + 1)) instances in all"
step 'PASS the shards hold disjoint shares whose sum is the whole fleet (6,000 meters and grid_1)'
subscribe
wait_meters 'deployed' 300

# ---------------------------------------------------------------------------------------------
# A fleet snapshot, saved into the store while all three shards run: one id, one object per shard.
snap_id="test-swarm-$$"
fleet 1 save --id "$snap_id" --label test-swarm >"$work/save.txt" 2>&1 || true
grep -qx "saved fleet snapshot $snap_id on 3 shards" "$work/save.txt" || fail "mimic fleet save: $(cat "$work/save.txt")"
api 1 POST /api/v3/system/snapshots/method/list '{"kwargs": {}}' >"$work/list.jsonl"
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
  for (const l of lines) {
    const entry = (l.body?.result?.files ?? []).find((f) => f.id === process.argv[2])
    if (!entry || JSON.stringify(entry.shards?.saved) !== "[1,2,3]") { console.error(JSON.stringify(l)); process.exit(1) }
  }
' "$work/list.jsonl" "$snap_id" || fail 'fleet snapshot: list does not show the three shards of it in the store'
step "PASS mimic fleet save --id $snap_id: one object per shard in s3://mimic/fleet"

# ---------------------------------------------------------------------------------------------
# One host cut off: one with a shard and not the broker; the subscriber goes on the other.
# The running shards as "task-name node state" (the nodes are named mimic-swarm-1..3).
shard_tasks() { dk 1 service ps --filter desired-state=running --format '{{.Name}} {{.Node}} {{.CurrentState}}' "${STACK}_shard"; }
cut=''
for i in 3 2; do
  if shard_tasks | awk -v node="$(ns "$i")" '$2 == node' | grep -q .; then
    cut="$i"
    break
  fi
done
[ -n "$cut" ] || fail "no shard runs on host 2 or 3: $(shard_tasks)"
[ "$cut" = 2 ] && sub_host=3
cut_node="$(dk "$cut" info -f '{{.Swarm.NodeID}}')"
cut_slot="$(shard_tasks | awk -v node="$(ns "$cut")" '$2 == node {print $1}' | head -n 1)"
unsubscribe
failover_started=$SECONDS
ip link set "msw$cut" down
step "host $cut cut off (its link down), running $cut_slot"
for _ in $(seq 1 90); do
  [ "$(dk 1 node inspect -f '{{.Status.State}}' "$cut_node")" = down ] && break
  sleep 1
done
[ "$(dk 1 node inspect -f '{{.Status.State}}' "$cut_node")" = down ] || fail "the swarm did not see host $cut go down"
step "swarm: host $cut down ($((SECONDS - failover_started)) s)"
moved=''
for _ in $(seq 1 120); do
  moved="$(shard_tasks | awk -v slot="$cut_slot" -v cut="$(ns "$cut")" '$1 == slot && $2 != cut && $3 == "Running" {print $2}')"
  [ -n "$moved" ] && break
  sleep 1
done
[ -n "$moved" ] || fail "$cut_slot was not started on another host"
step "PASS $cut_slot running again on $moved ($((SECONDS - failover_started)) s after the cut)"
wait_shards 1 'after the cut'
step "PASS three shards answer again: $(cat "$work/shards.txt")"
subscribe
wait_meters 'after the cut' 300
unsubscribe

# ---------------------------------------------------------------------------------------------
# The fleet snapshot loaded on every shard, the moved one included: it reads its object from the store.
# A shard may be restarting meanwhile: load once the three answer.
wait_shards 1 'before the load'
fleet 1 load "$snap_id" >"$work/load.txt" 2>&1 || true
grep -qx "loaded fleet snapshot $snap_id on 3 shards" "$work/load.txt" || fail "mimic fleet load: $(cat "$work/load.txt")"
health_of_shards 1 >"$work/shards.txt" 2>&1 || fail "after the load: $(cat "$work/health.jsonl")"
grep -q " instances $((METERS + 1))$" "$work/shards.txt" || fail "after the load the shards hold $(cat "$work/shards.txt")"
step "PASS mimic fleet load $snap_id on the three shards, the moved one included: $(cat "$work/shards.txt")"
fleet 1 run >"$work/run.txt" 2>&1 || fail "mimic fleet run: $(cat "$work/run.txt")"
subscribe
wait_meters 'after the load' 300
unsubscribe

result=PASS
step "times: images $build_time s, swarm $((deploy_started - swarm_started)) s, deploy to the end $((SECONDS - deploy_started)) s"
