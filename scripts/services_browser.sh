# Sourced by scripts/services.sh: Debian's chromium for the web console's browser tests (tests/e2e/test_web_browser.py).
#   browser_up      install chromium and the log's fonts if missing (apt: monospace, symbols, colour emoji) and append
#                   STARFORGE_CHROMIUM=<its path> to .services/env
#   browser_status  one line
# Playwright drives this browser through `executable_path`; `playwright install` (a browser download) is never run.
# Needs $STATE and as_root (services.sh); idempotent: an installed chromium is left alone.
browser_bin() { command -v chromium 2>/dev/null || true; }

browser_up() {
  if [ -z "$(browser_bin)" ]; then
    echo "services: installing chromium from Debian's packages"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  if ! fc-list 2>/dev/null | grep -qi "Noto Color Emoji" || ! fc-list 2>/dev/null | grep -qi "DejaVu Sans Mono"; then
    echo "services: installing the log's fonts (DejaVu, Noto Color Emoji) from Debian's packages"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      fonts-dejavu-core fonts-noto-color-emoji >/dev/null
  fi
  local bin; bin="$(browser_bin)"
  if [ -z "$bin" ]; then echo "services: chromium did not install" >&2; exit 1; fi
  echo "STARFORGE_CHROMIUM=$bin" >> "$STATE/env"
  echo "services: chromium ready at $bin (written to .services/env)"
}

browser_status() {
  if [ -n "$(browser_bin)" ]; then echo "chromium: $(browser_bin)"; else echo "chromium: missing"; fi
}
