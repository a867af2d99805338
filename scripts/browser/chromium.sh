#!/usr/bin/env bash
# Headless Chromium and its WebDriver from Debian's packages (`chromium`, `chromium-driver`), for the
# dashboard's browser test (tests/integration/test_dashboard_browser.py). No browser download: only apt.
# Installs what is missing, as root or through sudo; idempotent and quick once installed.
#
# Output: the browser's path and the driver's path, one per line, alone on stdout (apt prints to
# stdout: everything else goes to stderr). Exit 1, saying why on stderr, when they cannot be had.
set -euo pipefail

BROWSER=/usr/bin/chromium
DRIVER=/usr/bin/chromedriver
PACKAGES=(chromium chromium-driver)
log() { echo "[chromium] $*" >&2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else log "not root and no password-less sudo: cannot apt-get install ${PACKAGES[*]}"; return 1
    fi
}

known() {
    local candidate
    candidate="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')"
    [ -n "$candidate" ] && [ "$candidate" != "(none)" ]
}

main() {
    exec 3>&1 1>&2
    if [ -x "$BROWSER" ] && [ -x "$DRIVER" ]; then
        printf '%s\n%s\n' "$BROWSER" "$DRIVER" >&3
        return 0
    fi
    command -v apt-get >/dev/null || { log "no apt-get on this machine: install Chromium and chromedriver yourself"; exit 1; }
    if ! known chromium || ! known chromium-driver; then
        log "apt-get update (apt knows no chromium package yet)"
        as_root apt-get update -qq
    fi
    log "apt-get install ${PACKAGES[*]} (once; about 100 MB)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"
    [ -x "$BROWSER" ] && [ -x "$DRIVER" ] || { log "installed, but $BROWSER or $DRIVER is missing"; exit 1; }
    log "$("$BROWSER" --version 2>/dev/null || true)"
    printf '%s\n%s\n' "$BROWSER" "$DRIVER" >&3
}

main "$@"
