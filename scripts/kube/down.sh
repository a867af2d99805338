#!/usr/bin/env bash
# make kube-down: stop the kube-apiserver and etcd that `make kube-up` started (by their pid files).
# State (.kube/run/etcd) is kept, so the next kube-up resumes with the same objects; KUBE_WIPE=1 drops it.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KUBE_DIR="${TEPHRA_KUBE_DIR:-$ROOT/.kube}"
RUN="$KUBE_DIR/run"

stop() {
    local pidfile="$RUN/$1.pid"
    [ -f "$pidfile" ] || return 0
    local pid
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
        echo "[kube-down] stopping $1 ($pid)" >&2
        kill "$pid"
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
}

stop apiserver
stop etcd
if [ "${KUBE_WIPE:-0}" = 1 ]; then
    rm -rf "$RUN/etcd" "$KUBE_DIR/config"
fi
