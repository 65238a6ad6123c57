#!/usr/bin/env bash
# Installs Debian's chromium (apt), the browser the inspector's tests drive
# through playwright-core (test/harness/browser.ts); playwright never downloads
# one. Idempotent: does nothing when the browser is there. Fails loudly when it
# cannot install it (needs root or sudo): the browser tests never skip.
#   AGENTD_CHROMIUM=/path/to/chromium  use another Chromium binary instead.
set -euo pipefail
browser="${AGENTD_CHROMIUM:-/usr/bin/chromium}"
if [[ -x "$browser" ]]; then exit 0; fi
if [[ -n "${AGENTD_CHROMIUM:-}" ]]; then
  echo "install-chromium: AGENTD_CHROMIUM=$AGENTD_CHROMIUM is not an executable file" >&2
  exit 1
fi
if [[ "$(id -u)" == "0" ]]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "install-chromium: /usr/bin/chromium is missing and this user cannot install it (not root, no passwordless sudo)." >&2
  echo "  Install it as root: apt-get install -y chromium   (or point AGENTD_CHROMIUM at a Chromium binary)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install-chromium: /usr/bin/chromium is missing and apt-get is not available: install Chromium and set AGENTD_CHROMIUM" >&2
  exit 1
fi
echo "installing chromium (apt) for the inspector's browser tests" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium
if [[ ! -x /usr/bin/chromium ]]; then
  echo "install-chromium: apt-get installed chromium but /usr/bin/chromium is still missing" >&2
  exit 1
fi
