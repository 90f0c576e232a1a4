#!/usr/bin/env bash
# The browser test drives Debian's Chromium. Install it from Debian's packages when it is missing
# (needs root, as on the project's machines and CI); elsewhere say what to do.
# `--optional` (npm run bench): the same, but a machine where it cannot be installed is no failure: the
# bench then runs without its browser steps and says so (bench/browser.ts).
set -euo pipefail
optional=0
if [ "${1:-}" = "--optional" ]; then optional=1; fi
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$chromium" ]; then exit 0; fi
if [ -n "${CHROMIUM_PATH:-}" ]; then
  echo "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable" >&2
  [ "$optional" = 1 ] && exit 0
  exit 1
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing Chromium from Debian's packages for the browser steps ..." >&2
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then exit 0; fi
  echo "could not install Chromium from Debian's packages" >&2
  [ "$optional" = 1 ] && exit 0
  exit 1
fi
if [ "$optional" = 1 ]; then
  echo "no Chromium ('sudo apt-get install chromium' or set CHROMIUM_PATH): the bench will skip its browser steps" >&2
  exit 0
fi
echo "the browser test needs Chromium: 'sudo apt-get install chromium' (or set CHROMIUM_PATH)" >&2
exit 1
