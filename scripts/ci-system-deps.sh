#!/usr/bin/env bash
# System packages the e2e and browser tests need on a fresh machine (Debian). Idempotent.
set -euo pipefail
need=()
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
# the viewer's browser tests drive Debian's Chromium (playwright-core never downloads a browser)
[ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${need[@]}"
fi
