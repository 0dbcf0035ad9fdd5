"""The operator's model-metadata learning, without a cluster: which models are candidates, and the retry
schedule on a fake clock (30 s, 2 min, then never more than one attempt per model per 10 minutes), a full
listing read in pages."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.kube.objects import Objects
from ome_selector.modelfiles import LEARNABLE_FIELDS
from ome_selector.operator.learning import (
    DEFAULT_RETRY_DELAYS,
    SKIP_ANNOTATION,
    Candidate,
    LearningConfig,
    ModelMetadataLearner,
    RetrySchedule,
    _duration,
    candidate,
    may_use_token,
)
from ome_selector.operator.metrics import Metrics

KEY = ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "llama")
OTHER = ObjectKey(Kind.BASE_MODEL, "team-a", "qwen")


def test_the_schedule_backs_off_then_tries_every_ten_minutes() -> None:
    schedule = RetrySchedule()
    assert schedule.due(KEY) == 0.0
    now = 1000.0
    waits = []
    for _ in range(6):
        waits.append(schedule.failed(KEY, now))
        assert schedule.due(KEY) == now + waits[-1]
        now = schedule.due(KEY)  # the next attempt happens exactly when due, and fails again
    assert waits == [30.0, 120.0, 600.0, 600.0, 600.0, 600.0]
    assert schedule.failures(KEY) == 6
    assert schedule.due(OTHER) == 0.0  # per model


def test_success_starts_over() -> None:
    schedule = RetrySchedule()
    for now in (0.0, 30.0, 150.0):
        schedule.failed(KEY, now)
    schedule.succeeded(KEY)
    assert (schedule.due(KEY), schedule.failures(KEY)) == (0.0, 0)
    assert schedule.failed(KEY, 5000.0) == 30.0


@given(st.lists(st.floats(min_value=0, max_value=10_000), min_size=1, max_size=20))
def test_after_three_failures_attempts_are_at_least_ten_minutes_apart(gaps: list[float]) -> None:
    """Whenever the attempts happen (never before they are due), from the third failure on the next one is
    at least 600 s later."""
    schedule = RetrySchedule()
    now = 0.0
    attempts = [now]
    for gap in gaps:
        schedule.failed(KEY, now)
        now = schedule.due(KEY) + gap
        attempts.append(now)
    for index in range(3, len(attempts)):
        assert attempts[index] - attempts[index - 1] >= 600.0 - 1e-6  # float sums


@pytest.mark.parametrize(
    ("seconds", "text"), [(30.0, "30s"), (120.0, "2m"), (600.0, "10m"), (0.5, "0.5s"), (90.0, "90s")]
)
def test_delays_are_written_as_events_say_them(seconds: float, text: str) -> None:
    assert _duration(seconds) == text


def test_custom_delays_repeat_the_last() -> None:
    schedule = RetrySchedule((0.5, 1.0))
    assert [schedule.failed(KEY, 0.0) for _ in range(4)] == [0.5, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "config",
    [{"concurrency": 0}, {"retry_delays": ()}, {"retry_delays": (30.0, 0.0)}],
)
def test_config_is_checked(config: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be"):
        LearningConfig(**config)


def test_the_default_delays_are_the_documented_ones() -> None:
    assert LearningConfig().retry_delays == DEFAULT_RETRY_DELAYS == (30.0, 120.0, 600.0)


# --- candidates ---------------------------------------------------------------------------------------------


def _model(
    kind: str = "ClusterBaseModel",
    *,
    uri: Any = "hf://meta-llama/Llama-3.2-1B",
    spec: dict[str, Any] | None = None,
    annotations: dict[str, Any] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "llama", "uid": "u-1", "resourceVersion": "7"}
    if kind == "BaseModel":
        metadata["namespace"] = "team-a"
    if annotations is not None:
        metadata["annotations"] = annotations
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    body_spec = {"storage": {"storageUri": uri}} | (spec or {})
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata, "spec": body_spec}


COMPLETE = {
    "modelParameterSize": "1.24B",
    "modelFormat": {"name": "safetensors", "version": "1.0.0"},
    "modelArchitecture": "LlamaForCausalLM",
    "modelFramework": {"name": "transformers", "version": "4.45.0"},
    "quantization": "fp8",
    "maxTokens": 131072,
}


def test_a_hub_model_lacking_fields_is_a_candidate() -> None:
    assert candidate(_model()) == Candidate(
        KEY, "hf://meta-llama/Llama-3.2-1B", "u-1", "7", missing=LEARNABLE_FIELDS
    )
    found = candidate(_model("BaseModel", spec={"modelParameterSize": "1B"}))
    assert found is not None
    assert found.key == ObjectKey(Kind.BASE_MODEL, "team-a", "llama")
    assert "modelParameterSize" not in found.missing
    assert found.involved == {
        "metadata": {"name": "llama", "namespace": "team-a", "uid": "u-1", "resourceVersion": "7"}
    }


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(_model(spec=COMPLETE), id="nothing lacking"),
        pytest.param(_model(uri="s3://bucket/llama"), id="not on the Hub"),
        pytest.param(_model(uri="/etc"), id="a local path is never read"),
        pytest.param(_model(uri=None), id="no storage URI"),
        pytest.param(_model(uri=["hf://a/b"]), id="a storage URI that is not a string"),
        pytest.param(_model(annotations={SKIP_ANNOTATION: "true"}), id="opted out"),
        pytest.param(_model(annotations={SKIP_ANNOTATION: " True "}), id="opted out in any case"),
        pytest.param(_model(deleting=True), id="being deleted"),
        pytest.param(_model("ServingRuntime"), id="not a model"),
        pytest.param({"kind": "ClusterBaseModel", "metadata": {}}, id="no name"),
    ],
)
def test_not_candidates(body: dict[str, Any]) -> None:
    assert candidate(body) is None


@pytest.mark.parametrize("value", ["false", "", "yes", None])
def test_only_true_opts_out(value: Any) -> None:
    assert candidate(_model(annotations={SKIP_ANNOTATION: value})) is not None


# --- a full listing, a page at a time -----------------------------------------------------------------------


def test_a_listing_read_in_pages_forgets_only_the_models_no_page_held() -> None:
    learner = ModelMetadataLearner(
        cast(Objects, None),  # a follower (may_write false) makes no call
        Metrics(),
        LearningConfig(),
        instance="test",
        may_write=lambda: False,
    )
    llama, qwen = _model(), _model("BaseModel") | {"metadata": {"name": "qwen", "namespace": "team-a"}}
    learner.forget_unlisted(learner.observe_listed([llama, qwen]))
    assert set(learner._candidates) == {KEY, OTHER}
    # The next listing comes in pages: llama, then a runtime; qwen is gone.
    listed = learner.observe_listed([llama])
    listed |= learner.observe_listed([_model("ServingRuntime")])
    assert set(learner._candidates) == {KEY, OTHER}  # nothing is forgotten before the last page
    learner.forget_unlisted(listed)
    assert set(learner._candidates) == {KEY}


# --- who may use the Hub token ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "namespaces", "expected"),
    [
        (ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "llama"), frozenset(), True),
        (ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "llama"), frozenset({"team-a"}), True),
        (ObjectKey(Kind.BASE_MODEL, "team-a", "qwen"), frozenset(), False),
        (ObjectKey(Kind.BASE_MODEL, "team-a", "qwen"), frozenset({"team-a"}), True),
        (ObjectKey(Kind.BASE_MODEL, "team-b", "qwen"), frozenset({"team-a"}), False),
    ],
    ids=["cluster-model", "cluster-model-with-list", "tenant", "opted-in", "other-tenant"],
)
def test_only_cluster_models_and_listed_namespaces_use_the_token(
    key: ObjectKey, namespaces: frozenset[str], expected: bool
) -> None:
    assert may_use_token(key, namespaces) is expected
