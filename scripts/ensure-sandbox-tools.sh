#!/usr/bin/env bash
# The sandbox tests run agents inside Debian's bubblewrap, with socat bridging the egress proxy into the
# sandbox's network namespace (docs/architecture.md, "Sandboxes"). Install them from Debian's packages
# when missing (needs root, as on the project's machines and CI); elsewhere say what to do.
# `--optional` (npm run bench): the same, but a machine where they cannot be installed is no failure: the
# bench then runs without its sandbox step and says so (bench/sandbox.ts).
set -euo pipefail
optional=0
if [ "${1:-}" = "--optional" ]; then optional=1; fi
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v socat >/dev/null || missing+=(socat)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]} from Debian's packages for the sandbox tests ..." >&2
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; then exit 0; fi
  echo "could not install ${missing[*]} from Debian's packages" >&2
  [ "$optional" = 1 ] && exit 0
  exit 1
fi
if [ "$optional" = 1 ]; then
  echo "no ${missing[*]} ('sudo apt-get install ${missing[*]}'): the bench will skip its sandbox step" >&2
  exit 0
fi
echo "the sandbox tests need ${missing[*]}: 'sudo apt-get install ${missing[*]}'" >&2
exit 1
