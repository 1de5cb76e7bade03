# Sourced by scripts/services.sh: registry_up, registry_down and registry_status for the image suites.
#
# Debian's docker-registry on 127.0.0.1:$REGISTRY_PORT (loopback only, no authentication, plain HTTP), its storage
# in $REGISTRY_DIR, and one small image pushed to it: Debian bookworm's essential set plus python3 (mmdebstrap),
# made an OCI image with umoci and pushed with skopeo, with a marker file only it has (/etc/starforge-test-image).
# An image already in the registry is not built again. registry_up appends STARFORGE_TEST_REGISTRY (host:port) and
# STARFORGE_TEST_IMAGE (host:port/name:tag) to .services/env. Needs $STATE and as_root (services.sh).
REGISTRY_PORT="${STARFORGE_REGISTRY_PORT:-5055}"
REGISTRY_DIR="${STARFORGE_REGISTRY_DIR:-/tmp/starforge-registry}"
REGISTRY_HOST="127.0.0.1:$REGISTRY_PORT"
REGISTRY_TAG=2  # bump it when the image below changes: the new one is built
REGISTRY_IMAGE="$REGISTRY_HOST/starforge/test:$REGISTRY_TAG"
REGISTRY_MARKER="starforge test image"

registry_answers() { curl -fsS --max-time 2 "http://$REGISTRY_HOST/v2/" >/dev/null 2>&1; }

registry_has_image() {
  curl -fsS --max-time 5 -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$REGISTRY_HOST/v2/starforge/test/manifests/$REGISTRY_TAG" >/dev/null 2>&1
}

registry_start() {
  mkdir -p "$REGISTRY_DIR/data"
  cat > "$REGISTRY_DIR/config.yml" <<EOF
# written by scripts/services.sh: the test registry, on loopback only
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
http:
  addr: $REGISTRY_HOST
EOF
  if [ -s "$REGISTRY_DIR/pid" ] && kill -0 "$(cat "$REGISTRY_DIR/pid")" 2>/dev/null; then
    kill "$(cat "$REGISTRY_DIR/pid")" 2>/dev/null || true
  fi
  nohup docker-registry serve "$REGISTRY_DIR/config.yml" >"$REGISTRY_DIR/registry.log" 2>&1 &
  echo $! > "$REGISTRY_DIR/pid"
  local tries=0
  until registry_answers; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ]; then
      echo "services: the test registry did not answer on $REGISTRY_HOST; see $REGISTRY_DIR/registry.log" >&2
      exit 1
    fi
    sleep 0.1
  done
}

# The image: bookworm's essential packages and python3 with its standard library's C libraries (the suites' jobs run
# the runtime's own interpreter, mounted read-only, which needs them: libsqlite3, libffi, libssl, ...), the marker,
# an OCI config with PATH.
registry_build_image() {
  local work="$REGISTRY_DIR/build"
  rm -rf "$work"; mkdir -p "$work"
  as_root mmdebstrap --quiet --variant=essential --include=python3,libstdc++6,libgomp1 --format=tar \
    bookworm "$work/root.tar" http://deb.debian.org/debian
  umoci init --layout "$work/oci"
  umoci new --image "$work/oci:$REGISTRY_TAG"
  umoci unpack --image "$work/oci:$REGISTRY_TAG" "$work/bundle" >/dev/null
  tar -xf "$work/root.tar" -C "$work/bundle/rootfs" --exclude='./dev/*'
  printf '%s\n' "$REGISTRY_MARKER" > "$work/bundle/rootfs/etc/starforge-test-image"
  umoci repack --image "$work/oci:$REGISTRY_TAG" "$work/bundle"
  umoci config --image "$work/oci:$REGISTRY_TAG" --config.workingdir / \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.env LANG=C.UTF-8
  skopeo copy --quiet --dest-tls-verify=false "oci:$work/oci:$REGISTRY_TAG" "docker://$REGISTRY_IMAGE"
  rm -rf "$work"
}

registry_up() {
  local started=$SECONDS
  registry_answers || registry_start
  if ! registry_has_image; then
    echo "services: building the test image $REGISTRY_IMAGE (mmdebstrap, umoci, skopeo)"
    registry_build_image
  fi
  registry_has_image || { echo "services: the test image is not in the registry at $REGISTRY_HOST" >&2; exit 1; }
  echo "STARFORGE_TEST_REGISTRY=$REGISTRY_HOST" >> "$STATE/env"
  echo "STARFORGE_TEST_IMAGE=$REGISTRY_IMAGE" >> "$STATE/env"
  echo "services: test registry ready on $REGISTRY_HOST with $REGISTRY_IMAGE ($((SECONDS - started))s)"
}

registry_down() {
  if [ -s "$REGISTRY_DIR/pid" ] && kill -0 "$(cat "$REGISTRY_DIR/pid")" 2>/dev/null; then
    kill "$(cat "$REGISTRY_DIR/pid")" 2>/dev/null || true
  fi
}

registry_status() {
  if registry_answers; then echo "registry: up on $REGISTRY_HOST$(registry_has_image && echo ", $REGISTRY_IMAGE")"
  else echo "registry: down"; fi
}
