#!/usr/bin/env bash
# The end-to-end checks of an installed ome-selector, against any cluster that runs the image: `make e2e` calls
# it on its kind cluster (hack/e2e/kind.sh).
#
#   hack/e2e/suite.sh install    helm install, as a user would (`make e2e-up` stops here)
#   hack/e2e/suite.sh run        install, then every check below, then the documented uninstall; then the same
#                                chart beside OME: OME's own CRDs (tests/data/ome-crds) first, the chart on top
#   hack/e2e/suite.sh diagnose   the operator's logs, events and `kubectl get -A` (printed when a check fails)
#
# Environment: KUBECONFIG (required), IMAGE (`repository:tag`, present on the node), KUBECTL, HELM, PYTHON (a
# Python with this project installed), E2E_RESULTS (a file: one `pass|fail <check>` line per check is appended;
# the caller prints the summary). Output: `ok: <check>` or `FAIL: <check>` and what went wrong.
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=hack/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

: "${KUBECONFIG:?KUBECONFIG must name the cluster}"
export KUBECONFIG
IMAGE=${IMAGE:-ome-selector:dev}
KUBECTL=${KUBECTL:-kubectl}
HELM=${HELM:-helm}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
E2E_RESULTS=${E2E_RESULTS:-/dev/null}
RELEASE=ome-selector
NAMESPACE=ome-selector
SCENARIO_NAMESPACE=ome-selector-e2e
CRDS=(basemodels.ome.io clusterbasemodels.ome.io servingruntimes.ome.io clusterservingruntimes.ome.io
  inferenceservices.ome.io)

k() { "$KUBECTL" "$@"; }
note() { printf '> %s\n' "$*"; }

# Interrupted (Ctrl-C): stop after the current command; the caller tears down. The checks' scratch files go
# however the suite ends.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
trap 'echo "e2e: interrupted" >&2; exit 130' INT TERM

failed=0
# check DESCRIPTION COMMAND...: one check, run with errexit in a subshell (so never from `if` or `||`, where bash
# would ignore errexit inside it); its `> ` lines are shown, all of its output when it fails. Counts failures.
check() {
  local what="$1" began log rc; shift
  began=$(date +%s.%N)
  log=$(mktemp -p "$SCRATCH")
  set +e
  (set -e; "$@") >"$log" 2>&1
  rc=$?
  set -e
  if ((rc == 0)); then
    printf 'ok: %s (%ss)\n' "$what" "$(since "$began")"
    sed -n 's/^> /     /p' "$log"
    echo "pass $what" >>"$E2E_RESULTS"
  else
    printf 'FAIL: %s (%ss)\n' "$what" "$(since "$began")"
    sed 's/^/     /' "$log"
    echo "fail $what" >>"$E2E_RESULTS"
    failed=$((failed + 1))
  fi
  rm -f "$log"
}

# --- install ----------------------------------------------------------------------------------------------------

# The hook Jobs run only where their scheduling values let them: the node is tainted (the operator tolerates
# the taint too) and labelled, and the hooks get a PriorityClass, a node selector, an affinity and labels of
# their own. A hook pod that ignored them would stay Pending and `helm install`/`helm uninstall` would time out.
E2E_TAINT=ome-selector.ome.io/e2e
HOOK_NODE_LABEL=ome-selector.ome.io/e2e-hooks
HOOK_PRIORITY=ome-selector-e2e-hooks
TOLERATION="[{\"key\":\"$E2E_TAINT\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]"
image_args=(
  "$REPO/charts/ome-selector" --namespace "$NAMESPACE"
  --set image.registry= --set "image.repository=${IMAGE%:*}" --set "image.tag=${IMAGE##*:}"
  --set image.pullPolicy=Never
  --set-json "tolerations=$TOLERATION" --set-json "hooks.tolerations=$TOLERATION"
  --set-json "hooks.nodeSelector={\"$HOOK_NODE_LABEL\":\"true\"}"
  --set-json 'hooks.affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/os","operator":"In","values":["linux"]}]}]}}}'
  --set "hooks.priorityClassName=$HOOK_PRIORITY" --set hooks.podLabels.e2e=hook
  --wait --timeout 180s
)
# Standalone: the chart installs its CRDs (README "Standalone").
install_args=("$RELEASE" "${image_args[@]}" --set crds.install=true)

prepare_nodes() {
  k label node --all "$HOOK_NODE_LABEL=true" --overwrite >/dev/null
  k taint node --all "$E2E_TAINT=hooks:NoSchedule" --overwrite >/dev/null
  k apply -f - >/dev/null <<YAML
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: $HOOK_PRIORITY}
value: 1000
description: the e2e suite's hook Jobs
YAML
}

# capture_hook_pod COMPONENT FILE (in the background): the hook's pod as JSON, once it is bound to a node.
capture_hook_pod() {
  local i
  for ((i = 0; i < 600; i++)); do
    if k -n "$NAMESPACE" get pods -l "app.kubernetes.io/component=$1" -o json 2>/dev/null >"$2.part" \
      && grep -q '"nodeName"' "$2.part"; then
      mv "$2.part" "$2"
      return 0
    fi
    sleep 0.3
  done
}

# hook_pod_scheduled FILE COMPONENT: the captured pod carries the scheduling values and the no-sidecar defaults.
hook_pod_scheduled() {
  [[ -s $1 ]] || { echo "no $2 hook pod was seen"; return 1; }
  "$PYTHON" - "$1" "$2" "$E2E_TAINT" "$HOOK_NODE_LABEL" "$HOOK_PRIORITY" <<'PY'
import json, sys
path, component, taint, node_label, priority = sys.argv[1:]
pod = json.load(open(path))["items"][0]
spec, meta = pod["spec"], pod["metadata"]
problems = []
if spec.get("nodeSelector") != {node_label: "true"}:
    problems.append(f"nodeSelector {spec.get('nodeSelector')}")
if not any(t.get("key") == taint for t in spec.get("tolerations", [])):
    problems.append("no toleration of the taint")
if spec.get("priorityClassName") != priority:
    problems.append(f"priorityClassName {spec.get('priorityClassName')}")
if "nodeAffinity" not in spec.get("affinity", {}):
    problems.append("no nodeAffinity")
labels, annotations = meta.get("labels", {}), meta.get("annotations", {})
if labels.get("e2e") != "hook" or labels.get("sidecar.istio.io/inject") != "false":
    problems.append(f"labels {labels}")
if annotations.get("linkerd.io/inject") != "disabled":
    problems.append(f"annotations {annotations}")
if problems:
    sys.exit(f"{component} hook pod: " + "; ".join(problems))
print(f"> {component} hook pod {meta['name']} ran on {spec['nodeName']} past the taint: priority {priority}, "
      "node selector, affinity, labels e2e=hook and sidecar.istio.io/inject=false, linkerd.io/inject=disabled")
PY
}

helm_install() {
  local watcher
  capture_hook_pod startupcheck "$SCRATCH/startupcheck.json" &
  watcher=$!
  "$HELM" install --create-namespace "${install_args[@]}" >/dev/null
  # The hook pod lived for seconds before helm returned (helm waits for the Job): long since captured.
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  note "$(k -n "$NAMESPACE" get pods -l "app.kubernetes.io/instance=$RELEASE" --no-headers)"
  hook_pod_scheduled "$SCRATCH/startupcheck.json" startupcheck
}

ca_bundle() { k get validatingwebhookconfiguration "$RELEASE" -o jsonpath='{.webhooks[*].clientConfig.caBundle}'; }

# Every webhook of the chart's configuration carries the CA the operator keeps in its Secret.
ca_bundle_set() {
  local stored bundle b
  stored=$(k -n "$NAMESPACE" get secret "$RELEASE-webhook-tls" -o jsonpath='{.data.ca\.crt}')
  [[ -n $stored ]] || { echo "Secret $RELEASE-webhook-tls has no ca.crt"; return 1; }
  bundle=$(ca_bundle)
  for b in $bundle; do [[ $b == "$stored" ]] || { echo "a caBundle differs from the Secret's CA"; return 1; }; done
  local count; count=$(k get validatingwebhookconfiguration "$RELEASE" -o jsonpath='{range .webhooks[*]}{.name}{"\n"}{end}' | grep -c .)
  (($(wc -w <<<"$bundle") == count)) || { echo "caBundle set on $(wc -w <<<"$bundle") of $count webhooks"; return 1; }
  note "caBundle of all $count webhooks = ca.crt of Secret $RELEASE-webhook-tls"
}

# --- samples ----------------------------------------------------------------------------------------------------

# `namespace/name status reason` per InferenceService, from samples/README.md's table of outcomes.
expected_outcomes() {
  awk -F'|' '$2 ~ /^ `[a-z0-9-]+\/[a-z0-9-]+` $/ && $4 ~ /^ (True|False|Unknown) $/ {
    gsub(/[ `]/, "", $2); gsub(/ /, "", $4); gsub(/[ `]/, "", $5); print $2, $4, $5 }' "$REPO/samples/README.md" | sort
}

observed_outcomes() {
  k get isvc -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.status.conditions[?(@.type=="RuntimeReady")].status} {.status.conditions[?(@.type=="RuntimeReady")].reason}{"\n"}{end}' \
    | awk 'NF == 3' | sort
}

apply_samples() {
  local expected created
  expected=$(cat "$REPO"/samples/*.yaml "$REPO"/samples/ome-v1.3/*.yaml | grep -c '^kind: InferenceService$')
  k apply -f "$REPO/samples/"
  k apply -f "$REPO/samples/ome-v1.3/"
  created=$(k get isvc -A --no-headers | wc -l)
  ((created == expected)) || { echo "$created of $expected InferenceServices were created"; return 1; }
  note "all $expected InferenceServices created by one apply"
}

samples_outcomes() {
  local want got deadline rows=${1:-20}
  want=$(expected_outcomes)
  if ((rows < 20)); then  # beside OME's CRDs: without samples/ome-v1.3/ (spec.runtime.autoSync)
    want=$(grep -v -e '^ome-demo/llama-3b-on-1b-runtime-pinned ' -e '^team-b/llama-3b-canary-runtime-pinned ' <<<"$want")
  fi
  (($(wc -l <<<"$want") == rows)) || { echo "samples/README.md's table gave: $want"; return 1; }
  deadline=$(($(date +%s) + 60))
  until got=$(observed_outcomes) && [[ $got == "$want" ]]; do
    if (($(date +%s) >= deadline)); then
      echo "RuntimeReady after 60s differs from samples/README.md (< expected, > observed):"
      diff <(echo "$want") <(echo "$got") | grep '^[<>]' || true
      return 1
    fi
    sleep 1
  done
  note "$(wc -l <<<"$want") RuntimeReady conditions as samples/README.md lists them"
}

# What `kubectl get isvc -o wide` shows: the printer columns, and the message that names the chosen runtime.
get_wide() {
  local out header row
  out=$(k get isvc -n ome-demo -o wide)
  header=$(head -n1 <<<"$out" | tr -s ' ')
  [[ $header == "NAME MODEL RUNTIME RUNTIMEREADY REASON AGE MESSAGE" ]] || { echo "header: $header"; return 1; }
  row=$(grep '^llama-3b-auto ' <<<"$out" | tr -s ' ')
  [[ $row =~ ^llama-3b-auto\ llama-3-2-3b-instruct-demo\ True\ RuntimeSelected\ [0-9a-z]+\ selected\ ClusterServingRuntime\ sglang-llama-3-2-compact\  ]] \
    || { echo "row: $row"; return 1; }
  row=$(grep '^llama-3b-missing-runtime ' <<<"$out" | tr -s ' ')
  [[ $row =~ ^llama-3b-missing-runtime\ llama-3-2-3b-instruct-demo\ vllm-llama-3-2-turbo\ False\ RuntimeNotFound\  ]] \
    || { echo "row: $row"; return 1; }
  grep -q 'kubectl ome-selector runtime explain --isvc qwen3-32b-auto -n ome-demo' <<<"$out" \
    || { echo "qwen3-32b-auto's message does not point at kubectl ome-selector runtime explain:"; echo "$out"; return 1; }
  note "$(grep '^llama-3b-auto ' <<<"$out" | tr -s ' ' | cut -c1-150)"
}

# `kubectl describe` of a named runtime that does not declare support: the condition and the advisory event.
describe_advisory() {
  local out
  out=$(k describe isvc -n ome-demo llama-3b-on-1b-runtime)
  grep -qE '^ +Reason: +RuntimeSpecified$' <<<"$out" || { echo "no RuntimeSpecified condition:"; echo "$out"; return 1; }
  grep -qE '^ +Type: +RuntimeReady$' <<<"$out" || { echo "no RuntimeReady condition:"; echo "$out"; return 1; }
  grep -qE '^ +Warning +RuntimeCompatibilityAdvisory .*model size 3\.21B is outside supported range \[500M, 2B\]' <<<"$out" \
    || { echo "no RuntimeCompatibilityAdvisory event with the size reason:"; echo "$out"; return 1; }
  note "$(grep -E 'RuntimeCompatibilityAdvisory' <<<"$out" | tr -s ' ' | cut -c1-150)"
}

# SPEC §12: a real `kubectl apply` of a catalog change, through the cluster's apiserver, prints the impact warning
# (server-side dry run: nothing is stored, the checks after this one see the samples as they were).
# kind's API server presents no client certificate to webhooks (docs/webhook-client-auth.md says how to give it
# one): the webhook cannot tell it from any other caller, so a cluster-scoped change is told counts, no names.
catalog_impact_warning() {
  local out want
  want='Warning: this change moves 1 InferenceService(s): 1 switch runtime (names withheld from an unverified caller); see kubectl ome-selector runtime what-if'
  out=$("$PYTHON" -c '
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc["metadata"]["name"] == "sglang-llama-3-2-compact":
        doc["spec"]["disabled"] = True
        print(yaml.safe_dump(doc))
' "$REPO/samples/21-cluster-serving-runtimes.yaml" | k apply --dry-run=server -f - 2>&1) \
    || { echo "apply failed: $out"; return 1; }
  grep -qxF "$want" <<<"$out" || { echo "no impact warning: $out"; return 1; }
  note "$(cut -c1-160 <<<"$want")"
}

scenario() {
  "$PYTHON" -m "$SCENARIO_MODULE" --kubeconfig "$KUBECONFIG" --namespace "$SCENARIO_NAMESPACE" \
    --kubectl "$(command -v "$KUBECTL")" --timeout 120 | sed 's/^ok: /> /'
}

# --- always available (SPEC §8) ---------------------------------------------------------------------------------

HA_NAMESPACE=ome-selector-ha
availability() { "$PYTHON" -m harness.availability "$@" --kubeconfig "$KUBECONFIG" --namespace "$HA_NAMESPACE"; }
lease_holder() { k -n "$NAMESPACE" get lease "$RELEASE" -o jsonpath='{.spec.holderIdentity}'; }
operator_pods() { k -n "$NAMESPACE" get pods -l "app.kubernetes.io/instance=$RELEASE" --field-selector=status.phase=Running -o name; }

# Two ready replicas; the Lease is held by one of them.
two_replicas_one_leader() {
  local ready holder pods deadline
  deadline=$(($(date +%s) + 60))
  # A replica that just left (a rollout, a deletion) may hold the Lease until it expires: wait for a live holder.
  until ready=$(k -n "$NAMESPACE" get deployment "$RELEASE" -o jsonpath='{.status.readyReplicas}') && ((ready == 2)) \
    && holder=$(lease_holder) && pods=$(operator_pods) && grep -qx "pod/$holder" <<<"$pods"; do
    if (($(date +%s) >= deadline)); then
      echo "after 60 s: ${ready:-0} ready replicas, Lease holder '${holder:-}', pods:"; operator_pods
      return 1
    fi
    sleep 1
  done
  note "2 replicas ready; Lease $NAMESPACE/$RELEASE held by $holder"
}

# Admissions every 100 ms while ACTION runs: none may fail, and no InferenceService gets an event twice.
churn_during() {
  local seconds=$1 churn_out churn_pid rc; shift
  churn_out=$(mktemp -p "$SCRATCH")
  availability churn --seconds "$seconds" --interval 0.1 >"$churn_out" 2>&1 &
  churn_pid=$!
  sleep 3
  "$@"
  rc=0; wait "$churn_pid" || rc=$?
  note "admissions: $(cat "$churn_out")"
  ((rc == 0)) || { echo "admissions failed during: $*"; cat "$churn_out"; rm -f "$churn_out"; return 1; }
  rm -f "$churn_out"
}

restart_rollout() {
  k -n "$NAMESPACE" rollout restart "deployment/$RELEASE" >/dev/null
  k -n "$NAMESPACE" rollout status "deployment/$RELEASE" --timeout 180s >/dev/null
}

delete_leader_pod() {
  local holder
  holder=$(lease_holder)
  k -n "$NAMESPACE" delete pod "$holder" --wait=true >/dev/null
  k -n "$NAMESPACE" rollout status "deployment/$RELEASE" --timeout 180s >/dev/null
  note "deleted leader $holder; Lease now held by $(lease_holder)"
}

rollout_without_failed_admissions() {
  availability prepare >/dev/null
  churn_during 40 restart_rollout
  two_replicas_one_leader
  availability verify --timeout 120 | sed 's/^/> events: /'
}

leader_deletion_without_failed_admissions() {
  churn_during 25 delete_leader_pod
  availability verify --timeout 120 | sed 's/^/> events: /'
}

# Each replica stopped so far (a rollout, a deletion) ran its preStop drain: the kubelet records a
# FailedPreStopHook event for a hook that cannot run or exits non-zero.
stopped_replicas_drained() {
  local failed
  failed=$(k -n "$NAMESPACE" get events --field-selector reason=FailedPreStopHook -o name)
  [[ -z "$failed" ]] || { echo "preStop hooks failed:"; k -n "$NAMESPACE" get events --field-selector reason=FailedPreStopHook; return 1; }
  note "no FailedPreStopHook event in $NAMESPACE"
}

# The PodDisruptionBudget (minAvailable 1): of two ready replicas one may be evicted, then no other until it is back.
eviction_respects_the_budget() {
  local pods first second out
  mapfile -t pods < <(operator_pods)
  ((${#pods[@]} == 2)) || { echo "expected 2 running replicas, got ${#pods[@]}"; return 1; }
  first=${pods[0]#pod/}; second=${pods[1]#pod/}
  evict "$first" || { echo "the first eviction was refused"; return 1; }
  if out=$(evict "$second" 2>&1); then echo "the second eviction was allowed: $out"; return 1; fi
  grep -q "disruption budget" <<<"$out" || { echo "refused for another reason: $out"; return 1; }
  note "evicted $first; $second refused: $(grep -o "Cannot evict pod as it would violate the pod's disruption budget" <<<"$out" | head -1)"
  k -n "$NAMESPACE" rollout status "deployment/$RELEASE" --timeout 180s >/dev/null
}

evict() {
  k create --raw "/api/v1/namespaces/$NAMESPACE/pods/$1/eviction" -f - <<JSON
{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "$1", "namespace": "$NAMESPACE"}}
JSON
}

# --- GitOps and deletes while stopped (SPEC §7) ------------------------------------------------------------------

# The release's rendered webhook configuration (what a GitOps tool applies) against the live one, after the
# operator has armed it: every rendered field is live unchanged, the only field beyond them is each webhook's
# caBundle, and a server-side diff (as Argo CD and Flux compute it) finds nothing to change.
gitops_no_drift() {
  local rendered="$SCRATCH/webhook.yaml" diff rc
  "$HELM" get manifest "$RELEASE" --namespace "$NAMESPACE" \
    | "$PYTHON" -c 'import sys, yaml; print(yaml.safe_dump(next(d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "ValidatingWebhookConfiguration")))' \
    >"$rendered"
  k get validatingwebhookconfiguration "$RELEASE" -o json >"$SCRATCH/webhook-live.json"
  "$PYTHON" - "$rendered" "$SCRATCH/webhook-live.json" <<'PY'
import json, sys, yaml
rendered = yaml.safe_load(open(sys.argv[1]))
live = json.load(open(sys.argv[2]))
def leaves(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value
want, have = dict(leaves(rendered)), dict(leaves(live))
changed = sorted(p for p, v in want.items() if have.get(p) != v)
extra = {p for p in have if p not in want and not p.startswith("metadata.") and not p.endswith(".objectSelector")}
bundles = {f"webhooks[{i}].clientConfig.caBundle" for i in range(len(rendered["webhooks"]))}
if changed or extra != bundles:
    sys.exit(f"drift: changed {changed}, beyond the chart {sorted(extra - bundles)}, caBundle missing {sorted(bundles - extra)}")
PY
  set +e
  diff=$(k diff --server-side --force-conflicts --field-manager=e2e-gitops -f "$rendered" 2>&1)
  rc=$?
  set -e
  ((rc == 0)) || { echo "kubectl diff --server-side (exit $rc): $diff"; return 1; }
  note "only the caBundle of $(grep -c 'caBundle' "$SCRATCH/webhook-live.json") webhook(s) differs from the rendered chart; kubectl diff --server-side is empty"
}

# With every replica stopped, `kubectl delete namespace` of a namespace full of models and runtimes finishes: their
# DELETE webhooks are Ignore within 3 s and skip the namespace controller.
catalog_deletes_while_stopped() {
  local ns=ome-selector-e2e-deletes policies i
  policies=$(k get validatingwebhookconfiguration "$RELEASE" \
    -o jsonpath='{range .webhooks[*]}{.name} {.failurePolicy} {.timeoutSeconds}{"\n"}{end}' | grep -- '-delete\.')
  (($(wc -l <<<"$policies") == 4)) || { echo "expected 4 DELETE webhooks: $policies"; return 1; }
  if grep -v ' Ignore [123]$' <<<"$policies"; then echo "a DELETE webhook is not Ignore within 3 s"; return 1; fi
  k create namespace "$ns" >/dev/null
  for ((i = 0; i < 10; i++)); do
    cat <<YAML
---
apiVersion: ome.io/v1beta1
kind: BaseModel
metadata: {name: m$i, namespace: $ns}
spec:
  modelFormat: {name: safetensors}
  storage: {storageUri: "hf://example/m$i"}
---
apiVersion: ome.io/v1beta1
kind: ServingRuntime
metadata: {name: r$i, namespace: $ns}
spec:
  supportedModelFormats: [{modelFormat: {name: safetensors}, autoSelect: true}]
YAML
  done | k apply -f - >/dev/null
  k -n "$NAMESPACE" scale "deployment/$RELEASE" --replicas=0 >/dev/null
  k -n "$NAMESPACE" wait --for=delete pod -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/name=ome-selector" \
    --timeout 180s >/dev/null 2>&1 || true
  [[ -z $(k -n "$NAMESPACE" get pods -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/name=ome-selector" -o name) ]] \
    || { echo "operator pods still there after scaling to 0"; return 1; }
  k delete namespace "$ns" --wait --timeout 300s >/dev/null
  if k get namespace "$ns" >/dev/null 2>&1; then echo "namespace $ns is still there"; return 1; fi
  k -n "$NAMESPACE" scale "deployment/$RELEASE" --replicas=2 >/dev/null
  k -n "$NAMESPACE" rollout status "deployment/$RELEASE" --timeout 180s >/dev/null
  note "namespace of 10 BaseModels and 10 ServingRuntimes deleted with no replica; DELETE webhooks: $(tr '\n' ';' <<<"$policies")"
}

# --- upgrade and uninstall --------------------------------------------------------------------------------------

upgrade_keeps_ca() {
  local before after
  before=$(ca_bundle)
  "$HELM" upgrade "${install_args[@]}" --set webhook.strictSizes=true >/dev/null
  k -n "$NAMESPACE" rollout status "deployment/$RELEASE" --timeout 180s
  after=$(ca_bundle)
  [[ -n $before && $after == "$before" ]] || { echo "the webhook CA changed across helm upgrade"; return 1; }
  note "caBundle unchanged; new pod $(k -n "$NAMESPACE" get pods -l "app.kubernetes.io/instance=$RELEASE" -o name)"
}

# The upgraded operator serves the webhook with --strict-sizes: a size that does not parse is denied (the size
# webhooks fail open, so only a reachable, trusted webhook can deny).
strict_sizes_denial() {
  local out
  if out=$(k create --dry-run=server -f - 2>&1 <<'EOF'
apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: e2e-unparseable-size}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelArchitecture: LlamaForCausalLM
  modelParameterSize: "three billion"
EOF
  ); then
    echo "admitted: $out"; return 1
  fi
  grep -q 'admission webhook "clusterbasemodels.ome-selector.ome.io" denied the request' <<<"$out" \
    || { echo "unexpected error: $out"; return 1; }
  note "$(cut -c1-160 <<<"$out")"
}

# README "Uninstall": `helm uninstall` alone. Its pre-delete hook stops the operator, removes RuntimeReady and
# deletes the Lease; nothing of ours is left but the CRDs (and the events, which the API server expires).
uninstall_with_the_hook() {
  local cli left listed watcher leftovers
  cli="$(dirname "$PYTHON")/ome-selector"
  # What the hook will do, as the CLI lists it from here (read-only).
  listed=$("$cli" --kubeconfig "$KUBECONFIG" cleanup --conditions-only --dry-run)
  grep -q "would remove RuntimeReady" <<<"$listed" || { echo "cleanup --dry-run listed nothing: $listed"; return 1; }
  k -n "$NAMESPACE" get lease "$RELEASE" >/dev/null || { echo "no Lease $RELEASE before the uninstall"; return 1; }
  capture_hook_pod cleanup "$SCRATCH/cleanup.json" &
  watcher=$!
  "$HELM" uninstall "$RELEASE" --namespace "$NAMESPACE" --wait --timeout 180s >/dev/null
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  hook_pod_scheduled "$SCRATCH/cleanup.json" cleanup
  left=$(k get isvc -A -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="RuntimeReady")].type}{end}')
  [[ -z $left ]] || { echo "RuntimeReady conditions left after helm uninstall"; return 1; }
  leftovers=$(k -n "$NAMESPACE" get all,secrets,configmaps,serviceaccounts,roles,rolebindings,leases,jobs,networkpolicies,poddisruptionbudgets \
    -o name | grep -v -x -e serviceaccount/default -e configmap/kube-root-ca.crt || true)
  leftovers+=$(k get clusterroles,clusterrolebindings,validatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings \
    -o name -l app.kubernetes.io/part-of=ome-selector)
  [[ -z $leftovers ]] || { echo "left after helm uninstall: $leftovers"; return 1; }
  k get crd "${CRDS[@]}" >/dev/null || { echo "helm uninstall deleted CRDs"; return 1; }
  note "RuntimeReady removed from $(k get isvc -A --no-headers | wc -l) InferenceServices by the pre-delete hook; Lease deleted; nothing left in $NAMESPACE or cluster-wide but the 5 CRDs"
}

# --- beside OME: its CRDs first, the chart on top (the configuration most users have) --------------------------

crd_state() {
  k get crd "${CRDS[@]}" -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.resourceVersion} {.metadata.labels} {.metadata.annotations}{"\n"}{end}'
}

omes_crds_first() {
  k delete crd "${CRDS[@]}" --wait=true >/dev/null
  local deadline
  k create -f "$REPO/tests/data/ome-crds/" >/dev/null
  # Right after the create a CRD has no status.conditions yet, which `kubectl wait` reports as an error.
  deadline=$(($(date +%s) + 120))
  until k wait --for=condition=Established crd "${CRDS[@]}" --timeout 10s >/dev/null 2>&1; do
    (($(date +%s) < deadline)) || { echo "OME's CRDs not Established after 120 s"; return 1; }
    sleep 1
  done
  crd_state >"$SCRATCH/ome-crds"
  note "OME's CRDs (commit cfa05c69) installed in place of ours"
}

helm_install_beside_ome() {
  "$HELM" install --create-namespace "$RELEASE" "${image_args[@]}" >/dev/null
  [[ $(crd_state) == "$(cat "$SCRATCH/ome-crds")" ]] || { echo "helm install changed OME's CRDs"; crd_state; return 1; }
  if "$HELM" get manifest "$RELEASE" --namespace "$NAMESPACE" | grep -q '^kind: CustomResourceDefinition'; then
    echo "the release holds CRDs"; return 1
  fi
  note "release installed; OME's 5 CRDs unchanged (resourceVersion, labels, annotations), none in the release"
}

apply_portable_samples() {
  k apply -f "$REPO/samples/" >/dev/null
  note "samples/ applied on OME's CRDs ($(k get isvc -A --no-headers | wc -l) InferenceServices)"
}

kubectl_ome_status_beside_ome() {
  local out row
  out=$("$(dirname "$PYTHON")/kubectl-ome_selector" status -n ome-demo -o wide --kubeconfig "$KUBECONFIG")
  row=$(grep '^llama-3b-auto ' <<<"$out" | tr -s ' ')
  [[ $row =~ ^llama-3b-auto\ llama-3-2-3b-instruct-demo\ sglang-llama-3-2-compact\ True\ RuntimeSelected\ selected\ ClusterServingRuntime\ sglang-llama-3-2-compact ]] \
    || { echo "row: $row"; echo "$out"; return 1; }
  note "$(cut -c1-150 <<<"$row")"
}

uninstall_beside_ome() {
  "$HELM" uninstall "$RELEASE" --namespace "$NAMESPACE" --wait >/dev/null
  [[ $(crd_state) == "$(cat "$SCRATCH/ome-crds")" ]] || { echo "helm uninstall changed OME's CRDs"; return 1; }
  note "release gone; OME's CRDs as they were"
}

beside_ome() {
  check "OME's CRDs first (kubectl create -f tests/data/ome-crds/)" omes_crds_first
  check "helm install --wait beside OME: no CRD emitted, replaced, relabelled or adopted" helm_install_beside_ome
  if ((failed)); then diagnose; return 1; fi
  check "kubectl apply -f samples/ on OME's CRDs" apply_portable_samples
  check "every sample InferenceService gets its SPEC §5 condition on OME's CRDs" samples_outcomes 18
  check "kubectl ome-selector status -o wide on OME's CRDs" kubectl_ome_status_beside_ome
  check "helm uninstall beside OME leaves OME's CRDs as they were" uninstall_beside_ome
}

diagnose() {
  echo "== diagnostics"
  echo "-- operator log"
  k -n "$NAMESPACE" logs "deployment/$RELEASE" --tail=100 --all-containers | cut -c1-600 || true
  k -n "$NAMESPACE" logs "deployment/$RELEASE" --tail=30 --previous 2>/dev/null | cut -c1-600 || true
  echo "-- events"
  k get events -A --sort-by=.lastTimestamp || true
  echo "-- kubectl get -A"
  k get all,validatingwebhookconfigurations,secrets,inferenceservices,basemodels,clusterbasemodels,servingruntimes,clusterservingruntimes -A -o wide || true
}

run() {
  check "the node is tainted and labelled for the hook Jobs, their PriorityClass exists" prepare_nodes
  check "helm install --wait (image $IMAGE)" helm_install
  if ((failed)); then diagnose; return 1; fi
  # Right after `helm install --wait`, as a user would: every webhook-checked object must be admitted.
  check "kubectl apply -f samples/ right after the install" apply_samples
  check "the operator set the webhook caBundle" ca_bundle_set
  check "every sample InferenceService gets its SPEC §5 condition" samples_outcomes
  check "kubectl get isvc -o wide" get_wide
  check "kubectl describe isvc shows the condition and the advisory event" describe_advisory
  check "kubectl apply of a catalog change prints the impact warning (SPEC §12)" catalog_impact_warning
  check "the shared scenario ($SCENARIO_MODULE)" scenario
  check "two ready replicas, one Lease holder" two_replicas_one_leader
  check "kubectl rollout restart: 0 failed admissions, 0 duplicate events" rollout_without_failed_admissions
  check "leader pod deleted: 0 failed admissions, 0 duplicate events" leader_deletion_without_failed_admissions
  check "every stopped replica ran its preStop drain" stopped_replicas_drained
  check "an eviction that would break the PodDisruptionBudget is refused" eviction_respects_the_budget
  check "GitOps: the rendered webhook configuration differs from the cluster by caBundle only" gitops_no_drift
  check "every replica stopped: a namespace full of models and runtimes is deleted" catalog_deletes_while_stopped
  check "helm upgrade keeps the webhook CA" upgrade_keeps_ca
  check "the upgraded operator denies an unparseable size (strictSizes)" strict_sizes_denial
  ((failed == 0)) || diagnose
  check "helm uninstall: the pre-delete hook cleans up, only the CRDs stay" uninstall_with_the_hook
  # Independent of the checks above: the release is gone, and OME's CRDs replace ours.
  beside_ome
  ((failed == 0))
}

case "${1:-}" in
  install)
    check "the node is tainted and labelled for the hook Jobs, their PriorityClass exists" prepare_nodes
    check "helm install --wait (image $IMAGE)" helm_install
    if ((failed)); then diagnose; exit 1; fi
    ;;
  run) run ;;
  diagnose) diagnose ;;
  *) die "usage: $0 install|run|diagnose" ;;
esac
