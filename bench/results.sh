#!/usr/bin/env bash
# Assembles bench/RESULTS.md from the last recorded run of each benchmark (NODE_RESULTS.md,
# NODE_GATEWAY_RESULTS.md, SERVE_RESULTS.md, TOOLS_RESULTS.md, SCREEN_RESULTS.md, each written by its script's --write-results). Copies
# text only: every number in RESULTS.md comes from those files, which name the command and
# the machine that produced them. Each bench script calls this after writing its own file.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
{
  echo "# Benchmark results"
  echo
  echo "Assembled by \`bench/results.sh\` from the last recorded run of each benchmark; each section"
  echo "names the command that produced it. Regenerate one with \`bash bench/<node|node_gateway|serve|tools|screen>.sh --write-results\`."
  for part in NODE NODE_GATEWAY SERVE TOOLS SCREEN; do
    file="$HERE/${part}_RESULTS.md"
    [[ -f "$file" ]] || continue
    echo
    # Demote headings one level so each benchmark is a section of this file.
    sed -e 's/^#/##/' "$file"
  done
} >"$HERE/RESULTS.md"
echo "wrote $HERE/RESULTS.md" >&2
