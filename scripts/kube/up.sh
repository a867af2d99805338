#!/usr/bin/env bash
# make kube-up: etcd + kube-apiserver on 127.0.0.1, kubeconfig at .kube/config (git-ignored).
#
# Builds the binaries once (scripts/kube/build.sh, cached outside the tree), then starts both servers
# as background processes with their state under .kube/run/. Idempotent: a running pair is left alone;
# a half-started one (e.g. etcd up, apiserver dead) is completed. Tephra's CRDs are installed last.
set -euo pipefail

# The daemons started below outlive this script: close every inherited descriptor above stderr first,
# so they never keep a caller's pipe or lock open (e.g. the kube tests' lock file under flock(1)).
for fd in $(ls /proc/$$/fd); do
    if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KUBE_DIR="${TEPHRA_KUBE_DIR:-$ROOT/.kube}"
RUN="$KUBE_DIR/run"
ETCD_PORT="${TEPHRA_ETCD_PORT:-23790}"
ETCD_PEER_PORT="${TEPHRA_ETCD_PEER_PORT:-23800}"
API_PORT="${TEPHRA_APISERVER_PORT:-6443}"
SERVICE_CIDR="${TEPHRA_SERVICE_CIDR:-10.96.0.0/16}"
log() { echo "[kube-up] $*" >&2; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# kube-up needs only the apiserver; bench-kube builds kube-scheduler too.
BIN="$(KUBE_WHAT="${KUBE_WHAT:-cmd/kube-apiserver}" "$ROOT/scripts/kube/build.sh")"
mkdir -p "$RUN" "$RUN/etcd"
chmod 700 "$KUBE_DIR"

# Credentials: a throwaway CA and serving cert for 127.0.0.1, a service-account key pair, one token.
if [ ! -f "$RUN/apiserver.crt" ]; then
    log "generating certificates and keys in $RUN"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=tephra-kube-ca" \
        -keyout "$RUN/ca.key" -out "$RUN/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$RUN/apiserver.key" -out "$RUN/apiserver.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\n' > "$RUN/san.ext"
    openssl x509 -req -in "$RUN/apiserver.csr" -CA "$RUN/ca.crt" -CAkey "$RUN/ca.key" -CAcreateserial \
        -days 3650 -extfile "$RUN/san.ext" -out "$RUN/apiserver.crt" 2>/dev/null
    openssl genrsa -out "$RUN/sa.key" 2048 2>/dev/null
    openssl rsa -in "$RUN/sa.key" -pubout -out "$RUN/sa.pub" 2>/dev/null
fi
if [ ! -f "$RUN/tokens.csv" ]; then
    TOKEN="$(openssl rand -hex 24)"
    echo "$TOKEN,tephra-admin,tephra-admin,\"system:masters\"" > "$RUN/tokens.csv"
    chmod 600 "$RUN/tokens.csv"
fi
TOKEN="$(cut -d, -f1 "$RUN/tokens.csv")"

if ! alive "$RUN/etcd.pid"; then
    log "starting etcd on 127.0.0.1:$ETCD_PORT"
    setsid etcd --name tephra --data-dir "$RUN/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "tephra=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "" \
        >"$RUN/etcd.log" 2>&1 < /dev/null &
    echo $! > "$RUN/etcd.pid"
    for _ in $(seq 100); do
        curl -fs "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break
        sleep 0.1
    done
    curl -fs "http://127.0.0.1:$ETCD_PORT/health" >/dev/null || { tail -20 "$RUN/etcd.log" >&2; exit 1; }
fi

if ! alive "$RUN/apiserver.pid"; then
    log "starting kube-apiserver on https://127.0.0.1:$API_PORT"
    # ServiceAccount admission is off: there is no controller-manager to create the token secrets it waits for.
    # No endpoint reconciler: it refuses a loopback address for the `kubernetes` service and logs every 10 s.
    setsid "$BIN/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" --insecure-port 0 \
        --tls-cert-file "$RUN/apiserver.crt" --tls-private-key-file "$RUN/apiserver.key" --cert-dir "$RUN/certs" \
        --token-auth-file "$RUN/tokens.csv" --authorization-mode RBAC \
        --service-account-key-file "$RUN/sa.pub" --service-account-signing-key-file "$RUN/sa.key" \
        --service-account-issuer https://kubernetes.default.svc \
        --service-cluster-ip-range "$SERVICE_CIDR" \
        --disable-admission-plugins ServiceAccount \
        --endpoint-reconciler-type none \
        --allow-privileged=true --watch-cache=true \
        >"$RUN/apiserver.log" 2>&1 < /dev/null &
    echo $! > "$RUN/apiserver.pid"
fi

cat > "$KUBE_DIR/config.tmp" <<CFG
apiVersion: v1
kind: Config
clusters:
- name: tephra
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $RUN/ca.crt
users:
- name: tephra-admin
  user:
    token: $TOKEN
contexts:
- name: tephra
  context: {cluster: tephra, user: tephra-admin}
current-context: tephra
CFG
chmod 600 "$KUBE_DIR/config.tmp"
mv "$KUBE_DIR/config.tmp" "$KUBE_DIR/config"

for _ in $(seq 240); do
    if curl -fs --cacert "$RUN/ca.crt" -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1; then
        break
    fi
    alive "$RUN/apiserver.pid" || { log "kube-apiserver exited:"; tail -30 "$RUN/apiserver.log" >&2; exit 1; }
    sleep 0.25
done
curl -fs --cacert "$RUN/ca.crt" -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$API_PORT/readyz" >/dev/null \
    || { log "kube-apiserver not ready:"; tail -30 "$RUN/apiserver.log" >&2; exit 1; }

"$ROOT/.venv/bin/python" -m vc_kube.crds --kubeconfig "$KUBE_DIR/config" --dir "$ROOT/deploy/k8s/crds"
log "ready"
echo "$KUBE_DIR/config"
