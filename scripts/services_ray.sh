# Sourced by scripts/services.sh: a one-node Ray head on loopback for the Ray executor's suites.
#   ray_up      start the head (GCS on 127.0.0.1:$RAY_GCS_PORT, the Jobs API on http://127.0.0.1:$RAY_DASHBOARD_PORT)
#               with the ray of .venv (`make install-ray` brings it: extra `ray`), and append RAY_ADDRESS to .services/env
#   ray_down    `ray stop`
#   ray_status  one line
# The head offers 4 CPUs and no GPU; it is kept quiet beside the suite (no usage stats, metrics or log monitor, a
# small object store). Its session files live under $RAY_TEMP_DIR, so another Ray on this machine (a Slurm job's
# Ray world) does not share them. Needs $STATE (services.sh); idempotent: a head that answers is left alone.
RAY_GCS_PORT="${STARFORGE_RAY_PORT:-6390}"
RAY_DASHBOARD_PORT="${STARFORGE_RAY_DASHBOARD_PORT:-8265}"
RAY_TEMP_DIR="${STARFORGE_RAY_TEMP_DIR:-/tmp/starforge-ray}"
RAY_URL="http://127.0.0.1:$RAY_DASHBOARD_PORT"

ray_bin() { echo "$(pwd)/.venv/bin/ray"; }

# The Jobs API answers once the dashboard has loaded its job module.
ray_jobs_api_ready() { curl -fsS --max-time 2 "$RAY_URL/api/jobs/" >/dev/null 2>&1; }

ray_up() {
  if [ ! -x "$(ray_bin)" ]; then
    echo "services: installing ray into .venv (make install-ray)"
    make install-ray >/dev/null
  fi
  if ! ray_jobs_api_ready; then
    "$(ray_bin)" stop --force >/dev/null 2>&1 || true  # a half-started head holds the ports
    echo "services: starting a Ray head on 127.0.0.1:$RAY_GCS_PORT (Jobs API on $RAY_URL)"
    RAY_USAGE_STATS_ENABLED=0 RAY_enable_metrics_collection=0 RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 \
      "$(ray_bin)" start --head --node-ip-address=127.0.0.1 --port="$RAY_GCS_PORT" \
      --dashboard-host=127.0.0.1 --dashboard-port="$RAY_DASHBOARD_PORT" --include-dashboard=true \
      --num-cpus=4 --num-gpus=0 --object-store-memory=$((128 * 1024 * 1024)) --include-log-monitor=false \
      --temp-dir="$RAY_TEMP_DIR" --disable-usage-stats --log-style=record >"$STATE/ray-start.log" 2>&1 \
      || { echo "services: ray start failed; see $STATE/ray-start.log" >&2; exit 1; }
    local tries=0
    until ray_jobs_api_ready; do
      tries=$((tries + 1))
      if [ "$tries" -gt 300 ]; then echo "services: the Ray Jobs API did not answer on $RAY_URL" >&2; exit 1; fi
      sleep 0.2
    done
  fi
  echo "RAY_ADDRESS=$RAY_URL" >> "$STATE/env"
  echo "services: Ray ready (Jobs API on $RAY_URL, written to .services/env)"
}

ray_down() {
  if [ -x "$(ray_bin)" ]; then "$(ray_bin)" stop >/dev/null 2>&1 || true; fi
}

ray_status() {
  if ray_jobs_api_ready; then echo "ray: up (Jobs API on $RAY_URL)"; else echo "ray: down"; fi
}
