#!/usr/bin/env bash
# System packages the e2e and browser tests need on a fresh machine (Debian). Idempotent.
set -euo pipefail
need=()
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${need[@]}"
fi
