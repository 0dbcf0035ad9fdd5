"""The impact of a model or runtime change at admission (SPEC §12), through the real kube-apiserver: the
`Warning:` lines and denials `kubectl` prints for create, apply, delete, with protection and ambiguity
denials, and in `--report-only` mode.

The objects are ServingRuntimes and BaseModels of the test's namespace, so other tests' cluster runtimes
never move these InferenceServices and these changes never move theirs.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness import objects
from harness.kube import eventually
from harness.operator_thread import OperatorThread
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.webhook.config import WebhookConfig
from tests.integration.test_webhook import LOCAL, Kubectl, denial, isvc, warnings_of

RUNTIME_WEBHOOK = "servingruntimes.ome-selector.ome.io"
#: DELETE comes through its own webhook entry (SPEC §7).
RUNTIME_DELETE_WEBHOOK = "servingruntimes-delete.ome-selector.ome.io"
SEE = "; see kubectl ome-selector runtime what-if"
LABEL = "mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0"
ALLOW = 'ome-selector.ome.io/allow-disruption: "true"'


@pytest.fixture
def kubectl(control_plane: Any) -> Kubectl:
    return Kubectl(control_plane)


def cut(text: str) -> str:
    """As SPEC §7 cuts a warning."""
    return text if len(text) <= 256 else text[:255] + "…"


def _held(runner: OperatorThread, kind: str, ns: str, *names: str, present: bool = True) -> None:
    """Wait until the operator's catalog holds (or no longer holds) ``names``: the review reads it."""
    kinds = {k.value: k for k in Kind}

    def seen() -> bool:
        live = runner.operator.indexed_catalog()
        if live is None:
            return False
        scope = ns if kinds[kind].namespaced else None
        return all((ObjectKey(kinds[kind], scope, name) in live) == present for name in names)

    eventually(seen, what=f"{kind} {names} {'held' if present else 'gone'}")


def _stored(runner: OperatorThread, body: dict[str, Any]) -> None:
    """Wait until the operator's catalog holds ``body`` as applied."""
    metadata = body["metadata"]
    key = ObjectKey(Kind(body["kind"]), metadata.get("namespace"), metadata["name"])

    def seen() -> bool:
        live = runner.operator.indexed_catalog()
        stored = live.get(key) if live is not None else None
        wanted = load_resource(body)
        return stored is not None and wanted is not None and stored.spec == wanted.spec

    eventually(seen, what=f"{key} stored")


def _start(running_operator: Any, **webhook: Any) -> OperatorThread:
    report_only = webhook.pop("report_only", False)
    runner: OperatorThread = running_operator(
        webhook=WebhookConfig(bind_address=LOCAL, **webhook), report_only=report_only
    )
    return runner


def _setup(kubectl: Kubectl, runner: OperatorThread, ns: str) -> None:
    created = kubectl.apply(
        objects.model("llama", namespace=ns, size="7B"),
        objects.runtime("rt-a", namespace=ns, size_range=("1B", "10B")),
        isvc("b", ns, "llama"),
        isvc("a", ns, "llama"),
    )
    assert created.returncode == 0, created.stderr
    _held(runner, "InferenceService", ns, "a", "b")
    _held(runner, "ServingRuntime", ns, "rt-a")
    _held(runner, "BaseModel", ns, "llama")


def test_create_apply_and_delete_print_the_impact_and_the_new_ambiguity(
    running_operator: Any, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    runner = _start(running_operator)
    _setup(kubectl, runner, ns)

    better = objects.runtime("rt-b", namespace=ns, size_range=("5B", "20B"), priority=2)
    created = kubectl.apply(better)
    assert created.returncode == 0, created.stderr
    assert warnings_of(created) == [
        "this change moves 2 InferenceService(s): 2 switch runtime "
        f"(e.g. {ns}/a: ServingRuntime/rt-a → ServingRuntime/rt-b){SEE}",
        cut(
            f"SIZE003: ServingRuntime {ns}/rt-a ([1B, 10B]) and ServingRuntime {ns}/rt-b ([5B, 20B]) both "
            f"auto-select {LABEL} models in overlapping size ranges; make the ranges disjoint, or turn "
            "autoSelect off on one of them"
        ),
    ]
    _stored(runner, better)

    # The same object applied again moves nothing and brings no new finding: no warning.
    again = kubectl.apply(better)
    assert (again.returncode, warnings_of(again)) == (0, [])

    # A change the size webhook warns about: its warning first, then the impact's.
    narrowed = objects.runtime("rt-b", namespace=ns, size_range=("8b", "20B"), priority=2)
    edited = kubectl.apply(narrowed)
    assert edited.returncode == 0, edited.stderr
    assert warnings_of(edited) == [
        'spec.modelSizeRange.min "8b" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 8B",
    ]  # "8b" reads as 0: the range still holds 7B, nothing moves
    _stored(runner, narrowed)

    deleted = kubectl("delete", "servingruntime", "rt-b", "-n", ns)
    assert deleted.returncode == 0, deleted.stderr
    assert warnings_of(deleted) == [
        "this change moves 2 InferenceService(s): 2 switch runtime "
        f"(e.g. {ns}/a: ServingRuntime/rt-b → ServingRuntime/rt-a){SEE}",
    ]
    _held(runner, "ServingRuntime", ns, "rt-b", present=False)

    # A model change: disabling it strands both.
    disabled = kubectl.apply(objects.model("llama", namespace=ns, size="7B", disabled=True))
    assert disabled.returncode == 0, disabled.stderr
    assert warnings_of(disabled) == [
        f"this change moves 2 InferenceService(s): 2 lose their runtime (e.g. {ns}/a: ServingRuntime/rt-a → "
        f"none){SEE}"
    ]


def test_protection_denies_until_the_object_is_annotated(
    running_operator: Any, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    runner = _start(running_operator, protect_inference_services=True)
    _setup(kubectl, runner, ns)

    # No client certificate is asked for here (an unverified caller): the request's own namespace is named.
    denied = kubectl("delete", "servingruntime", "rt-a", "-n", ns)
    assert denied.returncode == 1
    message = (
        f"this change leaves 2 InferenceService(s) without a runtime: {ns}/a (RuntimeNotFound); "
        f"{ns}/b (RuntimeNotFound); annotate the ServingRuntime with {ALLOW} to apply it anyway"
    )
    assert denied.stderr.endswith(denial(message, RUNTIME_DELETE_WEBHOOK)), denied.stderr
    assert warnings_of(denied) == [
        f"this change moves 2 InferenceService(s): 2 lose their runtime (e.g. {ns}/a: ServingRuntime/rt-a → "
        f"none){SEE}"
    ]
    # Server-side dry-run is judged the same.
    dry = kubectl("delete", "servingruntime", "rt-a", "-n", ns, "--dry-run=server")
    assert dry.returncode == 1
    assert dry.stderr.endswith(denial(message, RUNTIME_DELETE_WEBHOOK)), dry.stderr

    annotated = kubectl(
        "annotate", "servingruntime", "rt-a", "-n", ns, "ome-selector.ome.io/allow-disruption=true"
    )
    assert (annotated.returncode, warnings_of(annotated)) == (0, []), annotated.stderr
    # The DELETE review reads the annotation on the stored object of the request (SPEC §12).
    allowed = kubectl("delete", "servingruntime", "rt-a", "-n", ns)
    assert allowed.returncode == 0, allowed.stderr
    assert warnings_of(allowed) == [
        f"this change moves 2 InferenceService(s): 2 lose their runtime (e.g. {ns}/a: ServingRuntime/rt-a → "
        f"none){SEE}"
    ]


def test_deny_ambiguous_runtimes_and_report_only(
    running_operator: Any, kubectl: Kubectl, namespace: str, api_client: Any
) -> None:
    ns = namespace
    runner = _start(running_operator, deny_ambiguous_runtimes=True, report_only=True)
    _setup(kubectl, runner, ns)

    tie = objects.runtime("rt-c", namespace=ns, size_range=("1B", "10B"))
    denied = kubectl.create(tie)
    assert denied.returncode == 1
    rank = cut(
        f"RANK001: BaseModel {ns}/llama (7B): ServingRuntime {ns}/rt-a and ServingRuntime {ns}/rt-c tie on "
        "score 2 and size distance, so the name picks rt-a; raise the priority of the one that should serve "
        "it, or give them different modelSizeRanges"
    )
    size = cut(
        f"SIZE003: ServingRuntime {ns}/rt-a ([1B, 10B]) and ServingRuntime {ns}/rt-c ([1B, 10B]) both "
        f"auto-select {LABEL} models in overlapping size ranges; make the ranges disjoint, or turn "
        "autoSelect off on one of them"
    )
    assert warnings_of(denied) == [rank, size]
    assert denied.stderr.endswith(denial(f"{rank}; {size}", RUNTIME_WEBHOOK)), denied.stderr

    # A runtime that overlaps nothing and wins nothing: allowed, no warning (report-only still reviews).
    apart = objects.runtime("rt-far", namespace=ns, size_range=("30B", "40B"))
    allowed = kubectl.create(apart)
    assert (allowed.returncode, warnings_of(allowed)) == (0, []), allowed.stderr
