#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, for `make e2e`: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, a kubelet on Debian's containerd and runc, kube-proxy in iptables mode,
# and a CNI bridge of its own. No Docker, no kind, no image registry: images come from OCI archives.
#
#   hack/e2e/cluster.sh up IMAGE-ARCHIVE...   start it (each archive line: `<reference> <file>`, the first the pause
#                                             image) and wait until the node is Ready
#   hack/e2e/cluster.sh down                  stop everything and restore the host (exit 1 if anything is left)
#
# Every file lives under $STATE (.e2e/ in the checkout). The host changes it makes are recorded there at `up`
# and undone by `down`: processes, mounts, the bridge, iptables chains, sysctls, cgroup directories, and the few
# paths containerd and the kubelet always use (/run/containerd, /var/lib/kubelet/device-plugins, ...).
#
# Host differences are detected: without CAP_SYS_RESOURCE containerd clamps oom_score_adj
# (restrict_oom_score_adj) and kube-proxy keeps its own; on cgroup v1 the kubelet is told failCgroupV1: false; the
# cgroup driver is systemd only where systemd runs a unified hierarchy.
set -euo pipefail
# shellcheck source=hack/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

BRIDGE=omesel0
ETCD_PORT=12379
ETCD_PEER_PORT=12380
API_PORT=6443
KUBELET_PORT=10250
CHAIN_PREFIXES='KUBE-|CNI-|OME-E2E-'
# Host paths containerd, runc, CNI and the kubelet use whatever they are told; removed at `down` when `up` made them.
HOST_PATHS=(/run/containerd /run/runc /var/lib/cni /var/lib/kubelet /var/log/containers /var/log/pods
  /etc/cni /opt/cni /run/kubernetes)
# Sysctls the CNI bridge, kubelet and kube-proxy may set; their values are restored at `down`.
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  net.ipv4.conf.all.route_localnet vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.netfilter.nf_conntrack_max
  net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait)

RUN="$STATE/run"
LOGS="$STATE/logs"
PKI="$STATE/pki"
HOSTREC="$STATE/host"
SOCK="$RUN/containerd.sock"

# --- network choices --------------------------------------------------------------------------------------------

node_ip() {
  local dev ip
  dev=$(ip -4 route show default | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
  [[ -n $dev ]] && ip=$(ip -4 -o addr show dev "$dev" scope global | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
  [[ -n ${ip:-} ]] || ip=$(ip -4 -o addr show scope global | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
  [[ -n ${ip:-} ]] || unsupported "this host has no global IPv4 address for the node"
  echo "$ip"
}

# Two small /24s (pods, Services) that overlap no route or address on the host: `POD_CIDR SERVICE_CIDR`.
pick_cidrs() {
  if [[ -n ${E2E_POD_CIDR:-} && -n ${E2E_SERVICE_CIDR:-} ]]; then echo "$E2E_POD_CIDR $E2E_SERVICE_CIDR"; return; fi
  { ip -4 route show table all; ip -4 -o addr show; } | python3 -c '
import ipaddress, re, sys
used = [ipaddress.ip_network(m, strict=False) for m in re.findall(r"\b\d+\.\d+\.\d+\.\d+(?:/\d+)?\b", sys.stdin.read())]
used = [n for n in used if n.prefixlen > 0]
free = lambda net: not any(net.overlaps(u) for u in used)
for third in range(0, 256, 2):
    pods, services = (ipaddress.ip_network(f"10.213.{third + i}.0/24") for i in (0, 1))
    if free(pods) and free(services):
        print(pods, services)
        break
else:
    sys.exit("no free pair of /24s in 10.213.0.0/16")
'
}

port_free() { [[ -z $(ss -Hltn "sport = :$1") ]]; }

# --- host records -----------------------------------------------------------------------------------------------

record_host() {
  mkdir -p "$HOSTREC"
  local k p
  for k in "${SYSCTLS[@]}"; do
    [[ -e /proc/sys/${k//.//} ]] && echo "$k $(sysctl -n "$k")"
  done >"$HOSTREC/sysctl"
  for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] || echo "$p"; done >"$HOSTREC/created-paths"
  cgroup_dirs >"$HOSTREC/cgroups"
  iptables_rules >"$HOSTREC/iptables"
  iptables_tables >"$HOSTREC/iptables-tables"
}

cgroup_dirs() { find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d 2>/dev/null | sort; }
iptables_rules() {
  { iptables-save; ip6tables-save; } 2>/dev/null | sed -e '/^#/d' -e 's/\[[0-9]*:[0-9]*\]/[0:0]/'
  ! command -v nft >/dev/null || nft list tables
}
# `family table` for every iptables table that exists (with nf_tables, a table outlives its chains).
iptables_tables() {
  iptables-save 2>/dev/null | sed -n 's/^\*/ip /p'
  ip6tables-save 2>/dev/null | sed -n 's/^\*/ip6 /p'
}

# --- PKI and kubeconfigs ----------------------------------------------------------------------------------------

issue() { # issue NAME SUBJECT EXTENSIONS: a key and a certificate signed by the cluster CA
  local name="$1" subject="$2" ext="$3"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subject" -out "$PKI/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 7 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

write_pki() {
  mkdir -p "$PKI"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$PKI/ca.key" -subj /CN=ome-selector-e2e-ca -days 7 -sha256 -out "$PKI/ca.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature 2>/dev/null
  local client='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth'
  issue apiserver /CN=kube-apiserver "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$NODE_IP,IP:$API_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue admin /O=system:masters/CN=ome-selector-e2e-admin "$client"
  issue apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client "$client"
  issue kube-controller-manager /CN=system:kube-controller-manager "$client"
  issue kube-scheduler /CN=system:kube-scheduler "$client"
  issue kube-proxy /CN=system:kube-proxy "$client"
  issue kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  local who
  for who in admin kube-controller-manager kube-scheduler kube-proxy kubelet; do
    cat >"$STATE/$who.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ome-selector-e2e
  cluster: {server: "https://$NODE_IP:$API_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $who
  user: {client-certificate: "$PKI/$who.crt", client-key: "$PKI/$who.key"}
contexts:
- name: ome-selector-e2e
  context: {cluster: ome-selector-e2e, user: $who}
current-context: ome-selector-e2e
EOF
  done
  mv "$STATE/admin.kubeconfig" "$STATE/kubeconfig"
}

# --- processes --------------------------------------------------------------------------------------------------

start() { # start NAME COMMAND...: in its own session (a Ctrl-C of `make` leaves it to `down`), logged
  local name="$1"; shift
  # Without fd 9, run.sh's host lock: a cluster left up must not keep the next `make e2e` (or e2e-down) waiting.
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$RUN/$name.pid"
}

wait_for() { # wait_for WHAT SECONDS COMMAND...: poll until COMMAND succeeds
  local what="$1" seconds="$2" deadline; shift 2
  deadline=$(($(date +%s) + seconds))
  until "$@" >/dev/null 2>&1; do
    (($(date +%s) < deadline)) || die "$what was not ready after ${seconds}s; logs in $LOGS"
    sleep 0.5
  done
}

kubectl_() { "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" "$@"; }

write_configs() {
  mkdir -p "$STATE/containerd/etc" "$STATE/cni/net.d" "$STATE/kubelet"
  local restrict=false
  has_sys_resource || restrict=true
  local systemd_cgroup=false driver=cgroupfs layout
  layout=$(cgroup_layout)
  if [[ $layout == v2 && -d /run/systemd/system ]]; then systemd_cgroup=true driver=systemd; fi

  cat >"$STATE/containerd/etc/config.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_REF"
  # No CAP_SYS_RESOURCE: the sandbox's oom_score_adj cannot go below containerd's own.
  restrict_oom_score_adj = $restrict
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = $systemd_cgroup
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF

  # Pods get routes to the Services and the node only, and no masquerading: they talk to each other, the node
  # and Services, nothing else (OME-E2E-FORWARD drops anything forwarded elsewhere all the same).
  cat >"$STATE/cni/net.d/10-ome-selector-e2e.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "ome-selector-e2e", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "dataDir": "$STATE/cni/ipam",
            "routes": [{"dst": "$SERVICE_CIDR"}, {"dst": "$NODE_IP/32"}]}}
]}
EOF

  local cgroup_v1=""
  [[ $layout == v2 ]] || cgroup_v1="failCgroupV1: false  # cgroup v1 host (deprecated upstream, still supported)"
  cat >"$STATE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: "$NODE_IP"
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
cgroupDriver: $driver
$cgroup_v1
failSwapOn: false
containerRuntimeEndpoint: "unix://$SOCK"
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: "$STATE/kubelet/pod-logs"
evictionHard: {memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
protectKernelDefaults: false
EOF

  local oom=""
  has_sys_resource || oom="oomScoreAdj: 0  # no CAP_SYS_RESOURCE to lower it"
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$STATE/kube-proxy.kubeconfig"}
hostnameOverride: "$NODE_NAME"
mode: iptables
clusterCIDR: "$POD_CIDR"
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
$oom
EOF
}

egress_guard() {
  iptables -N OME-E2E-FORWARD
  iptables -A OME-E2E-FORWARD -d "$POD_CIDR" -j RETURN
  iptables -A OME-E2E-FORWARD -j DROP
  iptables -I FORWARD 1 -s "$POD_CIDR" -j OME-E2E-FORWARD
}

import_images() {
  local ref file images
  while read -r ref file; do
    [[ -n $ref ]] || continue
    ctr -a "$SOCK" -n k8s.io images import "$file" >/dev/null
    images=$(ctr -a "$SOCK" -n k8s.io images ls -q)
    grep -qxF "$ref" <<<"$images" || die "importing $file did not give image $ref"
  done <"$STATE/images"
}

log_tails() {
  local f
  for f in "$LOGS"/*.log; do
    [[ -s $f ]] || continue
    printf -- '--- last lines of %s\n' "$f" >&2
    tail -n 15 "$f" >&2
  done
}

# The caller tears down (`down`) when this fails.
up() {
  (($# >= 2)) || die "usage: $0 up PAUSE-ARCHIVE-LINE IMAGE-ARCHIVE-LINE..."
  require_host
  ensure_packages "${E2E_PACKAGES[@]}" containernetworking-plugins iptables nftables
  [[ ! -e $STATE/run ]] || die "a cluster is already up in $STATE (make e2e-down first)"
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || die "bridge $BRIDGE exists: another make e2e cluster runs on this host"
  # (never `producer | grep -q` under pipefail: grep's early exit can fail the producer with SIGPIPE)
  local rules; rules=$(iptables-save 2>/dev/null)
  ! grep -qE "^:($CHAIN_PREFIXES)" <<<"$rules" \
    || unsupported "iptables already has KUBE-/CNI- chains: another Kubernetes node runs on this host"

  CP_BIN=$("$REPO/hack/ensure-binaries.sh")
  NODE_BIN=$("$REPO/hack/ensure-binaries.sh" node)
  BIN="$STATE/bin"

  NODE_IP=$(node_ip)
  NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]')
  read -r POD_CIDR SERVICE_CIDR < <(pick_cidrs)
  [[ -n $SERVICE_CIDR ]] || die "no free pod and Service CIDRs"
  API_SERVICE_IP=$(python3 -c "import ipaddress, sys; print(ipaddress.ip_network(sys.argv[1])[1])" "$SERVICE_CIDR")
  local p
  for p in "127.0.0.1:$ETCD_PORT" "127.0.0.1:$ETCD_PEER_PORT" "$NODE_IP:$API_PORT" "$NODE_IP:$KUBELET_PORT" \
    127.0.0.1:10248 127.0.0.1:10249 127.0.0.1:10256; do
    port_free "${p##*:}" || die "port ${p##*:} is in use (needed for $p)"
  done

  local began; began=$(date +%s.%N)
  mkdir -p "$RUN" "$LOGS" "$BIN"
  printf '%s\n' "$@" >"$STATE/images"
  PAUSE_REF=${1%% *}
  # One PATH for users of `make e2e-up`: kubectl, helm, crictl and the node's binaries.
  ln -sf "$CP_BIN"/{kube-apiserver,etcd,kubectl,helm} "$NODE_BIN"/* "$BIN/"
  cat >"$STATE/env" <<EOF
NODE_IP=$NODE_IP
NODE_NAME=$NODE_NAME
POD_CIDR=$POD_CIDR
SERVICE_CIDR=$SERVICE_CIDR
EOF
  record_host
  trap 'status=$?; ((status == 0)) || log_tails' EXIT

  write_pki
  write_configs
  egress_guard
  sysctl -qw net.ipv4.ip_forward=1
  [[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] || sysctl -qw net.bridge.bridge-nf-call-iptables=1

  start containerd containerd --config "$STATE/containerd/etc/config.toml"
  start etcd "$BIN/etcd" --name=ome-selector-e2e --data-dir="$STATE/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="ome-selector-e2e=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync=true --log-level=warn
  wait_for containerd 30 ctr -a "$SOCK" version
  import_images
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port="$API_PORT" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --authorization-mode=Node,RBAC --allow-privileged=true --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$PKI/sa.pub" \
    --service-account-signing-key-file="$PKI/sa.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP
  wait_for kube-apiserver 90 kubectl_ get --raw /readyz

  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$STATE/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --service-cluster-ip-range="$SERVICE_CIDR"
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$STATE/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false
  start kubelet "$BIN/kubelet" --config="$STATE/kubelet/config.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" --cert-dir="$STATE/kubelet/pki" --node-ip="$NODE_IP" --hostname-override="$NODE_NAME"
  start kube-proxy "$BIN/kube-proxy" --config="$STATE/kube-proxy.yaml"

  wait_for "node $NODE_NAME" 120 kubectl_ wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s
  wait_for "kube-proxy" 60 curl -fsS http://127.0.0.1:10256/healthz
  wait_for "the default ServiceAccount" 60 kubectl_ -n default get serviceaccount default
  trap - EXIT
  log "cluster up in $(since "$began")s: node $NODE_NAME ($NODE_IP), pods $POD_CIDR, Services $SERVICE_CIDR"
}

# --- teardown ---------------------------------------------------------------------------------------------------

stop() { # stop NAME...: SIGTERM to each (if its pid is still the process we started), SIGKILL after 20 s
  local name pid pids=() tries=40
  for name in "$@"; do
    [[ -f $RUN/$name.pid ]] || continue
    pid=$(<"$RUN/$name.pid")
    rm -f "$RUN/$name.pid"
    if [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == *"$name"* ]]; then
      kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    fi
  done
  while ((tries-- > 0)); do
    local alive=()
    for pid in "${pids[@]}"; do [[ ! -e /proc/$pid ]] || alive+=("$pid"); done
    ((${#alive[@]})) || return 0
    pids=("${alive[@]}")
    sleep 0.5
  done
  log "killing what ignored SIGTERM: $*"
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

# Processes whose command line names this cluster's state directory (containerd shims, stray components).
own_processes() {
  local d
  for d in /proc/[0-9]*; do
    [[ ${d#/proc/} != "$$" && $(tr '\0' ' ' 2>/dev/null <"$d/cmdline") == *"$STATE/"* ]] && echo "${d#/proc/}"
  done
  return 0
}

# Processes still in the pods' cgroups (a container whose shim is gone).
pod_processes() {
  find /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u
  return 0
}

own_mounts() {
  local p prefixes=("$STATE/") created
  created=$(cat "$HOSTREC/created-paths" 2>/dev/null || true)
  for p in $created; do prefixes+=("$p/"); done
  awk '{ print $2 }' /proc/mounts | while read -r m; do
    for p in "${prefixes[@]}"; do [[ $m/ == "$p"* ]] && { echo "$m"; break; }; done
  done | sort -r
}

remove_chains() {
  local cmd table chain
  for cmd in iptables ip6tables; do
    command -v "$cmd-save" >/dev/null || continue
    for table in filter nat mangle raw; do
      # Jumps from the built-in chains first, then flush and delete ours.
      "$cmd-save" -t "$table" 2>/dev/null | grep -E "^-A [A-Z]+ .*-j ($CHAIN_PREFIXES)" | grep -vE "^-A ($CHAIN_PREFIXES)" \
        | while read -r rule; do eval "$cmd -t $table -D ${rule#-A }" 2>/dev/null || true; done
      for chain in $("$cmd-save" -t "$table" 2>/dev/null | sed -nE "s/^:(($CHAIN_PREFIXES)[^ ]*) .*/\1/p"); do
        "$cmd" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$cmd-save" -t "$table" 2>/dev/null | sed -nE "s/^:(($CHAIN_PREFIXES)[^ ]*) .*/\1/p"); do
        "$cmd" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
  # With the nf_tables backend, the tables themselves stay after their chains are gone: remove those this run
  # created, once they hold nothing of anyone else's (no rule, no chain of their own, ACCEPT policies).
  [[ -f $HOSTREC/iptables-tables && $(iptables -V) == *nf_tables* ]] && command -v nft >/dev/null || return 0
  local family rules
  while read -r family table; do
    cmd=iptables; [[ $family == ip ]] || cmd=ip6tables
    rules=$("$cmd-save" -t "$table" 2>/dev/null)
    ! grep -qvE '^(#|\*|COMMIT$|:[A-Z]+ ACCEPT )' <<<"$rules" || continue
    nft delete table "$family" "$table" 2>/dev/null || true
  done < <(comm -13 <(sort "$HOSTREC/iptables-tables") <(iptables_tables | sort))
}

down() {
  # Teardown goes on through every step whatever fails, and a Ctrl-C does not cut it short; what it could not
  # undo is reported at the end.
  set +e
  trap '' INT TERM
  if [[ ! -d $STATE ]]; then log "nothing to tear down ($STATE does not exist)"; return 0; fi
  local began; began=$(date +%s.%N)
  BIN="$STATE/bin"
  # The kubelet first (it would restart what is stopped), then every pod through the CRI so that CNI releases
  # its addresses and rules, then the rest.
  stop kubelet
  if [[ -S $SOCK && -x $BIN/crictl ]]; then
    timeout 60 "$BIN/crictl" -r "unix://$SOCK" rmp -fa >/dev/null 2>&1 || log "crictl rmp -fa failed; killing pods directly"
  fi
  stop kube-proxy kube-scheduler kube-controller-manager kube-apiserver
  stop etcd containerd
  local pids
  pids=$( { own_processes; pod_processes; } | sort -u)
  # shellcheck disable=SC2086 # one pid a word
  [[ -z $pids ]] || { kill -KILL $pids 2>/dev/null || true; sleep 1; }
  [[ ! -x $BIN/kube-proxy ]] || "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  remove_chains
  ip link del "$BRIDGE" 2>/dev/null || true

  local m
  for m in $(own_mounts); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done

  # cgroup directories that appeared since `up` (rmdir only removes empty ones).
  if [[ -f $HOSTREC/cgroups ]]; then
    local d
    for d in $(comm -13 "$HOSTREC/cgroups" <(cgroup_dirs)); do
      find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
  fi
  local k v
  if [[ -f $HOSTREC/sysctl ]]; then
    while read -r k v; do
      [[ $(sysctl -n "$k" 2>/dev/null) == "$v" ]] || sysctl -qw "$k=$v" 2>/dev/null || log "could not restore $k=$v"
    done <"$HOSTREC/sysctl"
  fi
  local leftovers
  leftovers=$(leftovers)
  if [[ -f $HOSTREC/created-paths ]]; then
    while read -r m; do rm -rf "$m"; done <"$HOSTREC/created-paths"
  fi
  # `down` may run from the state directory's own scripts' trap: keep the results of the suite if asked.
  rm -rf "$STATE"
  if [[ -n $leftovers ]]; then
    log "teardown left these behind:"
    printf '  %s\n' "$leftovers" >&2
    return 1
  fi
  log "torn down in $(since "$began")s; the host is as before"
}

# What `down` could not undo, one item a line (empty when the host is as before).
leftovers() {
  local pids m
  pids=$( { own_processes; pod_processes; } | sort -u | tr '\n' ' ')
  [[ -z ${pids// /} ]] || echo "processes: $pids"
  m=$(own_mounts | tr '\n' ' ')
  [[ -z ${m// /} ]] || echo "mounts: $m"
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || echo "bridge $BRIDGE"
  if [[ -f $HOSTREC/iptables ]]; then
    local diff
    diff=$(diff <(cat "$HOSTREC/iptables") <(iptables_rules) | grep '^[<>]' | tr '\n' ';' || true)
    [[ -z $diff ]] || echo "iptables differ: $diff"
  fi
  if [[ -f $HOSTREC/cgroups ]]; then
    local new; new=$(comm -13 "$HOSTREC/cgroups" <(cgroup_dirs) | tr '\n' ' ')
    [[ -z ${new// /} ]] || echo "cgroup directories: $new"
  fi
  local k v
  if [[ -f $HOSTREC/sysctl ]]; then
    while read -r k v; do
      [[ $(sysctl -n "$k" 2>/dev/null) == "$v" ]] || echo "sysctl $k is $(sysctl -n "$k"), was $v"
    done <"$HOSTREC/sysctl"
  fi
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  *) die "usage: $0 up ARCHIVE-LINE... | down" ;;
esac
