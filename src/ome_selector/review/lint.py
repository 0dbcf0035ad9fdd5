"""Catalog lint (SPEC §11): mistakes in a catalog of models and runtimes that runtime selection keeps silent.

:func:`lint` judges a :class:`~ome_selector.catalog.catalog.Catalog` as seen from some namespaces (the
ServingRuntimes, BaseModels and InferenceServices of those namespaces, and everything cluster-scoped) and
returns sorted :class:`Finding` s; :func:`lint_document` is the ``-o json`` object. The codes:

- ``SIZE001`` (error) a size value that is not a parameter count, so it reads as 0 (§2): a model's non-empty
  ``modelParameterSize`` or a runtime's ``min``/``max`` — the values the admission webhook warns about (§7);
- ``SIZE002`` (error) ``min`` above ``max``, both parameter counts (a bound that does not parse is SIZE001);
- ``OPER001`` (error) a version operator other than the three known ones;
- ``SIZE003`` two auto-selectable runtimes of one scope whose auto-selecting entries accept the same models
  (format name, architecture, quantization, framework, overlapping version constraints and diffusion pipeline
  requirements) and whose size ranges overlap;
- ``RANK001`` for a model, the rank-1 and rank-2 runtimes differ only by name;
- ``RANK002`` for a model with a size, the rank-1 runtime has no range and wins on distance over ranged
  runtimes of equal score (and scope), whose ranges cover the model;
- ``DEAD001`` a runtime that is rank 1 for no model and that no InferenceService names — nor auto-selects:
  a runtime an InferenceService reaches through its accelerator classes is in use, not dead;
- ``SERV001`` a model with a format that no runtime supports (passes SPEC §3 checks 1–5);
- (v4) ``INHR001`` a runtime with an ``ome.io/inherit-from`` parent that can be auto-selected on its own spec
  (not disabled, an entry with ``autoSelect: true``), which ignores what it inherits; ``INHR002`` (error) a
  runtime whose chain is broken (SPEC §1); ``INHR003`` (error) ``ome.io/runtime-profile: "true"`` without
  ``spec.disabled: true``; ``INHR004`` a runtime that sets no ``disabled`` and inherits ``disabled: true``;
- (v4) ``MODE001`` an ``ome.io/deploymentMode`` value that declares nothing (SPEC §3.3), on a runtime's
  ``engineConfig``/``decoderConfig`` or an InferenceService's ``engine``/``decoder`` (or its
  ``spec.deploymentMode``, outside the CRD's enum, live only);
- (v4) ``RANK003`` for a model with a size, the rank-1 runtime has one bound and is ahead on distance of
  runtimes of the same scope and score with both bounds.
SIZE003, RANK001–003, DEAD001, SERV001, INHR001, INHR004 and MODE001 are warnings. A runtime another runtime's
resolved chain passes through, and a ``runtime-profile`` runtime, is never DEAD001. Rankings are the
engine's: :func:`~ome_selector.selection.ranking.rank` and its rank keys, which explain and evaluate use too,
never a second implementation. Beyond listing the catalog's
models and InferenceServices, lint reads it only through
:class:`~ome_selector.selection.view.CatalogView`, as selection does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ome_selector.api.fields import UnknownField, unknown_fields
from ome_selector.api.loading import field_path
from ome_selector.api.resources import (
    DEPLOYMENT_MODE_ANNOTATION,
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    DiffusionComponent,
    DiffusionPipeline,
    FormatSelector,
    FrameworkSelector,
    InferenceService,
    Model,
    ModelFramework,
    ModelSpec,
    ObjectKey,
    Runtime,
    SupportedModelFormat,
    declared_mode,
)
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection import messages
from ome_selector.selection.inheritance import (
    Chain,
    ChainError,
    RuntimeLookup,
    find_named_runtime,
    resolve_chain,
)
from ome_selector.selection.matcher import RuntimeCheck, check
from ome_selector.selection.outcome import OutcomeKind, evaluate
from ome_selector.selection.profiles import MatchKey, RuntimeProfile
from ome_selector.selection.ranking import Ranking, RankKey, rank, rank_key
from ome_selector.selection.scoring import entry_score
from ome_selector.selection.values import (
    ValueProblem,
    ValueRule,
    model_value_problems,
    runtime_value_problems,
)
from ome_selector.selection.version import parse_version, version_matches
from ome_selector.selection.view import CatalogView

__all__ = [
    "PROFILE_NOT_DISABLED",
    "RULES",
    "Code",
    "FieldParts",
    "Finding",
    "Severity",
    "field_findings",
    "has_errors",
    "lint",
    "lint_document",
    "object_order",
    "severity_of",
]


class Code(StrEnum):
    """The stable finding codes of SPEC §11."""

    SIZE001 = "SIZE001"
    SIZE002 = "SIZE002"
    SIZE003 = "SIZE003"
    RANK001 = "RANK001"
    RANK002 = "RANK002"
    OPER001 = "OPER001"
    DEAD001 = "DEAD001"
    SERV001 = "SERV001"
    RANK003 = "RANK003"
    INHR001 = "INHR001"
    INHR002 = "INHR002"
    INHR003 = "INHR003"
    INHR004 = "INHR004"
    MODE001 = "MODE001"
    SCHM001 = "SCHM001"
    QUANT001 = "QUANT001"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


_ERRORS = frozenset({Code.SIZE001, Code.SIZE002, Code.OPER001, Code.INHR002, Code.INHR003, Code.SCHM001})


def severity_of(code: Code) -> Severity:
    """The severity of the findings of ``code`` (SPEC §11)."""
    return Severity.ERROR if code in _ERRORS else Severity.WARNING


#: One line per code, what it finds: the help of `kubectl ome-selector runtime lint` and the rules of its
#: SARIF log.
RULES: Mapping[Code, str] = {
    Code.SIZE001: 'a size value that is not a parameter count, so it reads as 0 ("4b", "7 B")',
    Code.SIZE002: "modelSizeRange.min above max: every model with a size is rejected",
    Code.OPER001: "an unknown version operator: the entry matches no versioned model",
    Code.INHR002: "a runtime whose ome.io/inherit-from chain is broken (the chain error)",
    Code.INHR003: 'ome.io/runtime-profile: "true" without spec.disabled: true (OME\'s webhook denies it)',
    Code.SCHM001: "a field no CRD declares (a typo such as supportedModelFormat), dropped and never read",
    Code.SIZE003: "two auto-selectable runtimes of one scope accept the same models in overlapping ranges",
    Code.RANK001: "for a model, the top two runtimes tie on score and size distance: the name decides",
    Code.RANK002: 'a runtime without a range wins, as "closest", over a ranged runtime that covers the model',
    Code.RANK003: "a runtime with one size bound wins on distance over runtimes with both bounds",
    Code.DEAD001: "a runtime that is rank 1 for no model and that no InferenceService names or selects",
    Code.SERV001: "a model (with a format) that no runtime supports",
    Code.INHR001: "a runtime with a parent that auto-selection can pick on its own spec, ignoring the parent",
    Code.INHR004: "a runtime that sets no spec.disabled and inherits disabled: true",
    Code.MODE001: "an ome.io/deploymentMode value that is not a deployment mode, so it declares none",
    Code.QUANT001: "a model whose files will give a quantization that no runtime serving it declares",
}


def object_order(key: ObjectKey) -> tuple[str, str, str]:
    """How objects sort within a finding: kind, namespace (``""`` for cluster scope), name."""
    return (key.kind.value, key.namespace or "", key.name)


#: A field of an object, as :func:`~ome_selector.api.loading.field_path` parts: ``("spec", "modelSizeRange",
#: "min")``; ``()`` for the object itself.
FieldParts = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: its code, the objects involved (sorted) and one line that says what to change.

    ``subject`` is the object the finding is located at (``file:line``, SPEC §11) and ``field`` the field of
    it that the message is about (``()``: the object as a whole).
    """

    code: Code
    objects: tuple[ObjectKey, ...]
    message: str
    subject: ObjectKey | None = None
    field: FieldParts = ()

    @property
    def severity(self) -> Severity:
        return severity_of(self.code)

    @property
    def order(self) -> tuple[str, tuple[tuple[str, str, str], ...], str]:
        """Findings sort by code, then objects, then message."""
        return (self.code.value, tuple(object_order(key) for key in self.objects), self.message)


#: A quoted value longer than this is cut (values this long are never parameter counts, SPEC §2).
_VALUE_LIMIT = 64


def _finding(code: Code, objects: Iterable[ObjectKey], message: str, *, field: FieldParts = ()) -> Finding:
    """A finding about ``objects``, located at the first of them as given (and its ``field``)."""
    given = list(objects)
    keys = tuple(sorted(set(given), key=object_order))
    return Finding(code, keys, messages.escape_controls(message), given[0] if given else None, field)


_quoted = messages.lint_quoted


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(finding.severity is Severity.ERROR for finding in findings)


def lint_document(findings: Sequence[Finding]) -> dict[str, Any]:
    """The SPEC §11 ``-o json`` object; ``namespace`` is null for cluster-scoped objects."""
    return {
        "findings": [
            {
                "code": finding.code.value,
                "severity": finding.severity.value,
                "objects": [
                    {"kind": key.kind.value, "name": key.name, "namespace": key.namespace}
                    for key in finding.objects
                ],
                "message": finding.message,
            }
            for finding in findings
        ]
    }


def lint(
    catalog: Catalog, namespaces: Iterable[str], lookup: RuntimeLookup = RuntimeLookup.V1_3
) -> tuple[Finding, ...]:
    """Every SPEC §11 finding for ``catalog`` as seen from ``namespaces``, sorted by code, objects, message.

    The catalog is judged from each namespace's view (its ServingRuntimes and BaseModels, and every
    cluster-scoped object), as its InferenceServices would see it; namespaced objects of other namespaces are
    left out. A finding that several views share is reported once. ``lookup`` is how InferenceServices find
    the runtimes they name (SPEC §1, ``--runtime-lookup``).
    """
    views = sorted(set(namespaces))
    profiles: dict[ObjectKey, RuntimeProfile] = {}
    for view in views:
        for profile in catalog.runtime_profiles_visible_from(view):
            profiles[profile.runtime.key] = profile
    runtimes = sorted(profiles.values(), key=lambda p: object_order(p.runtime.key))
    scope = set(views)
    models = sorted(
        (m for m in catalog.models() if m.namespace is None or m.namespace in scope),
        key=lambda m: object_order(m.key),
    )
    # One that fronts standalone replicas is left alone, as selection leaves it (SPEC §5, §11): no mode
    # finding, and a runtime it names is not in use through it.
    isvcs = [i for i in catalog.inference_services() if i.namespace in scope and not i.has_replica_refs]

    # The chains of the runtimes that name a parent (a runtime without one is a chain of itself).
    chains = {
        profile.runtime.key: resolve_chain(catalog, profile)
        for profile in runtimes
        if profile.runtime.parent_name is not None
    }
    findings: set[Finding] = set()
    for model in models:
        findings.update(_model_value_findings(model))
    for profile in runtimes:
        findings.update(_runtime_value_findings(profile))
        findings.update(_inheritance_findings(profile, chains.get(profile.runtime.key)))
        findings.update(_runtime_mode_findings(profile.runtime))
    for isvc in isvcs:
        findings.update(_isvc_mode_findings(isvc))
    findings.update(_overlap_findings(runtimes))
    review = _RankingReview(
        catalog, views=views, models=models, profiles=profiles, isvcs=isvcs, chains=chains, lookup=lookup
    )
    findings.update(review.findings())
    findings.update(learned_quantization_findings(catalog, views, models))
    return tuple(sorted(findings, key=lambda finding: finding.order))


# --- INHR001-INHR004: inheritance
# -----------------------------------------------------------------------------------------------

#: INHR003's message, exactly OME v1.3's runtime webhook denial (SPEC §11).
PROFILE_NOT_DISABLED = 'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'


_INHERIT_FROM: FieldParts = ("metadata", "annotations", INHERIT_FROM_ANNOTATION)


def _inheritance_findings(profile: RuntimeProfile, chain: Chain | ChainError | None) -> Iterator[Finding]:
    """INHR001–INHR004 for one runtime; ``chain`` is None for a runtime without a parent."""
    runtime = profile.runtime
    key, spec = runtime.key, runtime.spec
    parent = runtime.parent_name
    auto_select = any(entry.auto_select for entry in spec.supported_model_formats)
    if parent is not None and not spec.is_disabled and auto_select:
        yield _finding(
            Code.INHR001,
            [key],
            f"{key} inherits from {_quoted(parent)} (ome.io/inherit-from) and has an entry with "
            "autoSelect: true, but auto-selection judges it on its own spec and ignores what it inherits; "
            "turn autoSelect off and name it in spec.runtime.name, or give it its own spec in full",
            field=_INHERIT_FROM,
        )
    if isinstance(chain, ChainError):
        yield _finding(Code.INHR002, [key], chain.message, field=_INHERIT_FROM)
    if runtime.runtime_profile == "true" and spec.disabled is not True:
        yield _finding(
            Code.INHR003,
            [key],
            PROFILE_NOT_DISABLED,
            field=("metadata", "annotations", RUNTIME_PROFILE_ANNOTATION),
        )
    if spec.disabled is None and isinstance(chain, Chain):
        # The nearest runtime of the chain that sets disabled gives the effective value (SPEC §1).
        setter = next((link for link in chain.links[1:] if link.runtime.spec.disabled is not None), None)
        if setter is not None and setter.runtime.spec.disabled:
            yield _finding(
                Code.INHR004,
                [key],
                f"{key} sets no spec.disabled and inherits disabled: true from {setter.runtime.key}: "
                "disabled when an InferenceService names it, enabled when auto-selected; set spec.disabled "
                "on it",
                field=("spec",),
            )


# --- MODE001: deployment-mode values that declare nothing
# ---------------------------------------------------------------------------

_MODE_KEY = f'annotations["{DEPLOYMENT_MODE_ANNOTATION}"]'


def _mode_finding(key: ObjectKey, component: str | None, value: str | None) -> Iterator[Finding]:
    """MODE001 for ``value`` of the annotation of ``spec.<component>`` (None: ``spec.deploymentMode``)."""
    if value is not None and declared_mode(value) is None:
        field: FieldParts
        if component is None:
            path, field = "spec.deploymentMode", ("spec", "deploymentMode")
        else:
            path = f"spec.{component}.{_MODE_KEY}"
            field = ("spec", component, "annotations", DEPLOYMENT_MODE_ANNOTATION)
        yield _finding(
            Code.MODE001,
            [key],
            f"{key}: {path} {_quoted(value)} is not a deployment mode, so it declares none; use "
            "RawDeployment, OMENative, MultiNode or VirtualDeployment",
            field=field,
        )


def _runtime_mode_findings(runtime: Runtime) -> Iterator[Finding]:
    spec = runtime.spec
    yield from _mode_finding(runtime.key, "engineConfig", spec.engine_mode_annotation)
    yield from _mode_finding(runtime.key, "decoderConfig", spec.decoder_mode_annotation)


def _isvc_mode_findings(isvc: InferenceService) -> Iterator[Finding]:
    spec = isvc.spec
    engine = spec.engine.annotations if spec.engine is not None else None
    decoder = spec.decoder.annotations if spec.decoder is not None else None
    yield from _mode_finding(isvc.key, "engine", engine.deployment_mode if engine else None)
    yield from _mode_finding(isvc.key, "decoder", decoder.deployment_mode if decoder else None)
    # Outside the CRD's enum only from a cluster whose CRD lacks it: files reject it (SPEC §1).
    yield from _mode_finding(isvc.key, None, spec.deployment_mode)


# --- SIZE001, SIZE002, OPER001: values
# -----------------------------------------------------------------------------------------


_VALUE_CODES = {
    ValueRule.NOT_A_COUNT: Code.SIZE001,
    ValueRule.MIN_ABOVE_MAX: Code.SIZE002,
    ValueRule.UNKNOWN_OPERATOR: Code.OPER001,
}


def _value_findings(key: ObjectKey, problems: Iterable[ValueProblem]) -> Iterator[Finding]:
    for problem in problems:
        yield _finding(
            _VALUE_CODES[problem.rule],
            [key],
            messages.value_finding(str(key), problem),
            field=problem.fields[0],
        )


def _model_value_findings(model: Model) -> Iterator[Finding]:
    yield from _value_findings(model.key, model_value_problems(model.spec.model_parameter_size))


def _runtime_value_findings(profile: RuntimeProfile) -> Iterator[Finding]:
    runtime = profile.runtime
    size_range = runtime.spec.model_size_range
    operators = [
        (index, part, selector.operator)
        for index, entry in enumerate(runtime.spec.supported_model_formats)
        for part, selector in (("modelFormat", entry.model_format), ("modelFramework", entry.model_framework))
        if selector is not None
    ]
    problems = runtime_value_problems(
        size_range.min if size_range is not None else None,
        size_range.max if size_range is not None else None,
        operators,
    )
    yield from _value_findings(runtime.key, problems)


# --- SIZE003: overlapping auto-selectable runtimes
# ---------------------------------------------------------------------------

_ZERO = Fraction(0)
_WITH_FRAMEWORK = ModelSpec(model_framework=ModelFramework(name="any"))
_WITHOUT_FRAMEWORK = ModelSpec()

# Entries that can accept the same models: one scope, and the engine's match key — equal format name,
# architecture, quantization, framework name and presence of the two versions (strict presence, SPEC §9).
_Bucket = tuple[str | None, MatchKey]


@dataclass(frozen=True, slots=True)
class _AutoEntry:
    profile: RuntimeProfile
    key: ObjectKey
    entry: SupportedModelFormat
    format: FormatSelector
    match_key: MatchKey


def _auto_entries(profile: RuntimeProfile) -> Iterator[_AutoEntry]:
    """The entries through which ``profile`` can be auto-selected: autoSelect on and a score above 0 (for a
    model that names a framework exactly when the entry does, the only models the entry matches). A runtime
    whose range holds no size (``min`` above ``max``, SIZE002) overlaps nothing."""
    lower, upper = profile.lower, profile.upper
    if profile.disabled or (lower is not None and upper is not None and lower > upper):
        return
    key = profile.runtime.key
    for compiled in profile.entries:
        entry, match_key = compiled.entry, compiled.match_key
        fmt = entry.model_format
        if fmt is None or match_key is None or not entry.auto_select:
            continue
        model = _WITH_FRAMEWORK if entry.model_framework is not None else _WITHOUT_FRAMEWORK
        if entry_score(entry, model) > 0:
            yield _AutoEntry(profile, key, entry, fmt, match_key)


def _bucket(auto: _AutoEntry) -> _Bucket:
    return (auto.key.namespace, auto.match_key)


def _lower_first(auto: _AutoEntry) -> tuple[bool, Fraction]:
    lower = auto.profile.lower
    return (lower is not None, lower if lower is not None else _ZERO)


def _overlap_findings(profiles: Sequence[RuntimeProfile]) -> Iterator[Finding]:
    buckets: dict[_Bucket, list[_AutoEntry]] = {}
    for profile in profiles:
        for auto in _auto_entries(profile):
            buckets.setdefault(_bucket(auto), []).append(auto)
    reported: set[tuple[ObjectKey, ObjectKey]] = set()
    for entries in buckets.values():
        # By lower bound (none first): the ranges after one that start above its upper bound all do.
        entries.sort(key=_lower_first)
        for index, first in enumerate(entries):
            upper = first.profile.upper
            for second in entries[index + 1 :]:
                lower = second.profile.lower
                if upper is not None and lower is not None and lower > upper:
                    break
                a, b = sorted((first, second), key=lambda auto: object_order(auto.key))
                pair = (a.key, b.key)
                if a.key != b.key and pair not in reported and _entries_overlap(a, b):
                    reported.add(pair)
                    yield _overlap_finding(a, b)


def overlaps_with(
    profile: RuntimeProfile, others: Iterable[RuntimeProfile]
) -> dict[ObjectKey, Callable[[], Finding]]:
    """The runtimes of ``others`` (of ``profile``'s scope) that SIZE003 pairs with ``profile``, each with how
    to write that finding (as :func:`lint` reports the pair): for the admission review of one runtime change
    (SPEC §12), which writes only the findings it shows."""
    own = list(_auto_entries(profile))
    found: dict[ObjectKey, Callable[[], Finding]] = {}
    if not own:
        return found
    buckets = {_bucket(auto) for auto in own}
    for other in others:
        if other.runtime.key == profile.runtime.key or not _ranges_overlap(profile, other):
            continue
        for theirs in _auto_entries(other):
            if _bucket(theirs) not in buckets:
                continue
            pair = _overlapping_pair(own, theirs)
            if pair is not None:
                found[other.runtime.key] = functools.partial(_overlap_finding, *pair)
                break
    return found


def _overlapping_pair(own: Sequence[_AutoEntry], theirs: _AutoEntry) -> tuple[_AutoEntry, _AutoEntry] | None:
    for mine in own:
        if _bucket(mine) == _bucket(theirs):
            a, b = sorted((mine, theirs), key=lambda auto: object_order(auto.key))
            if _entries_overlap(a, b):
                return a, b
    return None


def _ranges_overlap(a: RuntimeProfile, b: RuntimeProfile) -> bool:
    """Whether some size is in both ranges (a missing bound is open), as :func:`_overlap_findings` sweeps."""
    if a.upper is not None and b.lower is not None and b.lower > a.upper:
        return False
    return not (b.upper is not None and a.lower is not None and a.lower > b.upper)


def _overlap_finding(first: _AutoEntry, second: _AutoEntry) -> Finding:
    entry, framework = first.entry, first.entry.model_framework
    label = messages.format_label(
        first.format.name,
        format_version=first.format.version,
        architecture=entry.model_architecture,
        quantization=entry.quantization,
        framework_name=framework.name if framework is not None else None,
        framework_version=framework.version if framework is not None else None,
    )
    a, b = first.profile, second.profile
    return _finding(
        Code.SIZE003,
        [first.key, second.key],
        f"{first.key} ({_range(a)}) and {second.key} ({_range(b)}) both auto-select {label} models "
        "in overlapping size ranges; make the ranges disjoint, or turn autoSelect off on one of them",
        field=("spec", "modelSizeRange"),
    )


def _range(profile: RuntimeProfile) -> str:
    return profile.range_text or "any size"


def _entries_overlap(a: _AutoEntry, b: _AutoEntry) -> bool:
    """Whether some model matches both entries (their bucket already agrees on everything but versions and
    pipelines)."""
    if not _constraints_overlap(a.format, b.format):
        return False
    fa, fb = a.entry.model_framework, b.entry.model_framework
    if fa is not None and fb is not None and not _constraints_overlap(fa, fb):
        return False
    return not _pipelines_exclusive(a.entry.diffusion_pipeline, b.entry.diffusion_pipeline)


def _constraints_overlap(
    a: FormatSelector | FrameworkSelector, b: FormatSelector | FrameworkSelector
) -> bool:
    if a.version is None or b.version is None:
        return a.version is None and b.version is None
    return _versions_overlap(a.version, a.operator, b.version, b.operator)


@lru_cache(maxsize=4096)
def _versions_overlap(a: str, a_operator: str, b: str, b_operator: str) -> bool:
    """Whether some model version satisfies both "``a`` OP version" and "``b`` OP version" (SPEC §9).

    Each constraint accepts either the versions equal to its own (``Equal``, or a pre/build/dev part), or the
    official versions of its precision and prefix below it (``GreaterThan[OrEqual]``), a set that holds the
    zero version whenever it is not empty. So one of these witnesses is in both sets when any version is: the
    two versions themselves, each written in the other's precision and prefix, and the zero version in
    either's. The engine's own comparison decides each witness.
    """
    parsed = [version for version in (parse_version(a), parse_version(b)) if version is not None]
    witnesses = {a, b}
    for shape in parsed:
        digits = [0, 0, 0]
        witnesses.add(shape.prefix + ".".join(map(str, digits[: shape.precision])))
        for version in parsed:
            parts = (version.major, version.minor, version.patch)
            if not version.unofficial and not any(parts[shape.precision :]):
                witnesses.add(shape.prefix + ".".join(map(str, parts[: shape.precision])))
    return any(
        version_matches(a, a_operator, witness) and version_matches(b, b_operator, witness)
        for witness in witnesses
    )


def _components_exclusive(a: DiffusionComponent | None, b: DiffusionComponent | None) -> bool:
    if a is None or b is None:
        return False
    return bool(
        (a.library and b.library and a.library != b.library) or (a.type and b.type and a.type != b.type)
    )


def _pipelines_exclusive(a: DiffusionPipeline | None, b: DiffusionPipeline | None) -> bool:
    """Whether no model can meet both entries' pipeline requirements (a requirement either leaves free
    matches anything)."""
    if a is None or b is None:
        return False
    if a.class_name is not None and b.class_name is not None and a.class_name != b.class_name:
        return True
    pairs = [
        (a.scheduler, b.scheduler),
        (a.text_encoder, b.text_encoder),
        (a.tokenizer, b.tokenizer),
        (a.transformer, b.transformer),
        (a.vae, b.vae),
    ]
    pairs += [
        (a.additional_components[name], b.additional_components[name])
        for name in a.additional_components.keys() & b.additional_components.keys()
    ]
    return any(_components_exclusive(x, y) for x, y in pairs)


# --- RANK001, RANK002, DEAD001, SERV001: rankings
# ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Outranked:
    """Where a runtime that is rank 1 for no model comes closest: its rank for a model and who wins."""

    rank: int
    model: ObjectKey
    winner: ObjectKey

    @property
    def order(self) -> tuple[int, tuple[str, str, str]]:
        return (self.rank, object_order(self.model))


class _RankingReview:
    """Ranks every model with a format in every view, collecting the ranking findings and what each runtime
    and model achieves."""

    def __init__(
        self,
        catalog: CatalogView,
        *,
        views: Sequence[str],
        models: Sequence[Model],
        profiles: Mapping[ObjectKey, RuntimeProfile],
        isvcs: Sequence[InferenceService],
        chains: Mapping[ObjectKey, Chain | ChainError],
        lookup: RuntimeLookup,
    ) -> None:
        self.catalog = catalog
        self.views = views
        self.models = models
        self.profiles = profiles
        self.isvcs = isvcs
        self.chains = chains
        self.lookup = lookup
        self.winners: set[ObjectKey] = set()
        self.outranked: dict[ObjectKey, _Outranked] = {}
        self.judged: set[ObjectKey] = set()
        self.supported: set[ObjectKey] = set()
        self.found: set[Finding] = set()

    def findings(self) -> set[Finding]:
        judged: set[tuple[ObjectKey, tuple[ObjectKey, ...]]] = set()
        for view in self.views:
            for model in self.models:
                if model.namespace not in (None, view) or not model.spec.has_format:
                    continue
                if model.namespace is None and self.catalog.resolve_model(view, model.name) is not model:
                    continue  # a BaseModel of this name shadows it in this namespace (SPEC §1)
                candidates = self.catalog.runtime_profiles_for_format(view, model.spec.format_name)
                # Views that differ only in runtimes of other formats rank the model alike: judge it once.
                seen = (model.key, tuple(p.runtime.key for p in candidates if not p.is_cluster))
                if seen not in judged:
                    judged.add(seen)
                    self._review(model, candidates)
        self._dead_runtimes()
        for model in self.models:
            if model.key in self.judged and model.key not in self.supported:
                self.found.add(_unserved(model, self.catalog.model_profile(model).label))
        return self.found

    def _review(self, model: Model, candidates: Sequence[RuntimeProfile]) -> None:
        # The engine's own ranking (SPEC §4), the one evaluate and explain use.
        ranking = rank(candidates, self.catalog.model_profile(model))
        self.judged.add(model.key)
        if _supported(ranking):
            self.supported.add(model.key)
        ranked = ranking.ranked
        if not ranked:
            return
        keys = [rank_key(result) for result in ranked]
        first = ranked[0]
        winner = first.profile.runtime.key
        self.winners.add(winner)
        for position, result in enumerate(ranked[1:], start=2):
            candidate = _Outranked(position, model.key, winner)
            key = result.profile.runtime.key
            known = self.outranked.get(key)
            if known is None or candidate.order < known.order:
                self.outranked[key] = candidate
        tie = rank_tie(model, first, ranked[1] if len(ranked) > 1 else None)
        if tie is not None:
            self.found.add(tie)
        # RANK002 (no bound) and RANK003 (one bound): the winner is closer than the runtimes with more bounds.
        bounds = _bounds(first.profile)
        if first.model.size is not None and bounds < 2:
            beaten = [
                result.profile
                for result, key in zip(ranked[1:], keys[1:], strict=True)
                if _bounds(result.profile) > bounds and _wins_on_distance(keys[0], key)
            ]
            if beaten:
                self.found.add((_unranged_wins if bounds == 0 else _one_bound_wins)(model, first, beaten))

    def _dead_runtimes(self) -> None:
        # A runtime that another runtime's chain passes through is in use: deleting it breaks that chain.
        used: set[ObjectKey] = {
            link.runtime.key
            for chain in self.chains.values()
            if isinstance(chain, Chain)
            for link in chain.links[1:]
        }
        for isvc in self.isvcs:
            runtime_name = isvc.runtime_name
            if runtime_name is not None:
                named = find_named_runtime(
                    self.catalog, isvc.namespace, runtime_name, isvc.runtime_kind, self.lookup
                )
                if named is not None:
                    used.add(named.runtime.key)
            outcome = evaluate(self.catalog, isvc, self.lookup)
            if outcome is not None and outcome.kind is OutcomeKind.RUNTIME_SELECTED and outcome.runtime:
                used.add(outcome.runtime.key)
        for key, profile in self.profiles.items():
            # A runtime profile exists to be inherited from, not to be selected (SPEC §11).
            if key not in self.winners and key not in used and profile.runtime.runtime_profile != "true":
                self.found.add(_dead(profile, self.outranked.get(key)))


def _supported(ranking: Ranking) -> bool:
    """Whether some runtime supports the model (passes SPEC §3 checks 1–5); every ranked one does."""
    return bool(ranking.ranked) or any(result.supports_model for result in ranking.others)


def _wins_on_distance(winner: RankKey, other: RankKey) -> bool:
    """Whether ``winner`` ranks above ``other`` by size distance: same scope and score, closer."""
    return winner[:2] == other[:2] and winner[2] < other[2]


def _model_title(model: Model) -> str:
    size = model.spec.model_parameter_size
    return f"{model.key} ({size})" if size else f"{model.key} (no modelParameterSize)"


def rank_tie(model: Model, first: RuntimeCheck, second: RuntimeCheck | None) -> Finding | None:
    """RANK001 for ``model`` whose rank-1 and rank-2 runtimes (SPEC §4) are ``first`` and ``second`` (None:
    only one is auto-selectable): a finding when they differ only by name. Lint and the admission review of a
    runtime change (SPEC §12) both decide it here."""
    if second is None or rank_key(first)[:3] != rank_key(second)[:3]:
        return None
    return _tie(model, first, second)


def _tie(model: Model, first: RuntimeCheck, second: RuntimeCheck) -> Finding:
    a, b = first.profile.runtime.key, second.profile.runtime.key
    if model.spec.has_size:
        message = (
            f"{_model_title(model)}: {a} and {b} tie on score {first.score} and size distance, so the name "
            f"picks {first.profile.name}; raise the priority of the one that should serve it, "
            "or give them different modelSizeRanges"
        )
    else:
        message = (
            f"{_model_title(model)}: {a} and {b} tie on score {first.score}, so the name picks "
            f"{first.profile.name}; set the model's modelParameterSize, "
            "or raise the priority of the runtime that should serve it"
        )
    return _finding(Code.RANK001, [model.key, a, b], message)


def _listed(beaten: Sequence[RuntimeProfile]) -> tuple[str, str]:
    """The runtimes a winner ranks above, each with its range, and the one to raise the priority of."""
    others = " and ".join(f"{p.runtime.key} ({p.range_text})" for p in beaten)
    return others, beaten[0].name if len(beaten) == 1 else "the one that should serve it"


def _unranged_wins(model: Model, winner: RuntimeCheck, beaten: Sequence[RuntimeProfile]) -> Finding:
    key = winner.profile.runtime.key
    others, raise_ = _listed(beaten)
    whose = "whose range covers" if len(beaten) == 1 else "whose ranges cover"
    return _finding(
        Code.RANK002,
        [model.key, key, *(p.runtime.key for p in beaten)],
        f"{_model_title(model)}: {key} has no modelSizeRange, so it counts as closest and "
        f"wins over {others}, {whose} the model; give {winner.profile.name} a modelSizeRange, "
        f"or raise the priority of {raise_}",
    )


def _bounds(profile: RuntimeProfile) -> int:
    """How many size bounds the runtime has (a bound is present when its key holds a string, SPEC §2)."""
    size_range = profile.runtime.spec.model_size_range
    if size_range is None:
        return 0
    return (size_range.min is not None) + (size_range.max is not None)


def _one_bound_wins(model: Model, winner: RuntimeCheck, beaten: Sequence[RuntimeProfile]) -> Finding:
    key = winner.profile.runtime.key
    others, raise_ = _listed(beaten)
    which = "which has" if len(beaten) == 1 else "which have"
    return _finding(
        Code.RANK003,
        [model.key, key, *(p.runtime.key for p in beaten)],
        f"{_model_title(model)}: {key} ({winner.profile.range_text}) has one size bound, so only that bound "
        f"counts in its distance and it ranks above {others}, {which} both; give {winner.profile.name} both "
        f"bounds, or raise the priority of {raise_}",
    )


def _dead(profile: RuntimeProfile, outranked: _Outranked | None) -> Finding:
    key = profile.runtime.key
    unnamed = "and no InferenceService names it"
    if profile.disabled:
        message = f"{key} is disabled {unnamed}; delete it, or enable it"
    elif not any(compiled.entry.auto_select for compiled in profile.entries):
        message = (
            f"{key} has no supportedModelFormats entry with autoSelect: true {unnamed}; "
            "set autoSelect: true on the entry for the models it should serve, or delete it"
        )
    elif outranked is not None:
        message = (
            f"{key} is rank 1 for no model {unnamed} (for {outranked.model} it ranks {outranked.rank}, "
            f"behind {outranked.winner}); raise its priority or narrow its modelSizeRange, or delete it"
        )
    else:
        message = (
            f"{key} can auto-select no model of the catalog {unnamed}; make its supportedModelFormats and "
            "modelSizeRange match the models it should serve, or delete it"
        )
    return _finding(Code.DEAD001, [key], message)


def _unserved(model: Model, label: str) -> Finding:
    where = f" -n {model.namespace}" if model.namespace is not None else ""
    size = model.spec.model_parameter_size
    about = f"{label}, {size}" if size else label
    return _finding(
        Code.SERV001,
        [model.key],
        f"{model.key} ({about}): no runtime supports it; add or fix a runtime for it "
        f"(kubectl ome-selector runtime explain --model {model.name}{where} shows each runtime's reason)",
    )


# --- SCHM001: fields no CRD declares
# --------------------------------------------------------------------------------------------------


def _cut(part: str | int) -> str | int:
    """A key of a field path, cut after :data:`_VALUE_LIMIT` characters (keys of maps are anyone's)."""
    if isinstance(part, int) or len(part) <= _VALUE_LIMIT:
        return part
    return part[:_VALUE_LIMIT] + messages.ELLIPSIS


def _unknown_message(key: ObjectKey, unknown: UnknownField) -> str:
    path = field_path(*(_cut(part) for part in unknown.parts))
    advice = (
        f"did you mean {unknown.suggestion}?"
        if unknown.suggestion is not None
        else "remove it or correct its name"
    )
    return (
        f"{key}: unknown field {path}: no CRD declares it, so it is dropped or rejected and never read; "
        f"{advice}"
    )


def field_findings(key: ObjectKey, body: Mapping[str, Any]) -> list[Finding]:
    """SCHM001 for each field of ``body`` (the object ``key``, as read from a file or the cluster) that no CRD
    declares (:func:`~ome_selector.api.fields.unknown_fields`): the typed objects lint judges have dropped
    them."""
    return [
        _finding(Code.SCHM001, [key], _unknown_message(key, unknown), field=unknown.parts)
        for unknown in unknown_fields(body)
    ]


# --- QUANT001: a quantization the files will give, that no runtime serving the model declares
# -----------------------------------------------------------------------------------------------

#: The architectures whose published checkpoints all declare their quantization in ``config.json``, and the
#: value SPEC §10 learns from it: gpt-oss ships MXFP4 experts (``quant_method: mxfp4``), DeepSeek-V3's
#: architecture (DeepSeek-V3, R1, Kimi-K2) block FP8 (``quant_method: fp8``) (SPEC §11 QUANT001).
FAMILY_QUANTIZATIONS: Mapping[str, str] = {"GptOssForCausalLM": "mxfp4", "DeepseekV3ForCausalLM": "fp8"}


def learned_quantization_findings(
    catalog: Catalog, views: Sequence[str], models: Sequence[Model]
) -> Iterator[Finding]:
    """QUANT001 (SPEC §11): a model whose storage is known (``spec.storage.storageUri``), without a
    ``quantization``, of an architecture of :data:`FAMILY_QUANTIZATIONS`, that some runtime visible from a
    view supports today (SPEC §3 checks 1-5) and that no runtime visible from that view supports once it has
    its family's quantization (strict presence: SPEC §9)."""
    for model in models:
        spec = model.spec
        quantization = FAMILY_QUANTIZATIONS.get(spec.model_architecture or "")
        if model.storage_uri is None or spec.quantization or quantization is None:
            continue
        today = catalog.model_profile(model)
        learned = catalog.model_profile(
            model.model_copy(update={"spec": spec.model_copy(update={"quantization": quantization})})
        )
        for view in [model.namespace] if model.namespace is not None else views:
            runtimes = catalog.runtime_profiles_visible_from(view)
            serving = [profile for profile in runtimes if check(profile, today).supports_model]
            if not serving or any(check(profile, learned).supports_model for profile in runtimes):
                continue
            names = ", ".join(profile.runtime.name for profile in serving)
            yield _finding(
                Code.QUANT001,
                [model.key, *(profile.runtime.key for profile in serving)],
                f"{model.key} has no quantization yet; its files will give quantization {quantization} "
                f"(every published {spec.model_architecture} checkpoint declares it), which none of the "
                f"runtimes that serve it today declares ({names}): once learned, no runtime serves it; add "
                f"quantization: {quantization} to their entries, or set the model's quantization",
            )
