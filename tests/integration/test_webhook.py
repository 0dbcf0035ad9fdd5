"""The admission webhook through the real kube-apiserver (SPEC §7): what `kubectl` users see.

Each test starts its own operator with a webhook on a free loopback port; the operator registers a per-run
ValidatingWebhookConfiguration and removes it when it stops. Objects live in the test's namespace; the few
cluster-scoped ones are named after it and deleted afterwards, so other tests count the same runtimes.
"""

from __future__ import annotations

import copy
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from harness import objects
from harness.admission import admission_count
from harness.controlplane import ControlPlane
from harness.kube import delete, eventually, get, list_objects, runtime_ready
from harness.operator_thread import OperatorThread
from ome_selector.api.bounds import MAX_FORMAT_ENTRIES
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.inheritance import find_named_runtime
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.confirming import MAX_RUNTIME_FETCHES, DirectReader

CATALOG = Path(__file__).resolve().parents[1] / "data" / "ome-catalog"
ISVC_WEBHOOK = "inferenceservices.ome-selector.ome.io"
ENGINE: dict[str, Any] = {"minReplicas": 1}
LOCAL = ("127.0.0.1", 0)


#: SPEC §7 v4: the warning of an allowed auto-selection.
AUTO_SELECTED_FITS = "runtime rt-fits will be auto-selected for model llama"


def denial(text: str, webhook: str = ISVC_WEBHOOK) -> str:
    return f'admission webhook "{webhook}" denied the request: {text}\n'


class Kubectl:
    """`kubectl` with YAML on stdin; returns the finished process (never raises on a non-zero exit)."""

    def __init__(self, plane: ControlPlane) -> None:
        self._plane = plane

    def __call__(
        self, *args: str, docs: list[dict[str, Any]] | None = None
    ) -> subprocess.CompletedProcess[str]:
        stdin = yaml.safe_dump_all(docs) if docs is not None else None
        return self._plane.kubectl(*args, input=stdin, check=False)

    def create(self, *docs: dict[str, Any], dry_run: bool = False) -> subprocess.CompletedProcess[str]:
        extra = ["--dry-run=server"] if dry_run else []
        return self("create", *extra, "-f", "-", docs=list(docs))

    def apply(self, *docs: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return self("apply", "-f", "-", docs=list(docs))


def warnings_of(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [
        line.removeprefix("Warning: ") for line in result.stderr.splitlines() if line.startswith("Warning: ")
    ]


@pytest.fixture
def kubectl(control_plane: ControlPlane) -> Kubectl:
    return Kubectl(control_plane)


@pytest.fixture
def webhook(running_operator: Any) -> OperatorThread:
    runner: OperatorThread = running_operator(webhook=WebhookConfig(bind_address=LOCAL))
    return runner


def isvc(name: str, ns: str, model: str, runtime: str | None = None, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("engine", ENGINE)
    return objects.inference_service(name, namespace=ns, model_name=model, runtime_name=runtime, **kwargs)


def cluster_runtime_count(api_client: Any) -> int:
    return len(list_objects(api_client, "ClusterServingRuntime"))


def exists(api_client: Any, kind: str, name: str, namespace: str | None = None) -> bool:
    try:
        get(api_client, kind, name, namespace)
    except client.ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


# --- denials, with the exact SPEC §5 texts ---------------------------------------------------------------


@pytest.mark.usefixtures("webhook")
def test_denials_carry_the_exact_messages(kubectl: Kubectl, namespace: str, api_client: Any) -> None:
    ns = namespace
    setup = kubectl.create(
        objects.model("llama", namespace=ns, size="3.21B"),
        objects.model("off", namespace=ns, size="1B", disabled=True),
        objects.runtime("rt-small", namespace=ns, size_range=("500M", "2B")),
        objects.runtime("rt-disabled", namespace=ns, disabled=True),
    )
    assert setup.returncode == 0, setup.stderr
    cases = {
        "model-missing": (
            isvc("a", ns, "ghost"),
            f"model ghost not found: no BaseModel in namespace {ns} and no ClusterBaseModel",
        ),
        "model-disabled": (isvc("b", ns, "off"), "model off is disabled"),
        "runtime-missing": (
            isvc("c", ns, "llama", "nope"),
            f"runtime nope not found in namespace {ns} or at cluster scope",
        ),
        "runtime-disabled": (
            isvc("d", ns, "llama", "rt-disabled"),
            "namespace-scoped runtime rt-disabled is disabled",
        ),
    }
    for case, (doc, text) in cases.items():
        result = kubectl.create(doc)
        assert result.returncode == 1, case
        assert result.stderr.startswith('Error from server (Forbidden): error when creating "STDIN": '), case
        assert result.stderr.endswith(denial(text)), (case, result.stderr)
    assert not exists(api_client, "InferenceService", "a", ns)

    clusters = cluster_runtime_count(api_client)
    serve = "runtime serves" if clusters == 1 else "runtimes serve"
    tail = f"; {clusters} {serve} other formats" if clusters else ""
    no_runtime = (
        f"no runtime supports model llama (checked {2 + clusters} runtimes: 2 namespace-scoped, "
        f"{clusters} cluster-scoped): "
        f"{ns}/rt-small (model size 3.21B is outside supported range [500M, 2B]); "
        f"{ns}/rt-disabled (runtime is disabled){tail}"
    )
    # Cluster runtimes of the session serve the same format: give the model one of its own.
    llama = objects.model("llama", namespace=ns, size="3.21B")
    fmt = f"fmt-{ns}"
    llama["spec"]["modelFormat"] = {"name": fmt, "version": "1.0.0"}
    assert kubectl.apply(llama).returncode == 0
    for name in ("rt-small", "rt-disabled"):
        body = objects.runtime(name, namespace=ns, size_range=("500M", "2B"), disabled=name == "rt-disabled")
        body["spec"]["supportedModelFormats"][0]["modelFormat"] = {"name": fmt, "version": "1.0.0"}
        assert kubectl.apply(body).returncode == 0
    result = kubectl.create(isvc("e", ns, "llama"))
    assert result.returncode == 1
    assert result.stderr.endswith(denial(no_runtime)), result.stderr


# --- warnings returned to the client ---------------------------------------------------------------------


def test_product_page_named_runtime_is_admitted_with_the_advisory(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str, cluster_objects: list[tuple[str, str]]
) -> None:
    runtimes = [
        yaml.safe_load(
            (CATALOG / "runtimes" / "srt" / "meta" / f"llama-3-2-{size}-instruct-rt.yaml").read_text()
        )
        for size in ("1b", "3b")
    ]
    cluster_objects.extend(("ClusterServingRuntime", doc["metadata"]["name"]) for doc in runtimes)
    model = objects.model("llama-3-2-3b-instruct", namespace=namespace, size="3.21B")
    setup = kubectl.apply(*runtimes, model)
    assert setup.returncode == 0, setup.stderr

    result = kubectl.create(isvc("llama", namespace, "llama-3-2-3b-instruct", "srt-llama-3-2-1b-instruct"))
    assert result.returncode == 0, result.stderr
    (warning,) = warnings_of(result)
    assert "does not declare support for model" in warning
    assert "model size 3.21B is outside supported range [500M, 2B]" in warning
    assert warning == (
        "runtime srt-llama-3-2-1b-instruct does not declare support for model llama-3-2-3b-instruct: "
        "model size 3.21B is outside supported range [500M, 2B]"
    )


@pytest.mark.usefixtures("webhook")
def test_warnings_for_pending_models_sizes_and_operators(
    kubectl: Kubectl, namespace: str, cluster_objects: list[tuple[str, str]]
) -> None:
    ns = namespace
    pending = kubectl.create(objects.model("raw", namespace=ns, with_format=False), isvc("p", ns, "raw"))
    assert pending.returncode == 0, pending.stderr
    assert warnings_of(pending) == ["model raw has no modelFormat yet; runtime selection waits for it"]

    runtime = copy.deepcopy(objects.runtime("lower", namespace=ns, size_range=("2b", "4B")))
    runtime["spec"]["supportedModelFormats"][0]["modelFramework"]["operator"] = "Newer"
    result = kubectl.create(runtime)
    assert result.returncode == 0, result.stderr
    assert warnings_of(result) == [
        'spec.modelSizeRange.min "2b" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 2B",
        'spec.supportedModelFormats[0].modelFramework.operator "Newer" is not a known operator, '
        "so this entry matches no versioned model",
    ]
    inverted = kubectl.create(objects.runtime(f"{ns}-inverted", size_range=("4B", "2B")))
    cluster_objects.append(("ClusterServingRuntime", f"{ns}-inverted"))
    assert warnings_of(inverted) == [
        'spec.modelSizeRange.min "4B" is above max "2B", so every model with a size is rejected'
    ]
    model = kubectl.create(objects.model(f"{ns}-sized", size="7 B"))
    cluster_objects.append(("ClusterBaseModel", f"{ns}-sized"))
    assert warnings_of(model) == [
        'spec.modelParameterSize "7 B" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 4B"
    ]


@pytest.mark.usefixtures("webhook")
def test_control_characters_reach_the_client_escaped_in_warnings_and_denials(
    kubectl: Kubectl, namespace: str
) -> None:
    # A raw newline cannot travel in a Warning header (the apiserver drops the warning); escaped, it does.
    model = kubectl.create(objects.model("newline", namespace=namespace, size="4B\n"))
    assert model.returncode == 0, model.stderr
    assert warnings_of(model) == [
        'spec.modelParameterSize "4B\\n" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 4B"
    ]
    runtime = kubectl.create(objects.runtime("escape", namespace=namespace, size_range=("\x1b[31m1B", None)))
    assert warnings_of(runtime) == [
        'spec.modelSizeRange.min "\\x1b[31m1B" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 4B"
    ]
    denied = kubectl.create(isvc("tab", namespace, "gh\tost"))
    assert denied.returncode == 1
    assert denied.stderr.endswith(
        denial(f'model "gh\\tost" not found: no BaseModel in namespace {namespace} and no ClusterBaseModel')
    )


def test_a_runtime_too_large_to_read_is_admitted_with_a_warning_and_treated_as_absent(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    # Valid to the apiserver (it bounds only bytes), but tens of thousands of entries would hold the event
    # loop for a second at every read (SPEC §8 bounded resources): more than 1,000 are not read at all.
    huge = objects.runtime("huge", namespace=namespace)
    huge["spec"]["supportedModelFormats"] = [{"modelFormat": {"name": "safetensors"}}] * 2000
    created = kubectl.create(huge)
    assert created.returncode == 0, created.stderr
    assert warnings_of(created) == [
        "ome-selector does not read this ServingRuntime: spec.supportedModelFormats has 2000 entries, "
        "more than the 1000 ome-selector reads; it treats it as absent"
    ]
    create_isvc = objects.inference_service("named", namespace=namespace, model_name="m", runtime_name="huge")
    kubectl.create(objects.model("m", namespace=namespace), create_isvc)
    condition = eventually(
        lambda: (
            (c := runtime_ready(api_client, "named", namespace)) and c["reason"] == "RuntimeNotFound" and c
        ),
        what="the InferenceService naming the runtime RuntimeNotFound",
    )
    assert condition["message"] == f"runtime huge not found in namespace {namespace} or at cluster scope"


def test_strict_sizes_deny_new_values_but_not_unchanged_ones(
    running_operator: Any, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    # Stored before the strict webhook runs (no webhook yet): an old bad value.
    assert kubectl.create(objects.runtime("legacy", namespace=ns, size_range=("1B", "4b"))).returncode == 0
    running_operator(webhook=WebhookConfig(bind_address=LOCAL, strict_sizes=True))
    result = kubectl.create(objects.runtime("fresh", namespace=ns, size_range=("1b", "4B")))
    assert result.returncode == 1
    message = (
        'spec.modelSizeRange.min "1b" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 1B"
    )
    assert result.stderr.endswith(denial(message, "servingruntimes.ome-selector.ome.io")), result.stderr

    relabel = kubectl("label", "servingruntime", "legacy", "-n", ns, "team=a")
    assert relabel.returncode == 0, relabel.stderr
    assert warnings_of(relabel) == [
        'spec.modelSizeRange.max "4b" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 4B"
    ]
    changed = kubectl(
        "patch",
        "servingruntime",
        "legacy",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec": {"modelSizeRange": {"max": "5b"}}}',
    )
    assert changed.returncode == 1
    assert "denied the request" in changed.stderr
    fixed = kubectl(
        "patch",
        "servingruntime",
        "legacy",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec": {"modelSizeRange": {"max": "5B"}}}',
    )
    assert (fixed.returncode, warnings_of(fixed)) == (0, [])
    assert get(api_client, "ServingRuntime", "legacy", ns)["spec"]["modelSizeRange"]["max"] == "5B"


# --- dry-run, update, deletion -----------------------------------------------------------------------------


@pytest.mark.usefixtures("webhook")
def test_server_side_dry_run_is_judged_the_same(kubectl: Kubectl, namespace: str, api_client: Any) -> None:
    ns = namespace
    denied = kubectl.create(isvc("dry", ns, "ghost"), dry_run=True)
    assert denied.returncode == 1
    assert denied.stderr.endswith(
        denial(f"model ghost not found: no BaseModel in namespace {ns} and no ClusterBaseModel")
    )
    assert kubectl.create(objects.model("raw", namespace=ns, with_format=False)).returncode == 0
    warned = kubectl.create(isvc("dry", ns, "raw"), dry_run=True)
    assert warned.returncode == 0, warned.stderr
    assert "(server dry run)" in warned.stdout
    assert warnings_of(warned) == ["model raw has no modelFormat yet; runtime selection waits for it"]
    assert not exists(api_client, "InferenceService", "dry", ns)


@pytest.mark.usefixtures("webhook")
def test_update_of_an_unservable_isvc_is_judged_only_when_a_matcher_input_changes(
    kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    setup = kubectl.create(
        objects.model("llama", namespace=ns, size="3.21B"),
        objects.runtime("rt", namespace=ns),
        isvc("svc", ns, "llama"),
    )
    assert setup.returncode == 0, setup.stderr
    # The runtime goes away: the InferenceService becomes unservable after admission.
    delete(api_client, "ServingRuntime", "rt", ns)
    eventually(
        lambda: (runtime_ready(api_client, "svc", ns) or {}).get("status") == "False", what="RuntimeNotFound"
    )

    relabel = kubectl("label", "isvc", "svc", "-n", ns, "team=a")
    assert relabel.returncode == 0, relabel.stderr
    clusters = cluster_runtime_count(api_client)
    (warning,) = warnings_of(relabel)
    checked = f"{clusters} runtime" if clusters == 1 else f"{clusters} runtimes"
    assert warning.startswith(f"no runtime supports model llama (checked {checked}: 0 namespace-scoped")

    status = kubectl(
        "patch",
        "isvc",
        "svc",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"url": "http://example"}}',
    )
    assert (status.returncode, warnings_of(status)) == (0, []), status.stderr

    # A matcher input changes (the accelerator-class annotation): judged, and denied.
    annotate = kubectl("annotate", "isvc", "svc", "-n", ns, "ome.io/accelerator-class=a100")
    assert annotate.returncode == 1
    assert (
        f'admission webhook "{ISVC_WEBHOOK}" denied the request: no runtime supports model llama'
        in annotate.stderr
    )
    repoint = kubectl(
        "patch", "isvc", "svc", "-n", ns, "--type=merge", "-p", '{"spec": {"model": {"name": "gone"}}}'
    )
    assert repoint.returncode == 1
    assert repoint.stderr.endswith(
        denial(f"model gone not found: no BaseModel in namespace {ns} and no ClusterBaseModel")
    )


@pytest.mark.usefixtures("webhook")
def test_deletion_is_never_blocked(kubectl: Kubectl, namespace: str, api_client: Any) -> None:
    ns = namespace
    doc = isvc("svc", ns, "llama")
    doc["metadata"]["finalizers"] = ["example.com/hold"]
    setup = kubectl.create(objects.model("llama", namespace=ns), objects.runtime("rt", namespace=ns), doc)
    assert setup.returncode == 0, setup.stderr
    assert kubectl("delete", "basemodel", "llama", "-n", ns).returncode == 0
    eventually(lambda: (runtime_ready(api_client, "svc", ns) or {}).get("reason") == "ModelNotFound")

    deleting = kubectl("delete", "isvc", "svc", "-n", ns, "--wait=false")
    assert deleting.returncode == 0, deleting.stderr
    assert get(api_client, "InferenceService", "svc", ns)["metadata"].get("deletionTimestamp")
    # Removing the finalizer is an UPDATE of an unservable object that changes nothing the matcher reads
    # except deletion: allowed, and the object goes.
    release = kubectl(
        "patch",
        "isvc",
        "svc",
        "-n",
        ns,
        "--type=json",
        "-p",
        '[{"op": "remove", "path": "/metadata/finalizers"}]',
    )
    assert (release.returncode, warnings_of(release)) == (0, []), release.stderr
    eventually(lambda: not exists(api_client, "InferenceService", "svc", ns), what="deleted")


# --- deferral -----------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("webhook")
def test_engine_images_defer_auto_selection(kubectl: Kubectl, namespace: str) -> None:
    ns = namespace
    model = objects.model("llama", namespace=ns, size="3.21B")
    model["spec"]["modelFormat"] = {"name": f"fmt-{ns}"}  # no runtime anywhere serves this format
    assert kubectl.create(model).returncode == 0
    image = {"runner": {"image": "registry.example/sglang:1"}}
    both = {"leader": {"runner": {"image": "a"}}, "worker": {"runner": {"image": "b"}}}
    for name, engine in (("runner", image), ("leader-worker", both)):
        result = kubectl.create(isvc(name, ns, "llama", engine=engine))
        assert (result.returncode, warnings_of(result)) == (0, []), result.stderr
    leader_only = kubectl.create(
        isvc("leader-only", ns, "llama", engine={"leader": {"runner": {"image": "a"}}})
    )
    assert leader_only.returncode == 1
    assert "denied the request: no runtime supports model llama" in leader_only.stderr
    no_engine = kubectl.create(isvc("no-engine", ns, "ghost", engine=None))
    assert (no_engine.returncode, warnings_of(no_engine)) == (0, []), no_engine.stderr
    missing = kubectl.create(isvc("missing", ns, "ghost", engine=image))
    assert missing.returncode == 1
    assert missing.stderr.endswith(
        denial(f"model ghost not found: no BaseModel in namespace {ns} and no ClusterBaseModel")
    )


# --- objects applied together: the direct-read confirmation -------------------------------------------------


@pytest.mark.usefixtures("webhook")
def test_model_runtime_and_isvc_in_one_apply(kubectl: Kubectl, namespace: str, api_client: Any) -> None:
    ns = namespace
    result = kubectl.apply(
        objects.model("llama", namespace=ns, size="3.21B"),
        objects.runtime("rt", namespace=ns, size_range=("2B", "4B")),
        isvc("svc", ns, "llama"),
        isvc("named", ns, "llama", "rt"),
    )
    assert result.returncode == 0, result.stderr
    assert warnings_of(result) == ["runtime rt will be auto-selected for model llama"]  # SPEC §7 v4
    condition = eventually(lambda: runtime_ready(api_client, "svc", ns), what="RuntimeReady")
    assert condition["message"] == "selected ServingRuntime rt (score 2)"


def test_confirming_read_finds_what_the_watch_has_not_delivered(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str
) -> None:
    """Deterministic version of the test above: the catalog is kept blind to the namespace."""
    ns = namespace
    controller = webhook.operator.controller
    assert controller is not None
    observe = controller.mirror.observe

    def blind(body: Any) -> None:
        if (body.get("metadata") or {}).get("namespace") != ns:
            observe(body)

    controller.mirror.observe = blind  # type: ignore[method-assign]
    before = webhook.operator.admission.confirmations if webhook.operator.admission else 0
    result = kubectl.apply(
        objects.model("llama", namespace=ns, size="3.21B"),
        objects.runtime("rt", namespace=ns),
        isvc("auto", ns, "llama"),
        isvc("named", ns, "llama", "rt"),
    )
    assert result.returncode == 0, result.stderr
    assert webhook.operator.admission is not None
    assert webhook.operator.admission.confirmations == before + 2
    assert controller.catalog.resolve_model(ns, "llama") is None  # only the direct read saw it
    # A real denial is still confirmed, then denied.
    denied = kubectl.create(isvc("ghost", ns, "ghost"))
    assert denied.returncode == 1
    assert webhook.operator.admission.confirmations == before + 3


# The confirming read of a "no runtime" denial lists only names and resourceVersions, reuses the runtimes the
# catalog holds as stored and reads the others: each kind of difference, with the watch kept blind as above.


def _live_catalog(webhook: OperatorThread) -> Catalog:
    """The catalog the running operator's webhook decides from."""
    controller = webhook.operator.controller
    assert controller is not None
    return controller.catalog


def _blind(webhook: OperatorThread, ns: str) -> None:
    """From now on the operator's catalog misses every watch event of namespace ``ns``."""
    controller = webhook.operator.controller
    assert controller is not None

    def unless_in_ns(handle: Any) -> Any:
        def handler(body: Any) -> None:
            if (body.get("metadata") or {}).get("namespace") != ns:
                handle(body)

        return handler

    controller.mirror.observe = unless_in_ns(controller.mirror.observe)  # type: ignore[method-assign]
    controller.mirror.forget = unless_in_ns(controller.mirror.forget)  # type: ignore[method-assign]


def _own_format(body: dict[str, Any], ns: str) -> dict[str, Any]:
    """``body`` (a model or runtime) with a format of the test's own: the session's cluster runtimes serve
    other formats, so a no-runtime message names only the test's runtimes."""
    fmt = {"name": f"fmt-{ns}", "version": "1.0.0"}
    if body["kind"].endswith("BaseModel"):
        body["spec"]["modelFormat"] = fmt
    for entry in body["spec"].get("supportedModelFormats", []):
        entry["modelFormat"] = dict(fmt)
    return body


def _runtime(name: str, ns: str, size_range: tuple[str, str]) -> dict[str, Any]:
    return _own_format(objects.runtime(name, namespace=ns, size_range=size_range), ns)


def _model(name: str, ns: str, size: str) -> dict[str, Any]:
    return _own_format(objects.model(name, namespace=ns, size=size), ns)


def _set_up(webhook: OperatorThread, kubectl: Kubectl, *bodies: dict[str, Any]) -> None:
    """Create ``bodies`` (models and runtimes of one namespace) and wait until the live catalog holds them."""
    created = kubectl.create(*bodies)
    assert created.returncode == 0, created.stderr
    catalog = _live_catalog(webhook)

    def held(body: dict[str, Any]) -> bool:
        ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
        if body["kind"].endswith("BaseModel"):
            return catalog.resolve_model(ns, name) is not None
        return find_named_runtime(catalog, ns, name, None) is not None

    eventually(lambda: all(held(body) for body in bodies), what="the catalog holding the setup")


def _no_runtime(ns: str, model: str, namespaced: int, clusters: int, entries: list[str]) -> str:
    total = namespaced + clusters
    serve = "runtime serves" if clusters == 1 else "runtimes serve"
    tail = f"; {clusters} {serve} other formats" if clusters else ""
    return (
        f"no runtime supports model {model} (checked {total} runtime{'' if total == 1 else 's'}: "
        f"{namespaced} namespace-scoped, {clusters} cluster-scoped): {'; '.join(entries)}{tail}"
    )


def _reader(webhook: OperatorThread) -> DirectReader:
    admission = webhook.operator.admission
    assert admission is not None
    assert admission.reader is not None
    return admission.reader


def test_a_runtime_created_just_before_is_read(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str
) -> None:
    ns = namespace
    _set_up(webhook, kubectl, _model("llama", ns, "3.21B"), _runtime("rt-small", ns, ("500M", "2B")))
    _blind(webhook, ns)
    reader = _reader(webhook)
    full_listings = reader.full_listings
    created = kubectl.create(_runtime("rt-fits", ns, ("2B", "4B")))
    assert created.returncode == 0, created.stderr
    allowed = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)
    assert (allowed.returncode, warnings_of(allowed)) == (0, [AUTO_SELECTED_FITS]), allowed.stderr
    assert reader.full_listings == full_listings  # one runtime fetched, not every runtime listed
    assert find_named_runtime(_live_catalog(webhook), ns, "rt-fits", None) is None


def test_a_denial_repeated_against_unchanged_runtimes_is_not_decoded_again_and_a_change_is_seen(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str
) -> None:
    ns = namespace
    _set_up(webhook, kubectl, _model("llama", ns, "3.21B"), _runtime("rt-small", ns, ("500M", "2B")))
    reader = _reader(webhook)
    held = reader.listings_held_as_before
    for name in ("first", "second", "third"):
        denied = kubectl.create(isvc(name, ns, "llama"), dry_run=True)
        assert denied.returncode == 1, denied.stderr
    assert reader.listings_held_as_before == held + 2  # the first listing was decoded and compared
    _blind(webhook, ns)
    created = kubectl.create(_runtime("rt-fits", ns, ("2B", "4B")))
    assert created.returncode == 0, created.stderr
    allowed = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)
    assert (allowed.returncode, warnings_of(allowed)) == (0, [AUTO_SELECTED_FITS]), allowed.stderr
    assert reader.listings_held_as_before == held + 2


def test_a_runtime_whose_labels_changed_is_held_as_indexed_and_not_read_again(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str
) -> None:
    ns = namespace
    _set_up(webhook, kubectl, _model("llama", ns, "3.21B"), _runtime("rt-small", ns, ("500M", "2B")))
    _blind(webhook, ns)
    reader = _reader(webhook)
    fetched = reader.runtimes_fetched
    labelled = kubectl("label", "servingruntime", "rt-small", "-n", ns, "team=serving")
    assert labelled.returncode == 0, labelled.stderr
    denied = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)
    assert denied.returncode == 1
    assert reader.runtimes_fetched == fetched  # same uid and generation: the indexed spec is the stored one
    resized = kubectl(
        "patch", "servingruntime", "rt-small", "-n", ns, "--type=merge", "-p",
        '{"spec": {"modelSizeRange": {"max": "4B"}}}',
    )  # fmt: skip
    assert resized.returncode == 0, resized.stderr
    allowed = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)
    assert allowed.returncode == 0, allowed.stderr
    assert reader.runtimes_fetched == fetched + 1


def test_a_runtime_modified_just_before_is_read_as_it_is_now(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    _set_up(webhook, kubectl, _model("llama", ns, "3.21B"), _runtime("rt", ns, ("500M", "2B")))
    _blind(webhook, ns)

    def resize(low: str, high: str) -> None:
        body = f'{{"spec": {{"modelSizeRange": {{"min": "{low}", "max": "{high}"}}}}}}'
        result = kubectl("patch", "servingruntime", "rt", "-n", ns, "--type=merge", "-p", body)
        assert result.returncode == 0, result.stderr

    resize("8B", "70B")
    denied = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)
    assert denied.returncode == 1
    clusters = cluster_runtime_count(api_client)
    entry = f"{ns}/rt (model size 3.21B is outside supported range [8B, 70B])"
    assert denied.stderr.endswith(denial(_no_runtime(ns, "llama", 1, clusters, [entry]))), denied.stderr
    resize("2B", "4B")
    allowed = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)
    assert allowed.returncode == 0, allowed.stderr
    profile = find_named_runtime(_live_catalog(webhook), ns, "rt", None)
    assert profile is not None
    assert profile.range_text == "[500M, 2B]"


def test_a_runtime_deleted_just_before_is_absent(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    _set_up(
        webhook,
        kubectl,
        _model("llama", ns, "3.21B"),
        _runtime("rt-a", ns, ("500M", "2B")),
        _runtime("rt-b", ns, ("8B", "70B")),
    )
    _blind(webhook, ns)
    delete(api_client, "ServingRuntime", "rt-b", ns)
    denied = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)
    assert denied.returncode == 1
    clusters = cluster_runtime_count(api_client)
    entry = f"{ns}/rt-a (model size 3.21B is outside supported range [500M, 2B])"
    assert denied.stderr.endswith(denial(_no_runtime(ns, "llama", 1, clusters, [entry]))), denied.stderr
    assert find_named_runtime(_live_catalog(webhook), ns, "rt-b", None) is not None


def test_a_runtime_too_large_to_read_is_absent_for_the_confirming_read_too(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    _set_up(webhook, kubectl, _model("llama", ns, "3.21B"), _runtime("rt-small", ns, ("500M", "2B")))
    _blind(webhook, ns)
    huge = _runtime("rt-huge", ns, ("2B", "4B"))
    entries = huge["spec"]["supportedModelFormats"]
    entries.extend(copy.deepcopy(entries[0]) for _ in range(MAX_FORMAT_ENTRIES))
    created = kubectl.create(huge)
    assert created.returncode == 0, created.stderr
    clusters = cluster_runtime_count(api_client)
    entry = f"{ns}/rt-small (model size 3.21B is outside supported range [500M, 2B])"
    for name in ("svc", "again"):  # the second time, the reader remembers it cannot read it
        denied = kubectl.create(isvc(name, ns, "llama"), dry_run=True)
        assert denied.returncode == 1
        assert denied.stderr.endswith(denial(_no_runtime(ns, "llama", 1, clusters, [entry]))), denied.stderr


def test_more_changes_than_fetched_one_by_one_are_read_by_one_full_listing(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    _set_up(webhook, kubectl, _model("llama", ns, "3.21B"), _model("huge", ns, "500B"))
    _blind(webhook, ns)
    reader = _reader(webhook)
    full_listings = reader.full_listings
    count = MAX_RUNTIME_FETCHES + 1
    ranges = [("500M", "2B")] * (count - 1) + [("2B", "4B")]
    created = kubectl.create(*(_runtime(f"rt-{i:02d}", ns, r) for i, r in enumerate(ranges)))
    assert created.returncode == 0, created.stderr
    allowed = kubectl.create(isvc("svc", ns, "llama"), dry_run=True)  # only the last one fits
    assert allowed.returncode == 0, allowed.stderr
    denied = kubectl.create(isvc("svc", ns, "huge"), dry_run=True)
    assert denied.returncode == 1
    clusters = cluster_runtime_count(api_client)
    assert f"(checked {count + clusters} runtimes: {count} namespace-scoped, " in denied.stderr
    assert reader.full_listings == full_listings + 2


# --- readiness, failure policies, registration ------------------------------------------------------------


def test_until_indexed_the_webhook_errs_and_the_failure_policy_decides(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str
) -> None:
    controller = webhook.operator.controller
    assert controller is not None
    webhook.call(_clear(controller.ready))
    try:
        refused = kubectl.create(isvc("svc", namespace, "ghost"))
        assert refused.returncode == 1
        assert f'failed calling webhook "{ISVC_WEBHOOK}"' in refused.stderr
        assert "denied the request" not in refused.stderr
        # The size webhooks fail open (Ignore): created, without the warning.
        model = kubectl.create(objects.model("sized", namespace=namespace, size="4b"))
        assert (model.returncode, warnings_of(model)) == (0, []), model.stderr
    finally:
        webhook.call(_set(controller.ready))
    assert admission_count(webhook, "InferenceService") >= 1


async def _clear(event: Any) -> None:
    event.clear()


async def _set(event: Any) -> None:
    event.set()


def test_a_drained_replica_is_not_ready_and_still_answers_until_it_stops(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str
) -> None:
    operator = webhook.operator
    assert operator.webhook is not None
    assert operator.waiting_for() is None

    async def drain() -> None:
        operator.drain()

    webhook.call(drain())
    assert operator.waiting_for() == "stopping"
    assert operator.webhook.draining
    for name in ("one", "two"):  # each answer on a connection of its own
        denied = kubectl.create(isvc(name, namespace, "ghost"), dry_run=True)
        assert "denied the request: model ghost not found" in denied.stderr, denied.stderr


def test_configuration_is_named_by_instance_configurable_and_removed_on_stop(
    running_operator: Any, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    admission: Any = client.AdmissionregistrationV1Api(api_client)
    selector = {"matchLabels": {"ome-selector-test": namespace}}
    instance = f"conf{uuid.uuid4().hex[:8]}"
    config = WebhookConfig(
        bind_address=LOCAL,
        managed_name="ome-selector-test",
        instance=instance,
        failure_policy="Ignore",
        timeout_seconds=4,
        namespace_selector=selector,
    )
    first = running_operator(webhook=config)
    assert first.operator.webhook is not None
    name = first.operator.webhook.configuration_name
    assert name == f"ome-selector-test-local-{instance}"
    stored = admission.read_validating_webhook_configuration(name)
    assert stored.webhooks[0].name == ISVC_WEBHOOK
    for hook in stored.webhooks:
        # DELETE of models and runtimes waits 3 s at most (SPEC §7).
        assert hook.timeout_seconds == (3 if hook.name.endswith("-delete.ome-selector.ome.io") else 4)
        assert hook.namespace_selector.match_labels == selector["matchLabels"]
        assert hook.failure_policy == "Ignore"
        assert hook.client_config.url.startswith("https://127.0.0.1:")
        assert hook.side_effects == "None"

    # The namespace selector: this namespace is not labelled, so nothing is checked here yet.
    unchecked = kubectl.create(isvc("a", namespace, "ghost"))
    assert unchecked.returncode == 0, unchecked.stderr
    assert kubectl("label", "namespace", namespace, f"ome-selector-test={namespace}").returncode == 0

    def denied() -> bool:
        result = kubectl.create(isvc("b", namespace, "ghost"), dry_run=True)
        return "denied the request: model ghost not found" in result.stderr

    eventually(denied, what="a denial once the namespace is labelled")

    first.stop()
    gone = [c.metadata.name for c in admission.list_validating_webhook_configuration().items]
    assert name not in gone
    second = running_operator(webhook=config)  # the same instance: the same name, found again
    assert second.operator.webhook is not None
    assert second.operator.webhook.configuration_name == name
    assert admission.read_validating_webhook_configuration(name).metadata.labels == {
        "app.kubernetes.io/name": "ome-selector",
        "app.kubernetes.io/managed-by": "ome-selector",
        "ome-selector.ome.io/local": "true",
    }


def test_latency_is_recorded_by_kind_and_answer(
    webhook: OperatorThread, kubectl: Kubectl, namespace: str
) -> None:
    kubectl.create(isvc("x", namespace, "ghost"))
    registry = webhook.operator.metrics.registry
    denied = registry.get_sample_value(
        "ome_selector_admission_duration_seconds_count", {"kind": "InferenceService", "allowed": "false"}
    )
    assert denied == 1
