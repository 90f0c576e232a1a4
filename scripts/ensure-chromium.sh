#!/usr/bin/env bash
# The browser test drives Debian's Chromium. Install it from Debian's packages when it is missing
# (needs root, as on the project's machines and CI); elsewhere say what to do.
set -euo pipefail
if [ -x /usr/bin/chromium ] || [ -n "${CHROMIUM_PATH:-}" ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing Chromium from Debian's packages for the browser test ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "the browser test needs Chromium: 'sudo apt-get install chromium' (or set CHROMIUM_PATH)" >&2
  exit 1
fi
