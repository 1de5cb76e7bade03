#!/usr/bin/env bash
# Refresh the vendored uPlot (the web console's charting library) from npm: its built files and licence, unchanged.
# Usage: scripts/vendor_uplot.sh [version]   (default: the latest on npm)
set -euo pipefail
version="${1:-latest}"
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/src/starforge/console/web/static/vendor/uplot"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --loglevel=error "uplot@$version" >/dev/null && tar -xzf uplot-*.tgz)
got="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$work/package/package.json")"
mkdir -p "$dest"
cp "$work/package/dist/uPlot.iife.min.js" "$work/package/dist/uPlot.min.css" "$work/package/LICENSE" "$dest/"
cat > "$dest/README.md" <<README
# uPlot $got (vendored)

[uPlot](LICENSE) — MIT licence, copyright Leon Sorokin — is the charting library of the web console's charts
(\`static/charts.js\` is its only user). These are the package's built files, unchanged: \`dist/uPlot.iife.min.js\`,
\`dist/uPlot.min.css\` and \`LICENSE\`, from \`npm pack uplot@$got\`. The console serves them itself
(\`/ui/static/vendor/uplot/...\`); nothing is loaded from a CDN.

Refresh (from the repository's root; needs npm):

    scripts/vendor_uplot.sh            # the latest version
    scripts/vendor_uplot.sh $got       # exactly this one
README
echo "uPlot $got -> $dest"
