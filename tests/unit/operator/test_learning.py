"""The operator's model-metadata learning, without a cluster: which models are candidates, and the retry
schedule on a fake clock (30 s, 2 min, then never more than one attempt per model per 10 minutes), a full
listing read in pages; against a stand-in API, that events and log lines are escaped with the storage URI cut
to 256 characters (SPEC §10.4), that a failure to write is a failure like any other (SPEC §10.5), and that
model reads run one child process at a time (SPEC §10.7)."""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from hub_standin import Repo, hub_standin
from hypothesis import given
from hypothesis import strategies as st

from harness.model_folders import write_json, write_safetensors
from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.kube.objects import ApiError, ConflictError, Objects
from ome_selector.modelfiles import LEARNABLE_FIELDS, ModelFileError, ModelMetadata, NameVersion
from ome_selector.operator.learning import (
    DEFAULT_RETRY_DELAYS,
    OME_SKIP_ANNOTATION,
    SKIP_ANNOTATION,
    Candidate,
    LearningConfig,
    ModelMetadataLearner,
    ModelReader,
    RetrySchedule,
    _duration,
    candidate,
    may_use_token,
)
from ome_selector.operator.metrics import Metrics
from ome_selector.operator.modelreader import ModelReaderProcess
from ome_selector.selection.messages import escape_controls

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
        # SPEC §10 (v5): OME's own opt-out is honoured alike
        pytest.param(_model(annotations={OME_SKIP_ANNOTATION: "true"}), id="OME's opt-out"),
        pytest.param(_model(annotations={OME_SKIP_ANNOTATION: "TRUE"}), id="OME's opt-out in any case"),
        pytest.param(_model(annotations={OME_SKIP_ANNOTATION: "True"}), id="OME's opt-out as True"),
        pytest.param(
            _model(annotations={SKIP_ANNOTATION: "false", OME_SKIP_ANNOTATION: "true"}), id="either opts out"
        ),
        pytest.param(_model(deleting=True), id="being deleted"),
        pytest.param(_model("ServingRuntime"), id="not a model"),
        pytest.param({"kind": "ClusterBaseModel", "metadata": {}}, id="no name"),
    ],
)
def test_not_candidates(body: dict[str, Any]) -> None:
    assert candidate(body) is None


@pytest.mark.parametrize("value", ["false", "", "yes", None])
@pytest.mark.parametrize("annotation", [SKIP_ANNOTATION, OME_SKIP_ANNOTATION])
def test_only_true_opts_out(annotation: str, value: Any) -> None:
    assert candidate(_model(annotations={annotation: value})) is not None


def test_the_ome_skip_annotation_is_ome_s_key() -> None:
    assert OME_SKIP_ANNOTATION == "ome.oracle.com/skip-config-parsing"
    assert candidate(_model(annotations={"ome.io/skip-config-parsing": "true"})) is not None  # not OME's key


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


# --- one attempt, against a stand-in API --------------------------------------------------------------------


class StandInObjects:
    """The calls the learner makes, on models kept in memory; ``get_error``, ``patch_errors`` (one per call,
    the last repeated) make them fail; every event recorded is kept."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = {(body["kind"], body["metadata"].get("namespace"), body["metadata"]["name"]): body
                       for body in bodies}  # fmt: skip
        self.get_error: Exception | None = None
        self.patch_errors: list[Exception] = []
        self.patches: list[dict[str, Any]] = []
        self.events: list[tuple[str, str, str]] = []

    async def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
        if self.get_error is not None:
            raise self.get_error
        body = self.bodies.get((kind.value, namespace, name))
        return copy.deepcopy(body) if body is not None else None

    async def patch(
        self, kind: Kind, namespace: str | None, name: str, patch: dict[str, Any], *, field_manager: str
    ) -> dict[str, Any]:
        self.patches.append(patch)
        if self.patch_errors:
            raise self.patch_errors.pop(0) if len(self.patch_errors) > 1 else self.patch_errors[0]
        body = self.bodies[(kind.value, namespace, name)]
        body["spec"] |= patch["spec"]
        return copy.deepcopy(body)

    async def create_event(
        self,
        kind: Kind,
        involved: dict[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        component: str,
        instance: str,
    ) -> None:
        self.events.append((type_, reason, message))


LLAMA_METADATA = ModelMetadata(
    source="hf://meta-llama/Llama-3.2-1B",
    parameter_count=1_235_814_400,
    estimated=False,
    model_format=NameVersion("safetensors", "1.0.0"),
    architecture="LlamaForCausalLM",
    framework=NameVersion("transformers", "4.45.0"),
    quantization=None,
    max_tokens=131072,
    files=(),
)


async def _learn_once(
    objects: StandInObjects,
    *,
    read: ModelReader | None = None,
    config: LearningConfig | None = None,
    reader: ModelReaderProcess | None = None,
    metrics: Metrics | None = None,
) -> ModelMetadataLearner:
    """Observe every model of ``objects`` and run the attempts they start (retries wait for their time)."""
    learner = ModelMetadataLearner(
        cast(Objects, objects),
        metrics or Metrics(),
        config or LearningConfig(),
        instance="test",
        may_write=lambda: True,
        read=read,
    )
    if reader is not None:
        learner.reader = reader
    learner.start()
    try:
        for body in list(objects.bodies.values()):
            learner.observe(body)
        await asyncio.wait_for(learner.wait_idle(), timeout=60)
    finally:
        await learner.stop()
    return learner


def _results(metrics: Metrics, result: str) -> float | None:
    return metrics.registry.get_sample_value("ome_selector_model_metadata_total", {"result": result})


def _api_errors(metrics: Metrics, operation: str) -> float | None:
    return metrics.registry.get_sample_value("ome_selector_api_errors_total", {"operation": operation})


def _no_raw_control(text: str) -> None:
    assert [char for char in text if escape_controls(char) != char] == []


def _reading(error: Exception) -> ModelReader:
    async def read(uri: str, token: str | None) -> ModelMetadata:
        raise error

    return read


async def _read_llama(uri: str, token: str | None) -> ModelMetadata:
    return LLAMA_METADATA


#: Characters of SPEC §10.4's set, how events and log lines write them (§7's escapes), and how a reason
#: between "a" and "b" shows them (a ModelFileError's reason is one line: whitespace becomes one space).
HOSTILE = [
    pytest.param("\x1b", r"\x1b", r"a\x1bb", id="C0-ESC"),
    pytest.param("\n", r"\n", "a b", id="C0-LF"),
    pytest.param("\x7f", r"\x7f", r"a\x7fb", id="DEL"),
    pytest.param("\x9b", r"\x9b", r"a\x9bb", id="C1-CSI"),
    pytest.param("\u061c", r"\u061c", r"a\u061cb", id="ALM"),
    pytest.param("\u200e", r"\u200e", r"a\u200eb", id="LRM"),
    pytest.param("\u202e", r"\u202e", r"a\u202eb", id="RLO"),
    pytest.param("\u2069", r"\u2069", r"a\u2069b", id="PDI"),
    pytest.param("\u2029", r"\u2029", "a b", id="PARAGRAPH-SEPARATOR"),
]


@pytest.mark.parametrize(("char", "escaped", "reason"), HOSTILE)
def test_a_failure_event_and_log_line_are_escaped(
    char: str, escaped: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    uri = f"hf://org/m{char}x"
    objects = StandInObjects(_model(uri=uri))
    error = ModelFileError(f"{uri}/config.json", f"a{char}b")
    with caplog.at_level(logging.WARNING, logger="ome_selector.operator.learning"):
        asyncio.run(_learn_once(objects, read=_reading(error)))
    shown = f"hf://org/m{escaped}x/config.json: {reason}"
    assert objects.events == [
        (
            "Warning",
            "ModelMetadataUnavailable",
            f"Cannot read the model's files: {shown}; next attempt in 30s",
        )
    ]
    (line,) = [record.getMessage() for record in caplog.records if "cannot learn" in record.getMessage()]
    assert (
        line == f"ClusterBaseModel llama: cannot learn its metadata (attempt 1): {shown}; next attempt in 30s"
    )


@pytest.mark.parametrize(("char", "escaped", "reason"), HOSTILE)
def test_a_learned_event_and_log_line_are_escaped(
    char: str, escaped: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    uri = f"hf://org/m{char}x"
    objects = StandInObjects(_model(uri=uri))
    with caplog.at_level(logging.INFO, logger="ome_selector.operator.learning"):
        asyncio.run(_learn_once(objects, read=_read_llama))
    ((type_, reason, message),) = objects.events
    assert (type_, reason) == ("Normal", "ModelMetadataLearned")
    assert message.startswith(f"Learned from hf://org/m{escaped}x: modelParameterSize 1.24B")
    (line,) = [record.getMessage() for record in caplog.records if "learned from" in record.getMessage()]
    assert line.startswith(f"ClusterBaseModel llama: learned from hf://org/m{escaped}x: ")
    for text in (message, line):
        _no_raw_control(text)


#: A storage URI far over 256 characters, a bidi control early in it: escaped first, then cut (SPEC §10.4).
LONG_URI = "hf://org/\u202e" + "a" * 3000
LONG_SHOWN = ("hf://org/\\u202e" + "a" * 3000)[:255] + "…"


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        pytest.param(LONG_URI, LONG_SHOWN, id="the model"),
        pytest.param(f"{LONG_URI}/config.json", f"{LONG_SHOWN}/config.json", id="a file of the model"),
        pytest.param(LONG_URI[:2048], LONG_SHOWN, id="the model as the child cuts it"),
    ],
)
def test_a_failure_cuts_the_storage_uri_at_256_characters(
    location: str, shown: str, caplog: pytest.LogCaptureFixture
) -> None:
    objects = StandInObjects(_model(uri=LONG_URI))
    with caplog.at_level(logging.WARNING, logger="ome_selector.operator.learning"):
        asyncio.run(_learn_once(objects, read=_reading(ModelFileError(location, "not a Hugging Face URI"))))
    ((_, _, message),) = objects.events
    assert message == f"Cannot read the model's files: {shown}: not a Hugging Face URI; next attempt in 30s"
    (line,) = [record.getMessage() for record in caplog.records if "cannot learn" in record.getMessage()]
    assert line.endswith(f": {shown}: not a Hugging Face URI; next attempt in 30s")


def test_a_learned_event_cuts_the_storage_uri_at_256_characters(caplog: pytest.LogCaptureFixture) -> None:
    objects = StandInObjects(_model(uri=LONG_URI))
    with caplog.at_level(logging.INFO, logger="ome_selector.operator.learning"):
        asyncio.run(_learn_once(objects, read=_read_llama))
    ((_, _, message),) = objects.events
    assert message.startswith(f"Learned from {LONG_SHOWN}: modelParameterSize 1.24B, ")
    (line,) = [record.getMessage() for record in caplog.records if "learned from" in record.getMessage()]
    assert line.startswith(f"ClusterBaseModel llama: learned from {LONG_SHOWN}: modelParameterSize")


def test_a_failure_message_stays_within_1024_characters() -> None:
    objects = StandInObjects(_model(uri=LONG_URI))
    error = ModelFileError(f"{LONG_URI}/{'b' * 1000}.safetensors", "\u202e" * 2000)
    asyncio.run(_learn_once(objects, read=_reading(error)))
    ((_, _, message),) = objects.events
    assert len(message) == 1024
    assert message.startswith(f"Cannot read the model's files: {LONG_SHOWN}/bbb")
    assert message.endswith("…; next attempt in 30s")
    _no_raw_control(message)


# --- failures to write are failures (SPEC §10.5) ------------------------------------------------------------


def _api_error(status: int, reason: str) -> ApiError:
    return ApiError(status=status, reason=reason)


@pytest.mark.parametrize(
    ("get_error", "patch_errors", "reason", "api_errors"),
    [
        pytest.param(None, [_api_error(500, "Internal Server Error")],
                     "the API answered 500 Internal Server Error", {"read": 0, "patch": 1}, id="patch-500"),
        pytest.param(None, [_api_error(403, "Forbidden")],
                     "the API answered 403 Forbidden", {"read": 0, "patch": 1}, id="patch-403"),
        pytest.param(None, [ConflictError("llama")],
                     "it changed 5 times while it was patched", {"read": 0, "patch": 0}, id="conflicts"),
        pytest.param(_api_error(503, "Service Unavailable"), [],
                     "the API answered 503 Service Unavailable", {"read": 1, "patch": 0}, id="read-503"),
        pytest.param(None, [TimeoutError("the API did not answer")],
                     "TimeoutError: the API did not answer", {"read": 0, "patch": 0}, id="patch-timeout"),
        pytest.param(None, [ValueError("bad \x1b[2J\u202e answer")],
                     "ValueError: bad \\x1b[2J\\u202e answer", {"read": 0, "patch": 0}, id="anything-raised"),
    ],
)  # fmt: skip
def test_a_failure_to_write_is_an_event_a_failed_result_and_the_slow_schedule(
    get_error: Exception | None,
    patch_errors: list[Exception],
    reason: str,
    api_errors: dict[str, int],
    caplog: pytest.LogCaptureFixture,
) -> None:
    objects = StandInObjects(_model())
    objects.get_error = get_error
    objects.patch_errors = list(patch_errors)
    reads: list[str] = []

    async def read(uri: str, token: str | None) -> ModelMetadata:
        reads.append(uri)
        return LLAMA_METADATA

    metrics = Metrics()

    async def attempt() -> tuple[ModelMetadataLearner, float]:
        learner = await _learn_once(objects, read=read, metrics=metrics)
        return learner, learner.schedule.due(KEY) - asyncio.get_running_loop().time()

    with caplog.at_level(logging.WARNING, logger="ome_selector.operator.learning"):
        learner, wait = asyncio.run(attempt())
    assert objects.events == [
        (
            "Warning",
            "ModelMetadataUnavailable",
            f"Cannot set the learned fields: {reason}; next attempt in 30s",
        )
    ]
    assert (_results(metrics, "failed"), _results(metrics, "learned")) == (1.0, 0.0)
    # The documented schedule: the next attempt in 30 s, not the work queue's fast backoff.
    assert learner.schedule.failures(KEY) == 1
    assert 25.0 < wait <= 30.0  # 30 s from the failure, seen a moment later (a loaded machine: seconds)
    assert reads == ["hf://meta-llama/Llama-3.2-1B"]
    assert {operation: _api_errors(metrics, operation) for operation in api_errors} == api_errors
    assert len(objects.patches) == (5 if reason.startswith("it changed") else 0 if get_error else 1)
    (line,) = [record.getMessage() for record in caplog.records if "cannot learn" in record.getMessage()]
    assert (
        line
        == f"ClusterBaseModel llama: cannot learn its metadata (attempt 1): {reason}; next attempt in 30s"
    )


def test_after_a_failure_to_write_the_files_are_not_read_again() -> None:
    """What was read is kept: the retry only writes (and a success then clears the schedule)."""
    objects = StandInObjects(_model())
    objects.patch_errors = [_api_error(500, "Internal Server Error")]
    reads: list[str] = []

    async def read(uri: str, token: str | None) -> ModelMetadata:
        reads.append(uri)
        return LLAMA_METADATA

    metrics = Metrics()

    async def twice() -> ModelMetadataLearner:
        learner = ModelMetadataLearner(
            cast(Objects, objects),
            metrics,
            LearningConfig(retry_delays=(0.05,)),
            instance="test",
            may_write=lambda: True,
            read=read,
        )
        learner.start()
        learner.observe(objects.bodies[("ClusterBaseModel", None, "llama")])
        await learner.wait_idle()
        objects.patch_errors = []
        for _ in range(1000):  # at most 10 s; a retry 0.05 s after the failure is done in milliseconds
            await asyncio.sleep(0.01)
            if _results(metrics, "learned"):
                break
        await learner.stop()
        return learner

    learner = asyncio.run(twice())
    assert [event[1] for event in objects.events] == ["ModelMetadataUnavailable", "ModelMetadataLearned"]
    assert reads == ["hf://meta-llama/Llama-3.2-1B"]
    assert (_results(metrics, "failed"), _results(metrics, "learned")) == (1.0, 1.0)
    assert learner.schedule.failures(KEY) == 0


# --- one child at a time (SPEC §10.7) -----------------------------------------------------------------------

#: A stand-in child: notes when it ran (the monotonic clock is the machine's, shared by all processes),
#: long enough for a second child to overlap it, then answers that the model cannot be read.
_TIMED_CHILD = """
import json, sys, time
request = json.load(sys.stdin)
start = time.monotonic()
time.sleep(0.3)
with open(sys.argv[1], "a") as log:
    log.write(f"{start} {time.monotonic()}\\n")
print(json.dumps({"error": {"location": request["uri"], "reason": "stand-in"}}))
"""


def test_two_model_reads_never_run_their_children_at_the_same_time(tmp_path: Path) -> None:
    """Three candidates and three workers: the children still run one after the other."""
    log = tmp_path / "children"
    bodies = [
        _model(uri=f"hf://org/model-{index}") | {"metadata": {"name": f"model-{index}", "uid": str(index)}}
        for index in range(3)
    ]
    objects = StandInObjects(*bodies)
    reader = ModelReaderProcess(command=(sys.executable, "-c", _TIMED_CHILD, str(log)))
    metrics = Metrics()
    config = LearningConfig(concurrency=3)
    asyncio.run(_learn_once(objects, config=config, reader=reader, metrics=metrics))
    runs = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert len(runs) == 3
    for (_, end), (start, _) in itertools.pairwise(runs):
        assert end <= start, f"two children ran at the same time: {runs}"
    assert _results(metrics, "failed") == 3.0
    assert sorted(message for _, _, message in objects.events) == [
        f"Cannot read the model's files: hf://org/model-{index}: stand-in; next attempt in 30s"
        for index in range(3)
    ]


# --- SPEC §10 (v5) through the real child: an NVFP4 export, a malformed hf_quant_config.json ----------------


def test_the_learner_writes_the_logical_size_and_ome_s_quantization_of_a_4bit_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    good, bad = tmp_path / "good", tmp_path / "bad"
    for folder in (good, bad):
        write_json(folder / "config.json", {"architectures": ["LlamaForCausalLM"]})
        write_safetensors(
            folder / "model.safetensors", {"w": ("U8", [1000, 500]), "w_scale": ("F8_E4M3", [1000])}
        )
    write_json(good / "hf_quant_config.json", {"quantization": {"quant_algo": "NVFP4"}})
    (bad / "hf_quant_config.json").write_bytes(b'{"quantization": {"quant_algo": "NVFP4"')
    good_model = _model(uri="hf://nvidia/good", spec={"modelFormat": {"name": "safetensors"}})
    bad_model = _model(uri="hf://nvidia/bad")
    bad_model["metadata"]["name"] = "bad"
    objects = StandInObjects(good_model, bad_model)
    with hub_standin() as hub:
        hub.repos["nvidia/good"] = Repo(good)
        hub.repos["nvidia/bad"] = Repo(bad)
        asyncio.run(
            _learn_once(objects, config=LearningConfig(endpoint=hub.url), reader=ModelReaderProcess())
        )
    # 500,000 bytes of U8 are 1,000,000 4-bit parameters; the scale is not one.
    assert [patch["spec"] for patch in objects.patches] == [
        {"modelParameterSize": "1M", "modelArchitecture": "LlamaForCausalLM", "quantization": "nvfp4"}
    ]
    assert sorted(objects.events) == [
        (
            "Normal",
            "ModelMetadataLearned",
            "Learned from hf://nvidia/good: modelParameterSize 1M, modelArchitecture LlamaForCausalLM, "
            "quantization nvfp4",
        ),
        (
            "Warning",
            "ModelMetadataUnavailable",
            "Cannot read the model's files: hf://nvidia/bad/hf_quant_config.json: invalid JSON: Expecting "
            "',' delimiter at line 1; next attempt in 30s",
        ),
    ]
