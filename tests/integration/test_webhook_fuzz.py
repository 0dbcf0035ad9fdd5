"""The webhook port under fuzzing (SPEC §7 robustness, §8 bounded resources): thousands of generated
malformed and edge AdmissionReviews posted straight to a running operator's webhook port — as anyone who
reaches the port can — get no 5xx, leave RSS and ``/metrics`` bounded, and valid reviews are still answered.

The operator is the real command line in its own process (its RSS is its own), registered with the real
apiserver; the client verifies the server with the CA of that registration.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from harness.controlplane import ControlPlane
from harness.hostile import (
    ENVELOPE_FIELDS,
    WebhookClient,
    client_for,
    metrics_size,
    path_of,
    review,
    rss_bytes,
)
from harness.kube import eventually
from harness.operator_process import RunningOperator, operator_process
from ome_selector.api.resources import Kind

MIB = 1024 * 1024
EXAMPLES = 2000


@pytest.fixture
def webhook_process(control_plane: ControlPlane, api_client: Any) -> Iterator[tuple[RunningOperator, Any]]:
    instance = f"fuzz{uuid.uuid4().hex[:8]}"
    arguments = ["--webhook-bind-address", "127.0.0.1:0", "--instance", instance]
    with operator_process(control_plane, *arguments, name=f"operator-{instance}") as running:
        admission: Any = client.AdmissionregistrationV1Api(api_client)

        def registered() -> Any:
            found = admission.list_validating_webhook_configuration(
                label_selector="ome-selector.ome.io/local=true"
            ).items
            return next((c for c in found if c.metadata.name.endswith(instance)), None)

        yield running, eventually(registered, what="the fuzzed operator's registration")


KINDS = st.sampled_from(list(Kind))
TEXT = st.text(st.characters(codec="utf-8"), max_size=30) | st.sampled_from(
    ["4B\n", "4B\x1b[31m", "\x00", "9" * 65, "1" * 5000, "", "GreaterThan", "1e9"]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(document)
    *parents, last = path.split(".")
    node: Any = document
    for part in parents:
        node = node[part]
    if value is ...:
        node.pop(last, None)
    else:
        node[last] = value
    return document


@st.composite
def malformed(draw: st.DrawFn) -> tuple[str, bytes]:
    kind = draw(KINDS)
    path = path_of(kind)
    document = review(kind)
    shape = draw(st.integers(0, 6))
    if shape == 0:
        return path, draw(st.binary(max_size=200))
    if shape == 1:
        return path, json.dumps(draw(JSON)).encode()
    if shape == 2:  # one envelope field removed or of any type
        return path, json.dumps(
            _set(document, draw(st.sampled_from(ENVELOPE_FIELDS)), draw(JSON | st.just(...)))
        ).encode()
    if shape == 3:  # a kind or resource that does not exist (the metric-label attack)
        field = draw(st.sampled_from(["request.kind.kind", "request.resource.resource"]))
        return path, json.dumps(_set(document, field, draw(TEXT))).encode()
    if shape == 4:  # deep nesting
        levels = draw(st.integers(101, 3000))
        deep = json.dumps(_set(document, "request.object.spec", "DEEP")).encode()
        return path, deep.replace(b'"DEEP"', b"[" * levels + b"]" * levels)
    if shape == 5:  # invalid UTF-8 somewhere
        body = json.dumps(document).encode()
        cut = draw(st.integers(0, len(body)))
        return path, body[:cut] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"])) + body[cut:]
    return "/" + draw(st.text("abcdefghijklmnopqrstuvwxyz-", max_size=20)), json.dumps(document).encode()


@st.composite
def valid(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A well-formed review of one of the five kinds whose object carries hostile values."""
    kind = draw(KINDS)
    metadata: dict[str, Any] = {"name": "fuzzed", "uid": str(uuid.uuid4())}
    if kind.namespaced:
        metadata["namespace"] = "fuzz"
    if kind.is_model:
        spec: dict[str, Any] = {"modelFormat": {"name": draw(TEXT)}, "modelParameterSize": draw(TEXT)}
    elif kind.is_runtime:
        # Short values: a thousand entries of long ones would make a body over 1 MiB, not a valid review.
        entry = {"modelFormat": {"name": draw(TEXT)[:40], "operator": draw(TEXT)[:40]}}
        spec = {
            "supportedModelFormats": [entry] * draw(st.sampled_from([0, 1, 30, 1001])),
            "modelSizeRange": {"min": draw(TEXT), "max": draw(TEXT)},
        }
    else:
        spec = {"model": {"name": draw(TEXT)}, "engine": {"minReplicas": 1}, "runtime": {"name": draw(TEXT)}}
    spec["extra"] = draw(JSON)
    obj = {"apiVersion": "ome.io/v1beta1", "kind": kind.value, "metadata": metadata, "spec": spec}
    return path_of(kind), review(kind, operation=draw(st.sampled_from(["CREATE", "UPDATE"])), obj=obj)


def test_fuzzed_reviews_get_no_5xx_and_leave_memory_and_metrics_bounded(
    webhook_process: tuple[RunningOperator, Any],
) -> None:
    running, configuration = webhook_process
    webhook: WebhookClient = client_for(configuration)
    rss_before = rss_bytes(running.process.pid)
    statuses: dict[int, int] = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.one_of(malformed(), valid().map(lambda pair: (pair[0], pair[1]))))
    def post(request: tuple[str, Any]) -> None:
        path, body = request
        sent = json.dumps(body).encode() if isinstance(body, dict) else body
        status, answer = webhook.post(path, sent)
        statuses[status] = statuses.get(status, 0) + 1
        assert status < 500, (status, answer[:300], sent[:300])
        if isinstance(body, dict):  # well-formed: answered, for this very request
            assert status == 200, answer[:300]
            assert json.loads(answer)["response"]["uid"] == body["request"]["uid"]
        else:
            assert status == 200 or b"\n" not in answer.strip()  # a refusal is one line

    post()
    assert sum(statuses.values()) >= EXAMPLES // 2, statuses
    assert {400, 200} <= set(statuses), statuses
    # Labels come from fixed sets: /metrics cannot grow with what requests carry; neither can memory.
    # (The operator's own requests to the apiserver are left out: which of their fixed verb and status series
    # appear depends on how a loaded apiserver answered at start, not on the reviews.)
    assert metrics_size(running.health_port, excluding=("ome_selector_api_",)) < 30 * 1024
    assert rss_bytes(running.process.pid) - rss_before < 40 * MIB
    # Requests aiohttp itself cannot read: refused, and never a traceback in the log (neither for those nor
    # for any of the reviews above).
    head = b"POST /validate-basemodels HTTP/1.1\r\nHost: fuzz\r\n"
    assert webhook.raw(b"\x00\x01garbage\r\n\r\n").startswith(b"HTTP/1.0 400")
    assert webhook.raw(head + b"X-Long: " + b"a" * 100_000 + b"\r\n\r\n").startswith(b"HTTP/1.0 400")
    assert webhook.raw(head + b"Content-Length: 99999999\r\n\r\n{").startswith(b"HTTP/1.1 413")
    webhook.raw(head + b"Content-Length: 100\r\n\r\n{", wait=0.5)  # the client goes away mid-body
    log = running.log.read_text()
    assert "Traceback" not in log
    assert "malformed admission request(s); the latest: " in log  # one line now and then
    # Still serving: a plain review is answered.
    check = review(Kind.CLUSTER_BASE_MODEL)
    status, answer = webhook.post(path_of(Kind.CLUSTER_BASE_MODEL), json.dumps(check).encode())
    assert (status, json.loads(answer)["response"]["allowed"]) == (200, True)
    webhook.close()
