#!/usr/bin/env bash
# Entry point of a custom/custom job. It runs from the unpacked bundle root inside the image given with --image.
# Write checkpoints to "$FORGE_OUT_DIR/checkpoints/<name>/", logs to "$FORGE_OUT_DIR/logs/", and an exported model
# to "$FORGE_OUT_DIR/hf_export/"; the platform registers what it finds there when the command exits.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${FORGE_OUT_DIR:-out}"
mkdir -p "$out/checkpoints" "$out/logs"

echo "custom job: config=$here/config.yaml out=$out"
echo "metrics tracker: ${FORGE_EXTERNAL_OBSERVABILITY_URL:-<none configured>}"

# Replace the placeholder below with your training command, for example:
#   exec python "$here/train.py" --config "$here/config.yaml" --output "$out/checkpoints" "$@"
{
  echo "placeholder run: edit $here/train.sh to start real training"
  echo "arguments: $*"
} | tee "$out/logs/train.log"
