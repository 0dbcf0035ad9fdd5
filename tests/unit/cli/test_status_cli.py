"""`kubectl ome-selector status` from files: rows, the runtime column, outputs, bad input (live:
tests/integration)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_runner import Run
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.cli.status import StatusRow, Verdicts, status_row
from ome_selector.selection.messages import name_tie, runtime_selected, runtime_specified, selected_runtime


def _isvc(spec: Any = None, conditions: Any = None, **metadata: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "chat", "namespace": "team-a", **metadata},
        "spec": spec if spec is not None else {"model": {"name": "llama"}},
    }
    if conditions is not None:
        body["status"] = {"conditions": conditions}
    return body


def _ready(status: str, reason: str, message: str | None = None) -> dict[str, Any]:
    condition = {"type": "RuntimeReady", "status": status, "reason": reason}
    return condition | ({"message": message} if message is not None else {})


EMPTY = json.dumps({"apiVersion": "v1", "kind": "List", "items": []})
SELECTED = "selected ClusterServingRuntime rt (score 4)"
NAMESPACED = "selected ServingRuntime team-rt (score 2)"
NONE = "no runtime supports model llama"
READY = {"type": "Ready", "status": "True", "reason": "Up", "message": "selected ServingRuntime x (score 9)"}
#: What the selection core derived from the listing (cli.status.verdict_runtimes) for team-a/chat.
CORE_RT: Verdicts = {("team-a", "chat"): (("ClusterServingRuntime", "rt"), ("RuntimeSelected", SELECTED))}
CORE_TEAM_RT: Verdicts = {
    ("team-a", "chat"): (("ServingRuntime", "team-rt"), ("RuntimeSelected", NAMESPACED))
}


@pytest.mark.parametrize(
    ("body", "verdicts", "runtime", "source", "kind", "status", "reason", "message"),
    [
        # auto-selected: the runtime is the core's, shown when the stored condition is its verdict (SPEC §6)
        (
            _isvc(conditions=[READY, _ready("True", "RuntimeSelected", SELECTED)]), CORE_RT,
            "rt", "selected", "ClusterServingRuntime", "True", "RuntimeSelected",
            "selected ClusterServingRuntime rt (score 4)",
        ),
        (
            _isvc(conditions=[_ready("True", "RuntimeSelected", NAMESPACED)]), CORE_TEAM_RT,
            "team-rt", "selected", "ServingRuntime", "True", "RuntimeSelected",
            "selected ServingRuntime team-rt (score 2)",
        ),
        # a condition that is not the verdict (stale, another writer's, no catalog listed): no runtime, no
        # guess from its text
        (
            _isvc(conditions=[_ready("True", "RuntimeSelected", NAMESPACED)]), CORE_RT,
            None, None, None, "True", "RuntimeSelected", NAMESPACED,
        ),
        (
            _isvc(conditions=[_ready("True", "RuntimeSelected", SELECTED)]), {},
            None, None, None, "True", "RuntimeSelected", SELECTED,
        ),
        # named: spec.runtime wins; OME v1.3 writes RuntimeResolved without a message
        (
            _isvc({"model": {"name": "llama"}, "runtime": {"name": "srt", "kind": "ServingRuntime"}},
                  [_ready("True", "RuntimeResolved")]),
            CORE_RT, "srt", "named", "ServingRuntime", "True", "RuntimeResolved", None,
        ),
        (
            _isvc({"runtime": {"name": "srt"}}, [_ready("False", "RuntimeNotFound", "srt not found")]),
            CORE_RT, "srt", "named", None, "False", "RuntimeNotFound", "srt not found",
        ),
        # no runtime: none named, none selected (another condition's message is never read)
        (
            _isvc(conditions=[READY, _ready("False", "RuntimeNotFound", NONE)]),
            CORE_RT, None, None, None, "False", "RuntimeNotFound", NONE,
        ),
        (_isvc(), CORE_RT, None, None, None, None, None, None),
        # anything malformed reads as absent
        (
            _isvc({"model": "m", "runtime": {"name": 7}}, "conditions"), CORE_RT,
            None, None, None, None, None, None,
        ),
        (
            _isvc(conditions=["x", {"type": "RuntimeReady", "status": 1, "message": "selected x (score 1)"}]),
            CORE_RT, None, None, None, None, None, "selected x (score 1)",
        ),
    ],
)  # fmt: skip
def test_a_row_per_inference_service(
    body: dict[str, Any],
    verdicts: Verdicts,
    runtime: str | None,
    source: str | None,
    kind: str | None,
    status: str | None,
    reason: str | None,
    message: str | None,
) -> None:
    model = body["spec"]["model"].get("name") if isinstance(body["spec"].get("model"), dict) else None
    assert status_row(body, verdicts) == StatusRow(
        "team-a", "chat", model, runtime, source, kind, status, reason, message
    )


LISTING = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        _isvc(conditions=[_ready("True", "RuntimeSelected", SELECTED)]),
        _isvc(
            {"model": {"name": "qwen"}, "runtime": {"name": "gone"}},
            [
                _ready(
                    "False",
                    "RuntimeNotFound",
                    "runtime gone not found in namespace ome-demo or at cluster scope",
                )
            ],
            name="pinned",
            namespace="ome-demo",
        ),
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ClusterServingRuntime",
            "metadata": {"name": "rt"},
            "spec": {
                "supportedModelFormats": [
                    {"modelFormat": {"name": "safetensors", "weight": 4}, "autoSelect": True, "priority": 1}
                ]
            },
        },
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ClusterBaseModel",
            "metadata": {"name": "llama"},
            "spec": {"modelFormat": {"name": "safetensors"}},
        },
    ],
}


def test_table_wide_and_json_from_a_saved_listing(kubectl_ome: Run) -> None:
    text = json.dumps(LISTING)
    table = kubectl_ome("status", "-f", "-", stdin=text)
    assert (table.code, table.err) == (0, "")
    assert table.out == (
        "NAMESPACE   NAME     MODEL   RUNTIME   RUNTIMEREADY   REASON\n"
        "ome-demo    pinned   qwen    gone      False          RuntimeNotFound\n"
        "team-a      chat     llama   rt        True           RuntimeSelected\n"
    )
    wide = kubectl_ome("status", "-f", "-", "-n", "team-a", "-o", "wide", stdin=text)
    assert wide.out == (
        "NAME   MODEL   RUNTIME   RUNTIMEREADY   REASON            MESSAGE\n"
        f"chat   llama   rt        True           RuntimeSelected   {SELECTED}\n"
    )
    document = json.loads(kubectl_ome("status", "-f", "-", "-o", "json", stdin=text).out)
    assert document["items"][0] == {
        "namespace": "ome-demo",
        "name": "pinned",
        "model": "qwen",
        "runtime": "gone",
        "runtime_source": "named",
        "runtime_kind": None,
        "status": "False",
        "reason": "RuntimeNotFound",
        "message": "runtime gone not found in namespace ome-demo or at cluster scope",
    }
    assert [item["name"] for item in document["items"]] == ["pinned", "chat"]


def test_the_runtime_of_a_tie_comes_from_the_core_not_the_text(kubectl_ome: Run) -> None:
    """Two runtimes at one score: the condition names the step that decided (SPEC §5); status shows the
    runtime because the core's verdict on the same listing is that condition, and none for one it is not."""
    tied = json.loads(json.dumps(LISTING))
    runner_up = json.loads(json.dumps(tied["items"][2]))
    runner_up["metadata"]["name"] = "rt-b"
    tied["items"].append(runner_up)
    message = "selected ClusterServingRuntime rt (score 4; tied with rt-b on score, first by name)"
    tied["items"][0]["status"]["conditions"] = [_ready("True", "RuntimeSelected", message)]
    result = kubectl_ome("status", "-f", "-", "-n", "team-a", "--no-headers", stdin=json.dumps(tied))
    assert (result.code, result.out, result.err) == (
        0,
        "chat   llama   rt        True           RuntimeSelected\n",
        "",
    )
    # The same text where the catalog selects another runtime: no runtime shown.
    tied["items"][2]["spec"]["supportedModelFormats"][0]["priority"] = 0
    stale = kubectl_ome(
        "status",
        "-f",
        "-",
        "-n",
        "team-a",
        "-o",
        "jsonpath={.items[*].runtime}|{.items[*].message}",
        stdin=json.dumps(tied),
    )
    assert (stale.code, stale.out, stale.err) == (0, f"|{message}", "")


def test_nothing_found_and_bad_input(kubectl_ome: Run) -> None:
    empty = kubectl_ome("status", "-f", "-", "-n", "nowhere", stdin=json.dumps(LISTING))
    assert (empty.code, empty.out, empty.err) == (0, "", "No InferenceServices found in namespace nowhere.\n")
    assert (
        kubectl_ome("status", "-f", "-", "-o", "json", "-n", "x", stdin=EMPTY).out == '{\n  "items": []\n}\n'
    )
    both = kubectl_ome("status", "-f", "-", "-l", "app=chat", stdin="")
    assert (both.code, both.out) == (1, "")
    assert both.err == "error: -l selects from the cluster; it cannot be combined with -f\n"
    broken = kubectl_ome("status", "-f", "-", stdin="{{{")
    assert broken.code == 1
    assert broken.err.startswith("error: <stdin>")
    usage = kubectl_ome("status", "-n", "a", "-A")
    assert usage.code == 1


@given(
    kind=st.sampled_from(["ServingRuntime", "ClusterServingRuntime"]),
    name=st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,60}[a-z0-9])?", fullmatch=True),
    score=st.integers(min_value=0, max_value=10**6),
)
def test_the_selected_runtime_is_read_back_from_its_message(kind: str, name: str, score: int) -> None:
    assert selected_runtime(runtime_selected(kind, name, score)) == (kind, name)
    tie = name_tie("other", sized=True)
    assert selected_runtime(runtime_selected(kind, name, score, tie)) == (kind, name)
    assert selected_runtime(runtime_specified(kind, name)) is None
