"""Compatibility of one runtime with one model (SPEC §3, with the entry rules of §9).

:func:`check` runs the checks of SPEC §3 in order — disabled, accelerator classes, deployment mode, formats
(the first matching entry), size — and the auto-selectability rules, and returns a :class:`RuntimeCheck`: the
:class:`Step` that failed (None when the runtime is auto-selectable), the matching entry, its score and
priority.

Deciding builds no text. The reason of a failed check is written only when asked for
(:attr:`RuntimeCheck.reason`, or :meth:`RuntimeCheck.reason_within` when the caller keeps only the first
characters): a reason can be long (every entry's mismatches, values as written) and ranking needs none. A
caller that writes many reasons for one model passes one :class:`FormatReasons` to all of them: runtimes
share most architectures and versions, so each distinct clause of their entries' reasons is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from enum import IntEnum
from functools import partial
from typing import NamedTuple

from ome_selector.api.resources import (
    NO_MODES,
    DeploymentModes,
    DiffusionComponent,
    DiffusionPipeline,
    FormatSelector,
    FrameworkSelector,
    ModelSpec,
    SupportedModelFormat,
)
from ome_selector.selection import messages
from ome_selector.selection.profiles import (
    CompiledEntry,
    EntryReasonKey,
    ModelProfile,
    RuntimeProfile,
    Selector,
)
from ome_selector.selection.scoring import entry_score
from ome_selector.selection.version import KNOWN_OPERATORS, Version, parsed_versions_match, version_matches

__all__ = [
    "FormatReasons",
    "ModeMismatch",
    "RuntimeCheck",
    "Step",
    "check",
    "entry_mismatch_reason",
    "matching_entry",
    "mode_mismatch",
]


class Step(IntEnum):
    """The SPEC §3 check a runtime failed. A higher step is a nearer miss: the no-runtime message lists the
    runtimes latest step first (SPEC §5 v3)."""

    #: The model has no ``modelFormat.name``: no check ran.
    MODEL_PENDING = 0
    DISABLED = 1
    ACCELERATOR = 2
    MODE = 3
    FORMAT = 4
    SIZE = 5
    #: Supports the model, but the matching entry has no ``autoSelect: true`` or its score is not above 0.
    AUTO_SELECT = 6


class ModeMismatch(NamedTuple):
    """A failed deployment-mode check (SPEC §3.3): the component (``engine`` or ``decoder``), the mode the
    runtime declares for it and the one the InferenceService asks for."""

    component: str
    runtime_mode: str
    requested_mode: str


def mode_mismatch(profile: RuntimeProfile, modes: DeploymentModes) -> ModeMismatch | None:
    """SPEC §3.3: the engine compared first, then the decoder; a component fails only when both sides
    declare a mode and the two differ."""
    engine, decoder = modes
    if engine is not None and profile.engine_mode is not None and engine != profile.engine_mode:
        return ModeMismatch("engine", profile.engine_mode, engine)
    if decoder is not None and profile.decoder_mode is not None and decoder != profile.decoder_mode:
        return ModeMismatch("decoder", profile.decoder_mode, decoder)
    return None


class RuntimeCheck(NamedTuple):
    """The verdict of SPEC §3 for one runtime and one model.

    ``failed`` is the first failing step (None when auto-selectable); ``entry`` is the index of the matching
    entry (None without one), ``score``/``priority`` those of the matching entry (0/None without one);
    ``mode`` the mismatch when the deployment-mode check failed (else None).

    A named tuple, not a frozen dataclass: as immutable, and built in a third of the time (explain builds one
    per runtime of the catalog).
    """

    profile: RuntimeProfile
    model: ModelProfile
    failed: Step | None
    entry: int | None
    score: int
    priority: int | None
    mode: ModeMismatch | None = None

    @property
    def supports_model(self) -> bool:
        """Passes SPEC §3 checks 1–5 (it "declares support")."""
        return self.failed is None or self.failed is Step.AUTO_SELECT

    @property
    def auto_selectable(self) -> bool:
        return self.failed is None

    @property
    def reason(self) -> str:
        """The SPEC §3 reason of the failed step, ``""`` when auto-selectable."""
        return self.reason_within(None)

    def reason_within(self, limit: int | None, format_reasons: FormatReasons | None = None) -> str:
        """:attr:`reason`, built only as far as its first ``limit`` characters: a longer reason is cut after
        ``limit`` characters with "…" (and costs no more work than that).

        ``format_reasons``: the writer of format reasons for this model and this limit, shared by the reasons
        of many runtimes (a new one by default)."""
        failed, model, profile = self.failed, self.model, self.profile
        if failed is Step.FORMAT:  # the most common by far
            writer = FormatReasons(model.spec, limit) if format_reasons is None else format_reasons
            return writer.runtime(profile, model.label if limit is None else model.label[:limit])
        if failed is None:
            return ""
        if failed is Step.MODEL_PENDING:
            return messages.model_pending_reason(model.name, limit)
        if failed is Step.DISABLED:
            return messages.REASON_DISABLED
        if failed is Step.ACCELERATOR:
            return messages.REASON_ACCELERATOR
        if failed is Step.MODE:
            assert self.mode is not None
            return messages.mode_mismatch_reason(*self.mode)
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
    """The index of the first entry that matches the model (SPEC §3.4), None when none does.

    Only entries with the model's match key can match; they are indexed, in entry order.
    """
    for index in profile.entries_by_key.get(model.match_key, ()):
        if _compiled_entry_matches(profile.entries[index], model):
            return index
    return None


# --- the runtime
# ----------------------------------------------------------------------------------------------


#: Builds a named tuple from its fields without the keyword handling of the generated ``__new__``: half the
#: time, and explain builds a check and a verdict per runtime.
TUPLE_NEW = tuple.__new__


def check(
    profile: RuntimeProfile,
    model: ModelProfile,
    accelerator_classes: Iterable[str] = (),
    modes: DeploymentModes = NO_MODES,
) -> RuntimeCheck:
    """Run SPEC §3 for one runtime: the first failing check; then auto-selectability. ``modes`` are the
    deployment modes the InferenceService declares (none by default)."""
    if not model.format_name:
        return RuntimeCheck(profile, model, Step.MODEL_PENDING, None, 0, None)
    failed: Step | None
    mode: ModeMismatch | None = None
    if profile.disabled:
        failed = Step.DISABLED
    elif accelerator_classes and not profile.accelerator_classes.issuperset(accelerator_classes):
        failed = Step.ACCELERATOR
    elif modes is not NO_MODES and (mode := mode_mismatch(profile, modes)) is not None:
        failed = Step.MODE
    else:
        failed = None
    # Without an entry of the model's match key (most runtimes of a catalog, for one model), none matches.
    index = matching_entry(profile, model) if model.match_key in profile.entries_by_key else None
    if index is None:
        return TUPLE_NEW(
            RuntimeCheck, (profile, model, Step.FORMAT if failed is None else failed, None, 0, None, mode)
        )
    # The matching entry gives the score whatever the other checks say (SPEC §4).
    entry = profile.entries[index].entry
    score = entry_score(entry, model.spec)
    if failed is None:
        if model.size is not None and profile.has_range and not profile.admits_size(model.size):
            failed = Step.SIZE
        elif not entry.auto_select or score <= 0:
            failed = Step.AUTO_SELECT
    return RuntimeCheck(profile, model, failed, index, score, entry.priority, mode)


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


class FormatReasons:
    """Writes the reasons of the format check (SPEC §3.4, §9) against one model: of entries and of runtimes,
    each value looked at only as far as ``limit`` characters when given.

    An entry's reason joins its mismatches: the diffusion pipeline's, then one clause each about the
    architecture, the quantization, the format and the framework. Each of those four depends on the model and
    on one field of the entry only, so the writer keeps them by that field; and it keeps each runtime's whole
    reason by what it depends on (:attr:`~.profiles.RuntimeProfile.format_reason_key`). Runtimes share most
    architectures and versions, and many have the same entries: a writer shared by every runtime of a catalog
    writes each distinct clause and each distinct reason once.
    """

    __slots__ = ("_architecture", "_format", "_framework", "_limit", "_model", "_quantization", "_runtimes")

    def __init__(self, model: ModelSpec, limit: int | None = None) -> None:
        self._model, self._limit = model, limit
        self._architecture: dict[str | None, str] = {}
        self._quantization: dict[str | None, str] = {}
        self._format: dict[Selector | None, str] = {}
        self._framework: dict[Selector | None, str] = {}
        self._runtimes: dict[tuple[EntryReasonKey, ...], str] = {}

    def runtime(self, profile: RuntimeProfile, label: str) -> str:
        """``model format '<label>' not in supported formats: <entry reasons>``; ``label`` is the model's
        (cut to the limit)."""
        key = profile.format_reason_key
        text = self._runtimes.get(key) if key is not None else None
        if text is None:
            text = messages.format_not_supported_reason(label, map(self.entry, profile.entries), self._limit)
            if key is not None:
                self._runtimes[key] = text
        return text

    def entry(self, compiled: CompiledEntry) -> str:
        """Every mismatch of the entry joined by ", ", in upstream's order and wording."""
        model, limit, entry = self._model, self._limit, compiled.entry
        reasons: list[str] = []
        if entry.diffusion_pipeline is not None:
            pipeline = _pipeline_failure(model.diffusion_pipeline, entry.diffusion_pipeline)
            if pipeline is not None:
                reasons.append(pipeline(limit))
        architecture = entry.model_architecture
        clause = self._architecture.get(architecture)
        if clause is None:
            clause = _presence_reason("architecture", model.model_architecture, architecture, limit)
            self._architecture[architecture] = clause
        if clause:
            reasons.append(clause)
        quantization = entry.quantization
        clause = self._quantization.get(quantization)
        if clause is None:
            clause = _presence_reason("quantization", model.quantization, quantization, limit)
            self._quantization[quantization] = clause
        if clause:
            reasons.append(clause)
        selector = compiled.format_selector
        clause = self._format.get(selector)
        if clause is None:
            clause = self._format[selector] = _format_clause(model, entry.model_format, limit)
        if clause:
            reasons.append(clause)
        selector = compiled.framework_selector
        clause = self._framework.get(selector)
        if clause is None:
            clause = self._framework[selector] = _framework_clause(model, entry.model_framework, limit)
        if clause:
            reasons.append(clause)
        return messages.MISMATCH_SEPARATOR.join(reasons) if reasons else messages.UNKNOWN_MISMATCH


def entry_mismatch_reason(model: ModelSpec, entry: SupportedModelFormat, limit: int | None = None) -> str:
    """Every mismatch of ``entry`` joined by ", ", in upstream's order and wording (SPEC §9). With ``limit``,
    no value is looked at beyond its first ``limit`` characters."""
    return FormatReasons(model, limit).entry(CompiledEntry.of(0, entry))
