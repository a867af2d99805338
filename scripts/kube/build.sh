#!/usr/bin/env bash
# Build kube-apiserver and kube-scheduler from Debian's own kubernetes source package.
#
# Why this way: these machines have no Docker engine and no network path to dl.k8s.io, but the
# Debian mirror carries the source (1.20.x with vendored Go modules) and a Go toolchain.
# The result is cached OUTSIDE the work tree, keyed by the source version, so later runs are a
# no-op. Idempotent and resumable: each step checks whether its output already exists.
#
# Output: $TEPHRA_KUBE_CACHE/<version>/bin/{kube-apiserver,kube-scheduler}; prints that bin dir.
set -euo pipefail

CACHE="${TEPHRA_KUBE_CACHE:-$HOME/.cache/tephra/kube}"
WHAT="${KUBE_WHAT:-cmd/kube-apiserver cmd/kube-scheduler}"
log() { echo "[kube-build] $*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. deb-src entry mirroring the machine's existing Debian source list (deb822 format).
ensure_deb_src() {
    local f=/etc/apt/sources.list.d/tephra-deb-src.sources
    if [ -f "$f" ] || grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ || grep -qs '^deb-src' /etc/apt/sources.list; then
        return 0
    fi
    log "adding deb-src entry ($f)"
    # Copy every stanza of debian.sources with Types: deb-src, so the suite/mirror stays the same.
    as_root sh -c "sed 's/^Types: deb\$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > '$f'"
    APT_UPDATED=0
}

APT_UPDATED=1
ensure_packages() {
    local pkgs=(golang-go rsync jq etcd-server golang-github-modern-go-reflect2-dev dpkg-dev)
    local missing=()
    for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if [ "${#missing[@]}" -gt 0 ] || [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        as_root apt-get update -qq
        APT_UPDATED=1
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing ${missing[*]}"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
}

# A line every 30 s while a build runs (pid $1, target $2, its log $3): a first build takes many
# minutes, and a silent one looks hung.
heartbeat() {
    local pid=$1 what=$2 log_file=$3 t0=$SECONDS next=30
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if [ $((SECONDS - t0)) -ge "$next" ]; then
            log "still building $what: $((SECONDS - t0))s so far ($(wc -l <"$log_file") lines in $log_file)"
            next=$((next + 30))
        fi
    done
}

src_version() {
    apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/ {print $2; exit}'
}

main() {
    # Everything but the final path goes to stderr: callers take stdout as the bin dir, and apt,
    # dpkg and make print to stdout (a fresh machine once got ".../kube-apiserver: File name too long").
    exec 3>&1 1>&2
    ensure_deb_src
    # Fast path: if a cached build exists for some version, and apt knows that version, done.
    local version
    version="$(src_version || true)"
    if [ -z "$version" ]; then
        ensure_packages
        version="$(src_version)"
    fi
    [ -n "$version" ] || { log "no kubernetes source package known to apt"; exit 1; }
    local dir="$CACHE/$version"
    local bin="$dir/bin"
    local all=1
    for w in $WHAT; do [ -x "$bin/$(basename "$w")" ] || all=0; done
    if [ "$all" = 1 ]; then
        log "cached: $bin"
        echo "$bin" >&3
        return 0
    fi
    ensure_packages
    mkdir -p "$dir/src" "$bin"
    cd "$dir/src"
    local tree
    tree="$(find . -maxdepth 1 -type d -name 'kubernetes-*' | head -1)"
    if [ -z "$tree" ] || [ ! -f "$tree/.tephra-unpacked" ]; then
        log "apt-get source kubernetes ($version) into $dir/src"
        rm -rf ./kubernetes-* ./kubernetes_*
        apt-get source -qq kubernetes >/dev/null
        tree="$(find . -maxdepth 1 -type d -name 'kubernetes-*' | head -1)"
        touch "$tree/.tephra-unpacked"
    fi
    cd "$tree"
    # 2. The vendored reflect2 1.0.1 panics (nil map type in json-iterator) under Go >= 1.18;
    #    Debian's 1.0.2 is API-compatible. go.mod of the copy is dropped: vendor/ has none.
    local r2=vendor/github.com/modern-go/reflect2
    if [ ! -f "$r2/.tephra-swapped" ]; then
        log "swapping vendored reflect2 for Debian's 1.0.2"
        rm -rf "$r2"
        mkdir -p "$r2"
        cp -r /usr/share/gocode/src/github.com/modern-go/reflect2/. "$r2/"
        rm -f "$r2/go.mod" "$r2/go.sum"
        touch "$r2/.tephra-swapped"
    fi
    # 3. Build one target at a time (2 shared cores), copying each into the cache as it lands.
    for w in $WHAT; do
        local name
        name="$(basename "$w")"
        [ -x "$bin/$name" ] && continue
        log "building $w (several minutes)"
        local t0=$SECONDS
        CGO_ENABLED=0 GOFLAGS=-mod=vendor make WHAT="$w" >"$dir/build-$name.log" 2>&1 &
        heartbeat $! "$name" "$dir/build-$name.log"
        wait $! || { tail -30 "$dir/build-$name.log" >&2; exit 1; }
        local out
        out="$(find _output -type f -name "$name" -perm -u+x | head -1)"
        cp "$out" "$bin/$name.tmp" && mv "$bin/$name.tmp" "$bin/$name"
        log "built $name in $((SECONDS - t0))s"
    done
    echo "$bin" >&3
}

main "$@"
