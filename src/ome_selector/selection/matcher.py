"""Compatibility of one runtime with one model (SPEC §3, with the entry rules of §9).

A runtime is compiled once into a :class:`RuntimeProfile` (sizes parsed, interval text written, format names
collected) and a model into a :class:`ModelProfile`; :func:`check` then runs the checks of SPEC §3 in order —
disabled, accelerator classes, formats (the first matching entry), size — and the auto-selectability rules,
and returns a :class:`RuntimeCheck` with the first failing reason, the matching entry, its score and priority.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from ome_selector.api.resources import (
    DiffusionComponent,
    DiffusionPipeline,
    FormatSelector,
    FrameworkSelector,
    Model,
    ModelSpec,
    Runtime,
    SupportedModelFormat,
)
from ome_selector.selection import messages
from ome_selector.selection.quantity import parse_parameter_count
from ome_selector.selection.scoring import entry_score
from ome_selector.selection.version import version_matches

__all__ = [
    "ModelProfile",
    "RuntimeCheck",
    "RuntimeProfile",
    "check",
    "entry_matches",
    "entry_mismatch_reason",
    "find_matching_entry",
]


@dataclass(frozen=True, slots=True)
class RuntimeProfile:
    """A runtime with everything selection needs pre-computed; built once per runtime version."""

    runtime: Runtime
    name: str
    is_cluster: bool
    disabled: bool
    entries: tuple[SupportedModelFormat, ...]
    lower: Fraction | None
    upper: Fraction | None
    range_text: str | None
    entries_by_format: Mapping[str, tuple[int, ...]]
    accelerator_classes: frozenset[str]

    @classmethod
    def of(cls, runtime: Runtime) -> RuntimeProfile:
        spec = runtime.spec
        by_format: dict[str, list[int]] = {}
        for index, entry in enumerate(spec.supported_model_formats):
            if entry.model_format is not None:
                by_format.setdefault(entry.model_format.name, []).append(index)
        size_range = spec.model_size_range
        minimum = size_range.min if size_range is not None else None
        maximum = size_range.max if size_range is not None else None
        return cls(
            runtime=runtime,
            name=runtime.name,
            is_cluster=runtime.is_cluster,
            disabled=spec.disabled,
            entries=spec.supported_model_formats,
            lower=parse_parameter_count(minimum) if minimum is not None else None,
            upper=parse_parameter_count(maximum) if maximum is not None else None,
            range_text=messages.interval_text(minimum, maximum),
            entries_by_format={name: tuple(indices) for name, indices in by_format.items()},
            accelerator_classes=frozenset(spec.accelerator_classes),
        )

    @property
    def format_names(self) -> frozenset[str]:
        """The format names the entries declare."""
        return frozenset(self.entries_by_format)

    @property
    def has_range(self) -> bool:
        """Whether ``modelSizeRange`` has at least one bound."""
        return self.range_text is not None

    def serves_format(self, format_name: str) -> bool:
        """Whether some entry names this format (such runtimes are listed in the no-runtime message)."""
        return format_name in self.entries_by_format

    def admits_size(self, size: Fraction) -> bool:
        lower_ok = self.lower is None or self.lower <= size
        upper_ok = self.upper is None or size <= self.upper
        return lower_ok and upper_ok

    def size_distance(self, size: Fraction) -> Fraction | None:
        """|size - lower| + |upper - size| exactly; None stands for an infinite distance (a missing bound).

        A runtime without a range (or with neither bound) is at distance 0.
        """
        if not self.has_range:
            return Fraction(0)
        if self.lower is None or self.upper is None:
            return None
        return abs(size - self.lower) + abs(self.upper - size)


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """A model with its parsed size and format label."""

    model: Model
    size: Fraction | None
    label: str
    format_name: str

    @classmethod
    def of(cls, model: Model) -> ModelProfile:
        spec = model.spec
        framework = spec.model_framework
        return cls(
            model=model,
            format_name=spec.format_name,
            size=parse_parameter_count(spec.model_parameter_size) if spec.model_parameter_size else None,
            label=messages.format_label(
                spec.format_name,
                format_version=spec.model_format.version if spec.model_format is not None else None,
                architecture=spec.model_architecture,
                quantization=spec.quantization,
                framework_name=framework.name if framework is not None else None,
                framework_version=framework.version if framework is not None else None,
            ),
        )

    @property
    def spec(self) -> ModelSpec:
        return self.model.spec

    @property
    def has_size(self) -> bool:
        return self.size is not None


@dataclass(frozen=True, slots=True)
class RuntimeCheck:
    """The verdict of SPEC §3 for one runtime and one model.

    ``reason`` is the first failing check ("" when auto-selectable); ``entry`` is the index of the matching
    entry (None without one), ``score``/``priority`` those of the matching entry (0/None without one).
    """

    supports_model: bool
    auto_selectable: bool
    reason: str
    entry: int | None
    score: int
    priority: int | None


# --- entries
# --------------------------------------------------------------------------------------------------


def _component_mismatch(
    name: str, model: DiffusionComponent | None, runtime: DiffusionComponent | None
) -> str:
    if runtime is None:
        return ""
    if model is None:
        return f"component {name} required by runtime but not specified in model"
    if runtime.library and runtime.library != model.library:
        return f"{name} library mismatch (model={model.library}, runtime={runtime.library})"
    if runtime.type and runtime.type != model.type:
        return f"{name} type mismatch (model={model.type}, runtime={runtime.type})"
    return ""


def pipeline_mismatch(model: DiffusionPipeline | None, runtime: DiffusionPipeline | None) -> str:
    """The first failing diffusion-pipeline check, "" when the entry's pipeline requirements are met."""
    if runtime is None:
        return ""
    if model is None:
        return "diffusion pipeline required by runtime but not specified in model"
    if runtime.class_name is not None and runtime.class_name != model.class_name:
        model_class = model.class_name if model.class_name is not None else "<nil>"
        return f"pipeline class mismatch (model={model_class}, runtime={runtime.class_name})"
    for name, model_part, runtime_part in (
        ("scheduler", model.scheduler, runtime.scheduler),
        ("textEncoder", model.text_encoder, runtime.text_encoder),
        ("tokenizer", model.tokenizer, runtime.tokenizer),
        ("transformer", model.transformer, runtime.transformer),
        ("vae", model.vae, runtime.vae),
    ):
        reason = _component_mismatch(name, model_part, runtime_part)
        if reason:
            return reason
    if runtime.additional_components:
        if not model.additional_components:
            return "diffusion pipeline missing required additional components"
        for key in sorted(runtime.additional_components):
            model_part = model.additional_components.get(key)
            if model_part is None:
                return f"diffusion component {key} missing in model"
            reason = _component_mismatch(key, model_part, runtime.additional_components[key])
            if reason:
                return reason
    return ""


def _versions_match(selector: FormatSelector | FrameworkSelector, model_version: str | None) -> bool:
    if selector.version is None or model_version is None:
        return selector.version is None and model_version is None
    return version_matches(selector.version, selector.operator, model_version)


def entry_matches(model: ModelSpec, entry: SupportedModelFormat) -> bool:
    """Whether ``entry`` matches the model (SPEC §3.3 and §9); the model must have a format."""
    fmt = entry.model_format
    if fmt is None or model.model_format is None or fmt.name != model.model_format.name:
        return False
    if entry.model_architecture != model.model_architecture or entry.quantization != model.quantization:
        return False
    if not _versions_match(fmt, model.model_format.version):
        return False
    framework, model_framework = entry.model_framework, model.model_framework
    if (framework is None) != (model_framework is None):
        return False
    if (
        framework is not None
        and model_framework is not None
        and (
            framework.name != model_framework.name or not _versions_match(framework, model_framework.version)
        )
    ):
        return False
    return not pipeline_mismatch(model.diffusion_pipeline, entry.diffusion_pipeline)


def _presence_reasons(what: str, model_value: str | None, runtime_value: str | None) -> str:
    if model_value is not None and runtime_value is not None:
        if model_value != runtime_value:
            return f"{what} mismatch (model={model_value}, runtime={runtime_value})"
        return ""
    if model_value is None and runtime_value is not None:
        return f"model has no {what} but runtime requires {runtime_value}"
    if model_value is not None:
        return f"model has {what} {model_value} but runtime has no {what} requirement"
    return ""


def _version_reason(
    kind: str, selector: FormatSelector | FrameworkSelector, model_version: str | None
) -> str:
    if selector.version is not None and model_version is not None:
        if not version_matches(selector.version, selector.operator, model_version):
            return f"{kind} version mismatch (model={model_version}, runtime={selector.version})"
        return ""
    if selector.version is not None:
        return f"model has no {kind} version but runtime requires {selector.version}"
    if model_version is not None:
        return f"model has {kind} version but runtime has no version requirement"
    return ""


def entry_mismatch_reason(model: ModelSpec, entry: SupportedModelFormat) -> str:
    """Every mismatch of ``entry`` joined by ", ", in upstream's order and wording (SPEC §9)."""
    reasons: list[str] = []
    pipeline = pipeline_mismatch(model.diffusion_pipeline, entry.diffusion_pipeline)
    if pipeline:
        reasons.append(pipeline)
    for reason in (
        _presence_reasons("architecture", model.model_architecture, entry.model_architecture),
        _presence_reasons("quantization", model.quantization, entry.quantization),
    ):
        if reason:
            reasons.append(reason)
    fmt = entry.model_format
    model_format_name = model.format_name
    if fmt is not None:
        if fmt.name != model_format_name:
            reasons.append(f"format name mismatch (model={model_format_name}, runtime={fmt.name})")
        else:
            model_version = model.model_format.version if model.model_format is not None else None
            reason = _version_reason("format", fmt, model_version)
            if reason:
                reasons.append(reason)
    framework, model_framework = entry.model_framework, model.model_framework
    if framework is not None and model_framework is not None:
        if framework.name != model_framework.name:
            reasons.append(
                f"framework name mismatch (model={model_framework.name}, runtime={framework.name})"
            )
        else:
            reason = _version_reason("framework", framework, model_framework.version)
            if reason:
                reasons.append(reason)
    elif framework is not None:
        reasons.append(f"model has no framework but runtime requires {framework.name}")
    elif model_framework is not None:
        reasons.append(f"model has framework {model_framework.name} but runtime has no framework requirement")
    return ", ".join(reasons) if reasons else "unknown mismatch"


def find_matching_entry(model: ModelSpec, entries: Iterable[SupportedModelFormat]) -> int | None:
    """The index of the first entry that matches the model, None when none does."""
    for index, entry in enumerate(entries):
        if entry_matches(model, entry):
            return index
    return None


# --- the runtime
# ----------------------------------------------------------------------------------------------


def check(
    profile: RuntimeProfile,
    model: ModelProfile,
    accelerator_classes: Iterable[str] = (),
    *,
    reasons: bool = True,
) -> RuntimeCheck:
    """Run SPEC §3 for one runtime: the first failing check gives the reason; then auto-selectability.

    With ``reasons=False`` the costly reason of a runtime without a matching entry (every entry's mismatches)
    is left empty: ranking does not need it, and a caller that shows it asks again.
    """
    spec = model.spec
    if not spec.has_format:
        return RuntimeCheck(False, False, messages.model_pending_reason(model.model.name), None, 0, None)

    entries = profile.entries
    # Only entries naming the model's format can match it: the profile indexes them by name, in entry order.
    index: int | None = None
    for candidate in profile.entries_by_format.get(model.format_name, ()):
        if entry_matches(spec, entries[candidate]):
            index = candidate
            break
    entry = entries[index] if index is not None else None
    score = entry_score(entry, spec) if entry is not None else 0
    priority = entry.priority if entry is not None else None

    failure = _failure(profile, model, accelerator_classes, entry, reasons=reasons)
    if failure is not None or entry is None:
        return RuntimeCheck(False, False, failure or "", index, score, priority)

    if not entry.auto_select:
        reason = messages.autoselect_disabled_reason(model.format_name)
        return RuntimeCheck(True, False, reason, index, score, priority)
    if score <= 0:
        return RuntimeCheck(True, False, messages.score_reason(score), index, score, priority)
    return RuntimeCheck(True, True, "", index, score, priority)


def _failure(
    profile: RuntimeProfile,
    model: ModelProfile,
    accelerator_classes: Iterable[str],
    entry: SupportedModelFormat | None,
    *,
    reasons: bool,
) -> str | None:
    """The reason of the first failing check among SPEC §3's 1–4, None when all pass."""
    if profile.disabled:
        return messages.REASON_DISABLED
    if accelerator_classes and not profile.accelerator_classes.issuperset(accelerator_classes):
        return messages.REASON_ACCELERATOR
    if entry is None:
        if not reasons:
            return ""
        spec = model.spec
        entry_reasons = [entry_mismatch_reason(spec, c) for c in profile.entries]
        return messages.format_not_supported_reason(model.label, entry_reasons)
    if model.size is not None and profile.range_text is not None and not profile.admits_size(model.size):
        return messages.size_outside_reason(model.spec.model_parameter_size or "", profile.range_text)
    return None
