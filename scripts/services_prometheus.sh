# Sourced by scripts/services.sh: Debian's Prometheus for the `/metrics` tests (tests/integration/test_metrics.py).
#   prometheus_install  install Debian's `prometheus` package if prometheus or promtool is missing (its own service
#                       is stopped and disabled: the tests start their own Prometheus on a free loopback port)
#   prometheus_up       install, then append STARFORGE_PROMETHEUS=<path> and STARFORGE_PROMTOOL=<path> to .services/env
#   prometheus_status   one line
# Needs $STATE and as_root (services.sh); idempotent: an installed Prometheus is left alone.
prometheus_bin() { command -v prometheus 2>/dev/null || true; }
promtool_bin() { command -v promtool 2>/dev/null || true; }

prometheus_install() {
  if [ -n "$(prometheus_bin)" ] && [ -n "$(promtool_bin)" ]; then return; fi
  echo "services: installing prometheus (and promtool) from Debian's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # the package starts a system Prometheus on :9090; nothing here uses it
  as_root systemctl disable --now prometheus >/dev/null 2>&1 || as_root service prometheus stop >/dev/null 2>&1 || true
}

prometheus_up() {
  prometheus_install
  local server tool; server="$(prometheus_bin)"; tool="$(promtool_bin)"
  if [ -z "$server" ] || [ -z "$tool" ]; then echo "services: prometheus did not install" >&2; exit 1; fi
  echo "STARFORGE_PROMETHEUS=$server" >> "$STATE/env"
  echo "STARFORGE_PROMTOOL=$tool" >> "$STATE/env"
  echo "services: prometheus ready at $server, promtool at $tool (written to .services/env)"
}

prometheus_status() {
  if [ -n "$(prometheus_bin)" ]; then echo "prometheus: $(prometheus_bin)"; else echo "prometheus: missing"; fi
}
