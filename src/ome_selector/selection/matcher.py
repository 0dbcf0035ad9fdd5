"""Compatibility of one runtime with one model (SPEC §3, with the entry rules of §9).

:func:`check` runs the checks of SPEC §3 in order — disabled, accelerator classes, formats (the first matching
entry), size — and the auto-selectability rules, and returns a :class:`RuntimeCheck`: the :class:`Step` that
failed (None when the runtime is auto-selectable), the matching entry, its score and priority.

Deciding builds no text. The reason of a failed check is written only when asked for
(:attr:`RuntimeCheck.reason`, or :meth:`RuntimeCheck.reason_within` when the caller keeps only the first
characters): a reason can be long (every entry's mismatches, values as written) and ranking needs none. A
caller that writes many reasons for one model passes one :data:`ClauseMemo` to all of them: runtimes share
most architectures and versions, so each distinct clause of their entries' reasons is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from functools import partial

from ome_selector.api.resources import (
    DiffusionComponent,
    DiffusionPipeline,
    FormatSelector,
    FrameworkSelector,
    ModelSpec,
    SupportedModelFormat,
)
from ome_selector.selection import messages
from ome_selector.selection.profiles import CompiledEntry, ModelProfile, RuntimeProfile
from ome_selector.selection.scoring import entry_score
from ome_selector.selection.version import KNOWN_OPERATORS, Version, parsed_versions_match, version_matches

__all__ = ["ClauseMemo", "RuntimeCheck", "Step", "check", "entry_mismatch_reason", "matching_entry"]

#: The clauses of entry reasons written for one model and one limit, by what each depends on in the entry.
ClauseMemo = dict[tuple[str, Hashable], str]


class Step(IntEnum):
    """The SPEC §3 check a runtime failed. A higher step is a nearer miss: the no-runtime message lists the
    runtimes latest step first (SPEC §5 v3)."""

    #: The model has no ``modelFormat.name``: no check ran.
    MODEL_PENDING = 0
    DISABLED = 1
    ACCELERATOR = 2
    FORMAT = 3
    SIZE = 4
    #: Supports the model, but the matching entry has no ``autoSelect: true`` or its score is not above 0.
    AUTO_SELECT = 5


@dataclass(frozen=True, slots=True)
class RuntimeCheck:
    """The verdict of SPEC §3 for one runtime and one model.

    ``failed`` is the first failing step (None when auto-selectable); ``entry`` is the index of the matching
    entry (None without one), ``score``/``priority`` those of the matching entry (0/None without one).
    """

    profile: RuntimeProfile
    model: ModelProfile
    failed: Step | None
    entry: int | None
    score: int
    priority: int | None

    @property
    def supports_model(self) -> bool:
        """Passes SPEC §3 checks 1–4 (it "declares support")."""
        return self.failed is None or self.failed is Step.AUTO_SELECT

    @property
    def auto_selectable(self) -> bool:
        return self.failed is None

    @property
    def reason(self) -> str:
        """The SPEC §3 reason of the failed step, ``""`` when auto-selectable."""
        return self.reason_within(None)

    def reason_within(self, limit: int | None, clauses: ClauseMemo | None = None) -> str:
        """:attr:`reason`, built only as far as its first ``limit`` characters: a longer reason is cut after
        ``limit`` characters with "…" (and costs no more work than that).

        ``clauses``: entry clauses already written for this model and this limit (see
        :func:`entry_mismatch_reason`)."""
        failed, model, profile = self.failed, self.model, self.profile
        if failed is None:
            return ""
        if failed is Step.MODEL_PENDING:
            return messages.model_pending_reason(model.name, limit)
        if failed is Step.DISABLED:
            return messages.REASON_DISABLED
        if failed is Step.ACCELERATOR:
            return messages.REASON_ACCELERATOR
        if failed is Step.FORMAT:
            memo: ClauseMemo = {} if clauses is None else clauses
            entry_reasons = (entry_mismatch_reason(model.spec, e.entry, limit, memo) for e in profile.entries)
            label = model.label if limit is None else model.label[:limit]
            return messages.format_not_supported_reason(label, entry_reasons, limit)
        if failed is Step.SIZE:
            size = model.spec.model_parameter_size or ""
            return messages.size_outside_reason(size, profile.range_text or "", limit)
        assert self.entry is not None  # AUTO_SELECT: there is a matching entry
        if not profile.entries[self.entry].entry.auto_select:
            return messages.autoselect_disabled_reason(model.format_name, limit)
        return messages.score_reason(self.score)


# --- finding the matching entry -----------------------------------------------------------------------------


def _versions_match(
    operator: str, runtime_version: Version | None, model_version: Version | None, *, given: bool
) -> bool:
    """Versions given on both sides (``given``) must parse and satisfy the operator; absent on both sides
    match (the match key already made presence equal)."""
    if not given:
        return True
    if runtime_version is None or model_version is None:
        return False
    return parsed_versions_match(runtime_version, operator, model_version)


def _compiled_entry_matches(compiled: CompiledEntry, model: ModelProfile) -> bool:
    """Whether an entry with the model's :data:`~.profiles.MatchKey` matches it: versions and pipeline."""
    entry = compiled.entry
    fmt, framework = entry.model_format, entry.model_framework
    _, _, _, has_format_version, _, has_framework_version = model.match_key
    if fmt is not None and not _versions_match(
        fmt.operator, compiled.format_version, model.format_version, given=has_format_version
    ):
        return False
    if framework is not None and not _versions_match(
        framework.operator, compiled.framework_version, model.framework_version, given=has_framework_version
    ):
        return False
    return _pipeline_failure(model.spec.diffusion_pipeline, entry.diffusion_pipeline) is None


def matching_entry(profile: RuntimeProfile, model: ModelProfile) -> int | None:
    """The index of the first entry that matches the model (SPEC §3.3), None when none does.

    Only entries with the model's match key can match; they are indexed, in entry order.
    """
    for index in profile.entries_by_key.get(model.match_key, ()):
        if _compiled_entry_matches(profile.entries[index], model):
            return index
    return None


# --- the runtime
# ----------------------------------------------------------------------------------------------


def check(
    profile: RuntimeProfile, model: ModelProfile, accelerator_classes: Iterable[str] = ()
) -> RuntimeCheck:
    """Run SPEC §3 for one runtime: the first failing check; then auto-selectability."""
    if not model.spec.has_format:
        return RuntimeCheck(profile, model, Step.MODEL_PENDING, None, 0, None)
    index = matching_entry(profile, model)
    entry = profile.entries[index].entry if index is not None else None
    score = entry_score(entry, model.spec) if entry is not None else 0
    priority = entry.priority if entry is not None else None

    failed: Step | None
    if profile.disabled:
        failed = Step.DISABLED
    elif accelerator_classes and not profile.accelerator_classes.issuperset(accelerator_classes):
        failed = Step.ACCELERATOR
    elif entry is None:
        failed = Step.FORMAT
    elif model.size is not None and profile.has_range and not profile.admits_size(model.size):
        failed = Step.SIZE
    elif not entry.auto_select or score <= 0:
        failed = Step.AUTO_SELECT
    else:
        failed = None
    return RuntimeCheck(profile, model, failed, index, score, priority)


# --- reasons of entries (SPEC §9) ---------------------------------------------------------------------------
# A failure is found without writing text; the returned callable writes it when asked for (with the limit of
# :meth:`RuntimeCheck.reason_within`).

_Failure = Callable[[int | None], str]


def _fixed(text: str) -> _Failure:
    return lambda _limit: text


def _component_failure(
    name: str, model: DiffusionComponent | None, runtime: DiffusionComponent | None
) -> _Failure | None:
    if runtime is None:
        return None
    if model is None:
        return partial(messages.component_missing_reason, name)
    if runtime.library and runtime.library != model.library:
        return partial(messages.component_mismatch_reason, name, "library", model.library, runtime.library)
    if runtime.type and runtime.type != model.type:
        return partial(messages.component_mismatch_reason, name, "type", model.type, runtime.type)
    return None


def _components(
    model: DiffusionPipeline, runtime: DiffusionPipeline
) -> Iterator[tuple[str, DiffusionComponent | None, DiffusionComponent | None]]:
    yield "scheduler", model.scheduler, runtime.scheduler
    yield "textEncoder", model.text_encoder, runtime.text_encoder
    yield "tokenizer", model.tokenizer, runtime.tokenizer
    yield "transformer", model.transformer, runtime.transformer
    yield "vae", model.vae, runtime.vae


def _pipeline_failure(model: DiffusionPipeline | None, runtime: DiffusionPipeline | None) -> _Failure | None:
    """The first failing diffusion-pipeline check, None when the entry's pipeline requirements are met."""
    if runtime is None:
        return None
    if model is None:
        return _fixed(messages.PIPELINE_MISSING)
    if runtime.class_name is not None and runtime.class_name != model.class_name:
        model_class = model.class_name if model.class_name is not None else messages.NIL
        return partial(messages.mismatch_reason, "pipeline class", model_class, runtime.class_name)
    for name, model_part, runtime_part in _components(model, runtime):
        failure = _component_failure(name, model_part, runtime_part)
        if failure is not None:
            return failure
    if runtime.additional_components:
        if not model.additional_components:
            return _fixed(messages.ADDITIONAL_COMPONENTS_MISSING)
        for key in sorted(runtime.additional_components):
            model_part = model.additional_components.get(key)
            if model_part is None:
                return partial(messages.additional_component_missing_reason, key)
            failure = _component_failure(key, model_part, runtime.additional_components[key])
            if failure is not None:
                return failure
    return None


def _presence_reason(what: str, model_value: str | None, runtime_value: str | None, limit: int | None) -> str:
    if model_value is not None and runtime_value is not None:
        if model_value == runtime_value:
            return ""
        return messages.mismatch_reason(what, model_value, runtime_value, limit)
    if runtime_value is not None:
        return messages.missing_requirement_reason(what, runtime_value, limit)
    if model_value is not None:
        return messages.unrequired_value_reason(what, model_value, limit)
    return ""


def _version_reason(
    kind: str, selector: FormatSelector | FrameworkSelector, model_version: str | None, limit: int | None
) -> str:
    if selector.version is not None and model_version is not None:
        if selector.operator not in KNOWN_OPERATORS:
            return messages.unknown_version_operator_reason(selector.operator, limit)
        if not version_matches(selector.version, selector.operator, model_version):
            return messages.mismatch_reason(f"{kind} version", model_version, selector.version, limit)
        return ""
    if selector.version is not None:
        return messages.missing_requirement_reason(f"{kind} version", selector.version, limit)
    if model_version is not None:
        return messages.unrequired_version_reason(kind)
    return ""


def _remembered(clauses: ClauseMemo, key: tuple[str, Hashable], write: Callable[[], str]) -> str:
    clause = clauses.get(key)
    if clause is None:
        clause = clauses[key] = write()
    return clause


def _format_clause(model: ModelSpec, fmt: FormatSelector | None, limit: int | None) -> str:
    if fmt is None:
        return ""
    if fmt.name != model.format_name:
        return messages.mismatch_reason("format name", model.format_name, fmt.name, limit)
    model_version = model.model_format.version if model.model_format is not None else None
    return _version_reason("format", fmt, model_version, limit)


def _framework_clause(model: ModelSpec, framework: FrameworkSelector | None, limit: int | None) -> str:
    model_framework = model.model_framework
    if framework is not None and model_framework is not None:
        if framework.name != model_framework.name:
            return messages.mismatch_reason("framework name", model_framework.name, framework.name, limit)
        return _version_reason("framework", framework, model_framework.version, limit)
    if framework is not None:
        return messages.missing_requirement_reason("framework", framework.name, limit)
    if model_framework is not None:
        return messages.unrequired_value_reason("framework", model_framework.name, limit)
    return ""


def _selector_key(selector: FormatSelector | FrameworkSelector | None) -> Hashable:
    return (selector.name, selector.version, selector.operator) if selector is not None else None


def entry_mismatch_reason(
    model: ModelSpec, entry: SupportedModelFormat, limit: int | None = None, clauses: ClauseMemo | None = None
) -> str:
    """Every mismatch of ``entry`` joined by ", ", in upstream's order and wording (SPEC §9). With ``limit``,
    no value is looked at beyond its first ``limit`` characters.

    Each clause but the pipeline's depends on the model and one field of the entry (its architecture,
    quantization, format or framework): ``clauses`` keeps them by that field, for one model and one limit, so
    entries that share it reuse the text.
    """
    memo: ClauseMemo = {} if clauses is None else clauses
    reasons: list[str] = []
    if entry.diffusion_pipeline is not None:
        pipeline = _pipeline_failure(model.diffusion_pipeline, entry.diffusion_pipeline)
        if pipeline is not None:
            reasons.append(pipeline(limit))
    architecture, quantization = entry.model_architecture, entry.quantization
    fmt, framework = entry.model_format, entry.model_framework
    reasons.append(
        _remembered(
            memo,
            ("architecture", architecture),
            lambda: _presence_reason("architecture", model.model_architecture, architecture, limit),
        )
    )
    reasons.append(
        _remembered(
            memo,
            ("quantization", quantization),
            lambda: _presence_reason("quantization", model.quantization, quantization, limit),
        )
    )
    reasons.append(
        _remembered(memo, ("format", _selector_key(fmt)), lambda: _format_clause(model, fmt, limit))
    )
    reasons.append(
        _remembered(
            memo, ("framework", _selector_key(framework)), lambda: _framework_clause(model, framework, limit)
        )
    )
    text = messages.MISMATCH_SEPARATOR.join(reason for reason in reasons if reason)
    return text or messages.UNKNOWN_MISMATCH
