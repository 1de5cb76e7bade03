# Sourced by scripts/services.sh: a two-node Ray cluster on loopback for the Ray executor's suites.
#   ray_up      start the head (GCS on 127.0.0.1:$RAY_GCS_PORT, the Jobs API on http://127.0.0.1:$RAY_DASHBOARD_PORT)
#               and one worker node (a second raylet on this machine, its own node id), with the ray of .venv
#               (`make install-ray` brings it: extra `ray`); append RAY_ADDRESS to .services/env
#   ray_down    `ray stop` (every Ray node of this machine)
#   ray_status  one line: the Jobs API and how many nodes are alive
# Each node offers $RAY_NODE_CPUS CPUs and no GPU, so a `cpu:2` job (one slot per node) spans both nodes while
# one-node jobs of the other suites still fit beside it. The worker node also declares the custom resource
# `starforge_worker_node: 1`, so a test can pin work to it (to take its CPUs). The worker's raylet listens on every
# address of this machine (Ray binds a joining node's own services there); the head's stay on loopback. The nodes are kept quiet beside the
# suite (no usage stats, metrics or log monitor, a small object store). Their session files live under
# $RAY_TEMP_DIR, so another Ray on this machine (a Slurm job's Ray world) does not share them. Needs $STATE
# (services.sh); idempotent: a head that answers is left alone, and a head without its worker gets it started.
RAY_GCS_PORT="${STARFORGE_RAY_PORT:-6390}"
RAY_DASHBOARD_PORT="${STARFORGE_RAY_DASHBOARD_PORT:-8265}"
RAY_TEMP_DIR="${STARFORGE_RAY_TEMP_DIR:-/tmp/starforge-ray}"
RAY_NODE_CPUS="${STARFORGE_RAY_NODE_CPUS:-2}"
RAY_URL="http://127.0.0.1:$RAY_DASHBOARD_PORT"
RAY_WORKER_RESOURCE="starforge_worker_node"

ray_bin() { echo "$(pwd)/.venv/bin/ray"; }

# The Jobs API answers once the dashboard has loaded its job module.
ray_jobs_api_ready() { curl -fsS --max-time 2 "$RAY_URL/api/jobs/" >/dev/null 2>&1; }

# How many Ray nodes are alive (the state API of the dashboard); 0 when it does not answer.
ray_alive_nodes() {
  curl -fsS --max-time 5 "$RAY_URL/api/v0/nodes?limit=100&detail=false" 2>/dev/null | "$(pwd)/.venv/bin/python" -c '
import json, sys
try:
    rows = json.load(sys.stdin)["data"]["result"]["result"]
except Exception:
    print(0)
else:
    print(sum(1 for row in rows if row.get("state") == "ALIVE"))' 2>/dev/null || echo 0
}

ray_quiet() { RAY_USAGE_STATS_ENABLED=0 RAY_enable_metrics_collection=0 "$@"; }

ray_start_worker() {
  echo "services: starting a Ray worker node (joins 127.0.0.1:$RAY_GCS_PORT)"
  ray_quiet "$(ray_bin)" start --address="[::ffff:127.0.0.1]:$RAY_GCS_PORT" --node-ip-address=::ffff:127.0.0.1 \
    --num-cpus="$RAY_NODE_CPUS" --num-gpus=0 --resources="{\"$RAY_WORKER_RESOURCE\": 1}" \
    --object-store-memory=$((128 * 1024 * 1024)) --include-log-monitor=false \
    --dashboard-agent-listen-port=52366 --disable-usage-stats --log-style=record >>"$STATE/ray-start.log" 2>&1 \
    || { echo "services: the Ray worker node did not start; see $STATE/ray-start.log" >&2; exit 1; }
}

ray_up() {
  if [ ! -x "$(ray_bin)" ]; then
    echo "services: installing ray into .venv (make install-ray)"
    make install-ray >/dev/null
  fi
  if ! ray_jobs_api_ready; then
    "$(ray_bin)" stop --force >/dev/null 2>&1 || true  # a half-started head (or a lone worker) holds the ports
    echo "services: starting a Ray head on 127.0.0.1:$RAY_GCS_PORT (Jobs API on $RAY_URL)"
    # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 keeps the head's own addresses on loopback; the worker node cannot set it
    # (`ray start --address` refuses to join then), so it names the head by its IPv6-mapped loopback address, which
    # Ray does not rewrite into this machine's outward address as it does 127.0.0.1
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 ray_quiet "$(ray_bin)" start --head --node-ip-address=127.0.0.1 --port="$RAY_GCS_PORT" \
      --dashboard-host=127.0.0.1 --dashboard-port="$RAY_DASHBOARD_PORT" --include-dashboard=true \
      --num-cpus="$RAY_NODE_CPUS" --num-gpus=0 --object-store-memory=$((128 * 1024 * 1024)) \
      --include-log-monitor=false --temp-dir="$RAY_TEMP_DIR" --disable-usage-stats --log-style=record \
      >"$STATE/ray-start.log" 2>&1 \
      || { echo "services: ray start failed; see $STATE/ray-start.log" >&2; exit 1; }
    local tries=0
    until ray_jobs_api_ready; do
      tries=$((tries + 1))
      if [ "$tries" -gt 300 ]; then echo "services: the Ray Jobs API did not answer on $RAY_URL" >&2; exit 1; fi
      sleep 0.2
    done
  fi
  if [ "$(ray_alive_nodes)" -lt 2 ]; then
    ray_start_worker
    local tries=0
    until [ "$(ray_alive_nodes)" -ge 2 ]; do
      tries=$((tries + 1))
      if [ "$tries" -gt 150 ]; then echo "services: the Ray worker node did not join the head" >&2; exit 1; fi
      sleep 0.2
    done
  fi
  echo "RAY_ADDRESS=$RAY_URL" >> "$STATE/env"
  echo "services: Ray ready (two nodes; Jobs API on $RAY_URL, written to .services/env)"
}

ray_down() {
  if [ -x "$(ray_bin)" ]; then "$(ray_bin)" stop >/dev/null 2>&1 || true; fi
}

ray_status() {
  if ray_jobs_api_ready; then echo "ray: up (Jobs API on $RAY_URL, $(ray_alive_nodes) nodes alive)"; else echo "ray: down"; fi
}
