"""Runtimes and models compiled once for selection: sizes parsed, texts written, entries indexed.

A :class:`RuntimeProfile` is built once per runtime version (the catalog keeps it) and a :class:`ModelProfile`
once per model version, so a decision never parses a size or a version again, and finding the matching entry
looks only at the entries that can match: entries are indexed by the fields that must be equal (SPEC §9
"strict presence"), leaving only versions and diffusion pipelines to compare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from ome_selector.api.resources import (
    Model,
    ModelSpec,
    ObjectKey,
    Runtime,
    SupportedModelFormat,
    declared_mode,
)
from ome_selector.selection import messages
from ome_selector.selection.quantity import parse_parameter_count
from ome_selector.selection.version import Version, parse_version

__all__ = ["CompiledEntry", "EntryReasonKey", "MatchKey", "ModelProfile", "RuntimeProfile", "Selector"]

#: The fields an entry and a model must have equal for the entry to match (SPEC §3.4, §9): format name,
#: architecture, quantization, whether a format version is given, the framework name (None without a
#: framework) and whether a framework version is given.
MatchKey = tuple[str, str | None, str | None, bool, str | None, bool]


#: A ``modelFormat`` or ``modelFramework`` of an entry as (name, version, operator).
Selector = tuple[str, str | None, str]
#: What the reason of an entry without a diffusion pipeline says, given the model: it depends on the entry's
#: architecture, quantization, format and framework only.
EntryReasonKey = tuple[str | None, str | None, Selector | None, Selector | None]


@dataclass(frozen=True, slots=True)
class CompiledEntry:
    """One ``supportedModelFormats`` entry with its versions parsed (None: absent or not a version), its
    format and framework as :data:`Selector` tuples (None when absent), and its :data:`EntryReasonKey` (None
    with a diffusion pipeline): the values its reason is written from."""

    index: int
    entry: SupportedModelFormat
    format_version: Version | None
    framework_version: Version | None
    format_selector: Selector | None
    framework_selector: Selector | None
    reason_key: EntryReasonKey | None

    @classmethod
    def of(cls, index: int, entry: SupportedModelFormat) -> CompiledEntry:
        fmt, framework = entry.model_format, entry.model_framework
        format_selector = (fmt.name, fmt.version, fmt.operator) if fmt is not None else None
        framework_selector = (
            (framework.name, framework.version, framework.operator) if framework is not None else None
        )
        return cls(
            index=index,
            entry=entry,
            format_version=_parsed(fmt.version if fmt is not None else None),
            framework_version=_parsed(framework.version if framework is not None else None),
            format_selector=format_selector,
            framework_selector=framework_selector,
            reason_key=(
                (entry.model_architecture, entry.quantization, format_selector, framework_selector)
                if entry.diffusion_pipeline is None
                else None
            ),
        )

    @property
    def match_key(self) -> MatchKey | None:
        """The key of the models this entry can match; None for an entry without ``modelFormat`` (it never
        matches)."""
        entry = self.entry
        fmt, framework = entry.model_format, entry.model_framework
        if fmt is None:
            return None
        return (
            fmt.name,
            entry.model_architecture,
            entry.quantization,
            fmt.version is not None,
            framework.name if framework is not None else None,
            framework is not None and framework.version is not None,
        )


_ZERO = Fraction(0)


def _parsed(version: str | None) -> Version | None:
    return parse_version(version) if version is not None else None


def _all_or_none(keys: tuple[EntryReasonKey | None, ...]) -> tuple[EntryReasonKey, ...] | None:
    known = tuple(key for key in keys if key is not None)
    return known if len(known) == len(keys) else None


@dataclass(frozen=True, slots=True)
class RuntimeProfile:
    """A runtime with everything selection needs pre-computed; built once per runtime version."""

    runtime: Runtime
    name: str
    is_cluster: bool
    disabled: bool
    entries: tuple[CompiledEntry, ...]
    lower: Fraction | None
    upper: Fraction | None
    range_text: str | None
    entries_by_key: Mapping[MatchKey, tuple[int, ...]]
    format_names: frozenset[str]
    accelerator_classes: frozenset[str]
    #: What the runtime's format reason says, given the model: its entries' reason keys (None when an entry
    #: has a diffusion pipeline). Runtimes with equal keys fail the format check with the same reason.
    format_reason_key: tuple[EntryReasonKey, ...] | None
    #: The modes the runtime declares for its engine and its decoder (SPEC §3.3), None when it declares none.
    engine_mode: str | None = None
    decoder_mode: str | None = None

    @classmethod
    def of(cls, runtime: Runtime) -> RuntimeProfile:
        spec = runtime.spec
        entries = tuple(CompiledEntry.of(i, e) for i, e in enumerate(spec.supported_model_formats))
        by_key: dict[MatchKey, list[int]] = {}
        for compiled in entries:
            key = compiled.match_key
            if key is not None:
                by_key.setdefault(key, []).append(compiled.index)
        size_range = spec.model_size_range
        minimum = size_range.min if size_range is not None else None
        maximum = size_range.max if size_range is not None else None
        return cls(
            runtime=runtime,
            name=runtime.name,
            is_cluster=runtime.is_cluster,
            disabled=spec.is_disabled,
            entries=entries,
            lower=parse_parameter_count(minimum) if minimum is not None else None,
            upper=parse_parameter_count(maximum) if maximum is not None else None,
            range_text=messages.interval_text(minimum, maximum),
            entries_by_key={key: tuple(indices) for key, indices in by_key.items()},
            format_names=frozenset(key[0] for key in by_key),
            accelerator_classes=frozenset(spec.accelerator_classes),
            format_reason_key=_all_or_none(tuple(compiled.reason_key for compiled in entries)),
            engine_mode=declared_mode(spec.engine_mode_annotation),
            decoder_mode=declared_mode(spec.decoder_mode_annotation),
        )

    @property
    def namespace(self) -> str | None:
        """The runtime's namespace, None for a ClusterServingRuntime."""
        return self.runtime.namespace

    @property
    def has_range(self) -> bool:
        """Whether ``modelSizeRange`` has at least one bound."""
        return self.range_text is not None

    def serves_format(self, format_name: str) -> bool:
        """Whether some entry names this format (such runtimes are listed in the no-runtime message)."""
        return format_name in self.format_names

    def admits_size(self, size: Fraction) -> bool:
        lower_ok = self.lower is None or self.lower <= size
        upper_ok = self.upper is None or size <= self.upper
        return lower_ok and upper_ok

    def size_distance(self, size: Fraction) -> Fraction:
        """The sum over the bounds that are present of |bound - size|, exactly (SPEC §4 step 3, v4): a
        one-sided range counts only its bound; a runtime without a range (or with neither bound) is at 0."""
        distance = _ZERO
        if self.lower is not None:
            distance += abs(size - self.lower)
        if self.upper is not None:
            distance += abs(self.upper - size)
        return distance


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """A model with its key, its parsed size and versions, its format label and its :data:`MatchKey`."""

    model: Model
    key: ObjectKey
    size: Fraction | None
    label: str
    format_name: str
    match_key: MatchKey
    format_version: Version | None
    framework_version: Version | None

    @classmethod
    def of(cls, model: Model) -> ModelProfile:
        spec = model.spec
        fmt, framework = spec.model_format, spec.model_framework
        format_version = fmt.version if fmt is not None else None
        framework_version = framework.version if framework is not None else None
        return cls(
            model=model,
            key=model.key,
            format_name=spec.format_name,
            size=parse_parameter_count(spec.model_parameter_size) if spec.model_parameter_size else None,
            label=messages.format_label(
                spec.format_name,
                format_version=format_version,
                architecture=spec.model_architecture,
                quantization=spec.quantization,
                framework_name=framework.name if framework is not None else None,
                framework_version=framework_version,
            ),
            match_key=(
                spec.format_name,
                spec.model_architecture,
                spec.quantization,
                format_version is not None,
                framework.name if framework is not None else None,
                framework_version is not None,
            ),
            format_version=_parsed(format_version),
            framework_version=_parsed(framework_version),
        )

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def spec(self) -> ModelSpec:
        return self.model.spec
