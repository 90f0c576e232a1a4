#!/usr/bin/env bash
# The sandbox tests run agents inside Debian's bubblewrap, with socat bridging the egress proxy into the
# sandbox's network namespace (docs/architecture.md, "Sandboxes"). Install them from Debian's packages
# when missing (needs root, as on the project's machines and CI); elsewhere say what to do.
set -euo pipefail
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v socat >/dev/null || missing+=(socat)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]} from Debian's packages for the sandbox tests ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "the sandbox tests need ${missing[*]}: 'sudo apt-get install ${missing[*]}'" >&2
  exit 1
fi
