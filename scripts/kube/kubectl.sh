#!/usr/bin/env bash
# kubectl 1.20 from Debian's kubernetes-client package, matching the kube-apiserver build.sh makes.
#
# Why not `apt-get install kubernetes-client`: its /usr/bin/kubectl collides with any other kubectl a
# machine already has (e.g. a cloud SDK's 1.3x, outside the apiserver's +-1 version skew), and dpkg
# refuses the overwrite. So the .deb is fetched with apt (`apt-get download`) and only its binary is
# unpacked into the same cache as the apiserver, keyed by the package version. Idempotent.
#
# Output: the path of that kubectl, alone on stdout (apt prints to stdout: everything else goes to stderr).
set -euo pipefail

CACHE="${TEPHRA_KUBE_CACHE:-$HOME/.cache/tephra/kube}"
PACKAGE=kubernetes-client
log() { echo "[kubectl] $*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

candidate() {
    apt-cache policy "$PACKAGE" 2>/dev/null | awk '/Candidate:/ {print $2; exit}'
}

main() {
    exec 3>&1 1>&2
    local version
    version="$(candidate || true)"
    if [ -z "$version" ] || [ "$version" = "(none)" ]; then
        log "apt-get update (apt knows no $PACKAGE yet)"
        as_root apt-get update -qq
        version="$(candidate)"
    fi
    [ -n "$version" ] && [ "$version" != "(none)" ] || { log "no $PACKAGE package known to apt"; exit 1; }
    local dir="$CACHE/client-$version"
    if [ -x "$dir/kubectl" ]; then
        echo "$dir/kubectl" >&3
        return 0
    fi
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
    chmod 755 "$WORK" && mkdir -m 777 "$WORK/deb"  # apt downloads as its sandbox user _apt
    log "fetching $PACKAGE $version"
    (cd "$WORK/deb" && apt-get download -qq "$PACKAGE=$version") || {
        log "apt-get update, then retrying the download"
        as_root apt-get update -qq
        (cd "$WORK/deb" && apt-get download -qq "$PACKAGE=$version")
    }
    dpkg-deb -x "$WORK"/deb/"$PACKAGE"_*.deb "$WORK/root"
    mkdir -p "$dir"
    cp "$WORK/root/usr/bin/kubectl" "$dir/kubectl.tmp" && mv "$dir/kubectl.tmp" "$dir/kubectl"
    log "$("$dir/kubectl" version --client --short 2>/dev/null || true) in $dir"
    echo "$dir/kubectl" >&3
}

main "$@"
