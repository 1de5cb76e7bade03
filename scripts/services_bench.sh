# Sourced by scripts/services.sh: the load generator the benchmarks drive the console with (`make bench`, bench/).
#   bench_up      install Debian's `hey` (an HTTP load generator, a separate process) if it is missing
#   bench_status  one line
# Needs as_root (services.sh); idempotent: an installed hey is left alone. Benchmarks are never part of the tests,
# so a failed install only warns.
hey_bin() { command -v hey 2>/dev/null || true; }

bench_up() {
  if [ -n "$(hey_bin)" ]; then return; fi
  echo "services: installing hey (the benchmarks' load generator) from Debian's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends hey >/dev/null 2>&1 || {
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends hey >/dev/null
  } || echo "services: hey did not install (make bench needs it: apt-get install hey)" >&2
}

bench_status() {
  if [ -n "$(hey_bin)" ]; then echo "hey: $(hey_bin)"; else echo "hey: missing (make bench needs it)"; fi
}
