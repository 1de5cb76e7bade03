#!/usr/bin/env bash
# Provision what the suites need, on loopback only:
#   PostgreSQL (Debian's package) on 127.0.0.1:${STARFORGE_PG_PORT:-55432}, user `starforge` with a password
#   (jobs share the machine's network, so no database ever trusts loopback);
#   bubblewrap (Debian's package), the job sandbox of the local executor;
#   a two-node Slurm cluster (scripts/services_slurm.sh) and a two-node Ray cluster on loopback (scripts/services_ray.sh);
#   Debian's chromium for the web console's browser tests (scripts/services_browser.sh);
#   Debian's docker-registry on loopback with a small test image built here (scripts/services_registry.sh);
#   Debian's prometheus and promtool for the /metrics tests (scripts/services_prometheus.sh);
#   Debian's hey, the load generator of `make bench` (scripts/services_bench.sh).
# Usage: scripts/services.sh up|down|status.  `up` writes .services/env, which the test suite reads.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE="$(pwd)/.services"
PGPORT="${STARFORGE_PG_PORT:-55432}"
PGDATA="${STARFORGE_PG_DATA:-/tmp/starforge-pg-$PGPORT}"

# shellcheck source=scripts/services_slurm.sh
. "$(dirname "$0")/services_slurm.sh"
# shellcheck source=scripts/services_ray.sh
. "$(dirname "$0")/services_ray.sh"
# shellcheck source=scripts/services_browser.sh
. "$(dirname "$0")/services_browser.sh"
# shellcheck source=scripts/services_registry.sh
. "$(dirname "$0")/services_registry.sh"
# shellcheck source=scripts/services_prometheus.sh
. "$(dirname "$0")/services_prometheus.sh"
# shellcheck source=scripts/services_bench.sh
. "$(dirname "$0")/services_bench.sh"

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# PostgreSQL refuses to run as root: use the `postgres` account when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_postgres() {
  if [ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ]; then return; fi
  echo "services: installing PostgreSQL from Debian's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
}

# Jobs get a network namespace of their own (executors.*.network): slirp4netns gives them egress, iproute2 closes
# the machine's own addresses to them, and an ordinary user's slirp4netns needs /dev/net/tun at its usual mode 0666
install_jobnet() {
  local missing=()
  command -v slirp4netns >/dev/null 2>&1 || missing+=(slirp4netns)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "services: installing ${missing[*]} from Debian's packages (the jobs' own network)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if [ ! -e /dev/net/tun ]; then
    as_root mkdir -p /dev/net
    as_root mknod -m 0666 /dev/net/tun c 10 200
  elif [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
    as_root chmod 0666 /dev/net/tun
  fi
}

running() { "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" 2>/dev/null; }

install_bubblewrap() {
  if command -v bwrap >/dev/null 2>&1; then return; fi
  echo "services: installing bubblewrap from Debian's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
}

# Every Debian package the suites need that is missing, in one apt transaction (one index update, one dpkg run);
# each service's own install step below then finds its package and only checks it.
debian_missing() {
  local pkgs=()
  command -v bwrap >/dev/null 2>&1 || pkgs+=(bubblewrap)
  command -v slirp4netns >/dev/null 2>&1 || pkgs+=(slirp4netns)
  command -v ip >/dev/null 2>&1 || pkgs+=(iproute2)
  command -v nsenter >/dev/null 2>&1 || pkgs+=(util-linux)
  { [ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ]; } || pkgs+=(postgresql)
  { command -v slurmctld && command -v slurmd && command -v munged; } >/dev/null 2>&1 || pkgs+=(slurm-wlm munge)
  [ -n "$(browser_bin)" ] || pkgs+=(chromium)
  local tool  # the job images: the test registry, the image built for it, and the console's pull and unpack
  for tool in docker-registry mmdebstrap skopeo umoci; do command -v "$tool" >/dev/null 2>&1 || pkgs+=("$tool"); done
  echo "${pkgs[*]}"
}

install_debian() {
  local pkgs
  read -r -a pkgs <<<"$(debian_missing)"
  if [ "${#pkgs[@]}" -eq 0 ]; then return; fi
  echo "services: installing ${pkgs[*]} from Debian's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}

up() {
  mkdir -p "$STATE"
  # the venv with Ray (for the Ray head) installs while Debian's packages do: pip and apt overlap
  make install-ray >"$STATE/install.log" 2>&1 &
  local installing=$!
  install_debian
  install_bubblewrap
  install_jobnet
  install_postgres
  local bin; bin="$(pg_bin)"
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then useradd --system --no-create-home postgres; fi
  local password_file="$PGDATA.password"
  if ! running; then
    rm -rf "$PGDATA"; mkdir -p "$PGDATA"
    if [ "$(id -u)" = 0 ]; then chown postgres "$PGDATA"; fi
    ( umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$password_file" )
    if [ "$(id -u)" = 0 ]; then chown postgres "$password_file"; fi
    as_pg "$bin/initdb" -D "$PGDATA" -U starforge --auth-host=scram-sha-256 --auth-local=peer \
      --pwfile="$password_file" -E UTF8 >/dev/null
    as_pg "$bin/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDATA -c max_connections=400 -c fsync=off -c synchronous_commit=off" \
      start >/dev/null
  fi
  running || { echo "services: PostgreSQL did not start; see $PGDATA/server.log" >&2; exit 1; }
  local password; password="$(cat "$password_file" 2>/dev/null || true)"
  echo "STARFORGE_TEST_POSTGRES_URL=postgresql+psycopg://starforge:$password@127.0.0.1:$PGPORT/postgres" > "$STATE/env"
  echo "services: PostgreSQL ready on 127.0.0.1:$PGPORT (written to .services/env)"
  slurm_up  # each appends its addresses to .services/env
  browser_up
  registry_up
  prometheus_up
  bench_up
  wait "$installing" || { cat "$STATE/install.log" >&2; echo "services: make install-ray failed" >&2; exit 1; }
  ray_up
}

down() {
  local bin; bin="$(pg_bin)"
  if [ -n "$bin" ] && running; then as_pg "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null; fi
  ray_down
  slurm_down
  registry_down
  rm -f "$STATE/env"
  echo "services: stopped"
}

status() {
  if [ -n "$(pg_bin)" ] && running; then echo "postgresql: up on 127.0.0.1:$PGPORT"; else echo "postgresql: down"; fi
  if command -v bwrap >/dev/null 2>&1; then echo "bubblewrap: $(command -v bwrap)"; else echo "bubblewrap: missing"; fi
  slurm_status
  ray_status
  browser_status
  registry_status
  prometheus_status
  bench_status
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
