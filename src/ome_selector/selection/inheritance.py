"""Runtime inheritance and the named-runtime lookup (SPEC §1 "Effective runtime" and "Lookups").

- :func:`find_named_runtime` finds the runtime an InferenceService names, by its ``spec.runtime.kind`` (the
  v1.3 rule) or whatever the kind (the legacy rule, :class:`RuntimeLookup`); :func:`named_runtime_not_found`
  is the message when there is none.
- :func:`resolve_chain` walks a runtime's ``ome.io/inherit-from`` chain in the lookup context its first
  runtime fixes, and gives the resolved :class:`Chain` or the :class:`ChainError` of a broken one.
- :func:`effective_spec` merges a resolved chain root-first, each runtime over its parent, for the fields
  selection reads; :func:`effective_profile` compiles it under the identity of the chain's first runtime.

Where each spec counts: auto-selection judges every runtime on its own spec (its stored profile); only a
named runtime is judged on its effective spec (:func:`~.outcome.evaluate`). Pure: the runtimes come from a
:class:`~.view.RuntimeIndex`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from ome_selector.api.resources import (
    DEPLOYMENT_MODE_ANNOTATION,
    AcceleratorRequirements,
    ComponentConfig,
    Kind,
    ModeAnnotations,
    ModelSizeRange,
    RuntimeSpec,
    SupportedModelFormat,
)
from ome_selector.selection import messages
from ome_selector.selection.profiles import RuntimeProfile
from ome_selector.selection.view import RuntimeIndex

__all__ = [
    "MAX_CHAIN_DEPTH",
    "Chain",
    "ChainError",
    "ChainErrorReason",
    "RuntimeLookup",
    "effective_profile",
    "effective_spec",
    "find_named_runtime",
    "is_runtime_name",
    "named_runtime_not_found",
    "resolve_chain",
    "resolve_effective",
]

#: Most runtimes a chain holds, the runtime itself included (SPEC §1).
MAX_CHAIN_DEPTH = 5

_SERVING_RUNTIME = Kind.SERVING_RUNTIME.value
_CLUSTER_SERVING_RUNTIME = Kind.CLUSTER_SERVING_RUNTIME.value


class RuntimeLookup(StrEnum):
    """How a named runtime is found (``--runtime-lookup``, SPEC §1): by ``spec.runtime.kind`` as OME v1.3
    does, or as OME v1.2.2 and older do, whatever the kind."""

    V1_3 = "v1.3"
    LEGACY = "legacy"


def find_named_runtime(
    runtimes: RuntimeIndex,
    namespace: str,
    name: str,
    kind: str | None,
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
) -> RuntimeProfile | None:
    """The runtime ``name`` an InferenceService of ``namespace`` names with ``spec.runtime.kind`` ``kind``
    (None when absent from the stored object), SPEC §1:

    - ``ServingRuntime``: the ServingRuntime of the namespace, nothing else;
    - ``ClusterServingRuntime``: the ClusterServingRuntime if there is one, else the ServingRuntime;
    - any other value, ``""`` and None: the ServingRuntime if there is one, else the ClusterServingRuntime —
      which is also the legacy rule, whatever the kind.
    """
    serving = runtimes.runtime_profile(Kind.SERVING_RUNTIME, namespace, name)
    if lookup is RuntimeLookup.LEGACY:
        return serving or runtimes.runtime_profile(Kind.CLUSTER_SERVING_RUNTIME, None, name)
    if kind == _SERVING_RUNTIME:
        return serving
    if kind == _CLUSTER_SERVING_RUNTIME:
        return runtimes.runtime_profile(Kind.CLUSTER_SERVING_RUNTIME, None, name) or serving
    return serving or runtimes.runtime_profile(Kind.CLUSTER_SERVING_RUNTIME, None, name)


def named_runtime_not_found(
    name: str, namespace: str, kind: str | None, lookup: RuntimeLookup = RuntimeLookup.V1_3
) -> str:
    """The SPEC §1 message when :func:`find_named_runtime` finds nothing."""
    if lookup is RuntimeLookup.V1_3 and kind == _SERVING_RUNTIME:
        return messages.serving_runtime_not_found(name, namespace)
    return messages.runtime_not_found(name, namespace)


# --- chains ------------------------------------------------------------------------------------------------

#: A DNS-1123 subdomain: ``.``-separated labels of lower-case letters, digits and ``-``, each starting and
#: ending with a letter or digit (at most 253 characters, checked apart).
_RUNTIME_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII)


def is_runtime_name(value: str) -> bool:
    """Whether ``value`` can name a runtime (a DNS-1123 subdomain of at most 253 characters)."""
    return len(value) <= messages.RUNTIME_NAME_LIMIT and _RUNTIME_NAME.fullmatch(value) is not None


class ChainErrorReason(StrEnum):
    """Why a chain does not resolve (SPEC §1), as OME v1.3 names it."""

    PARENT_NOT_FOUND = "ParentNotFound"
    INHERITANCE_CYCLE = "InheritanceCycle"
    MAX_DEPTH_EXCEEDED = "MaxDepthExceeded"


@dataclass(frozen=True, slots=True)
class ChainError:
    """A broken chain: its reason, its SPEC §1 text (``message``), the names collected child-first, and the
    parent value the walk stopped at (None for ``MaxDepthExceeded``).

    ``missing_parent`` is the parent name that was looked up and not found (a valid name), None otherwise:
    the one a webhook reads directly before it denies (SPEC §7).
    """

    reason: ChainErrorReason
    message: str
    names: tuple[str, ...]
    parent: str | None = None
    looked_up: bool = False

    @property
    def missing_parent(self) -> str | None:
        return self.parent if self.looked_up else None


@dataclass(frozen=True, slots=True)
class Chain:
    """A resolved chain: ``links`` child-first, the runtime the walk started from first (a runtime without a
    parent is a chain of one)."""

    links: tuple[RuntimeProfile, ...]

    @property
    def runtime(self) -> RuntimeProfile:
        """The runtime the walk started from."""
        return self.links[0]

    @property
    def root_first(self) -> tuple[RuntimeProfile, ...]:
        """The chain root first, the runtime itself last (explain's ``inheritanceChain``, SPEC §6)."""
        return self.links[::-1]

    @property
    def has_parent(self) -> bool:
        return len(self.links) > 1


def resolve_chain(runtimes: RuntimeIndex, profile: RuntimeProfile) -> Chain | ChainError:
    """Walk ``profile``'s ``ome.io/inherit-from`` chain (SPEC §1).

    The lookup context is fixed by ``profile``: from a ClusterServingRuntime, parents are
    ClusterServingRuntimes only; from a ServingRuntime of namespace N, every parent is the ServingRuntime
    N/<parent> if there is one, else the ClusterServingRuntime <parent>. Before each parent is looked up:
    five names collected already → ``MaxDepthExceeded``; the parent's name among them → ``InheritanceCycle``;
    not a runtime name, or no such runtime → ``ParentNotFound``.
    """
    links = [profile]
    names = [profile.name]
    namespace = profile.namespace  # None: a walk among ClusterServingRuntimes
    current = profile
    while True:
        parent = current.runtime.parent_name
        if parent is None:
            return Chain(tuple(links))
        if len(names) >= MAX_CHAIN_DEPTH:
            message = messages.max_depth_exceeded(MAX_CHAIN_DEPTH, names)
            return ChainError(ChainErrorReason.MAX_DEPTH_EXCEEDED, message, tuple(names))
        if parent in names:
            message = messages.inheritance_cycle(names, parent)
            return ChainError(ChainErrorReason.INHERITANCE_CYCLE, message, tuple(names), parent)
        if not is_runtime_name(parent):
            message = messages.parent_not_a_name(parent, names)
            return ChainError(ChainErrorReason.PARENT_NOT_FOUND, message, tuple(names), parent)
        found = _parent(runtimes, namespace, parent)
        if found is None:
            message = messages.parent_not_found(parent, names)
            return ChainError(
                ChainErrorReason.PARENT_NOT_FOUND, message, tuple(names), parent, looked_up=True
            )
        links.append(found)
        names.append(parent)
        current = found


def _parent(runtimes: RuntimeIndex, namespace: str | None, name: str) -> RuntimeProfile | None:
    if namespace is not None:
        serving = runtimes.runtime_profile(Kind.SERVING_RUNTIME, namespace, name)
        if serving is not None:
            return serving
    return runtimes.runtime_profile(Kind.CLUSTER_SERVING_RUNTIME, None, name)


# --- the merge ---------------------------------------------------------------------------------------------


def effective_spec(chain: Chain) -> RuntimeSpec:
    """The chain's specs merged root-first, each runtime laid over its parent (SPEC §1): for each field read,
    the value of the nearest runtime, child first, that sets it — ``disabled`` when it holds a boolean, the
    format list and the accelerator classes when non-empty (taken whole), each size bound and each mode
    annotation when its key holds a string. A chain of one is the runtime's own spec."""
    if not chain.has_parent:
        return chain.runtime.runtime.spec
    disabled: bool | None = None
    formats: tuple[SupportedModelFormat, ...] = ()
    minimum: str | None = None
    maximum: str | None = None
    classes: tuple[str, ...] = ()
    engine: str | None = None
    decoder: str | None = None
    for link in chain.root_first:
        spec = link.runtime.spec
        if spec.disabled is not None:
            disabled = spec.disabled
        if spec.supported_model_formats:
            formats = spec.supported_model_formats
        size_range = spec.model_size_range
        if size_range is not None:
            minimum = size_range.min if size_range.min is not None else minimum
            maximum = size_range.max if size_range.max is not None else maximum
        if spec.accelerator_classes:
            classes = spec.accelerator_classes
        engine = spec.engine_mode_annotation if spec.engine_mode_annotation is not None else engine
        decoder = spec.decoder_mode_annotation if spec.decoder_mode_annotation is not None else decoder
    return RuntimeSpec(
        disabled=disabled,
        supported_model_formats=formats,
        model_size_range=(
            ModelSizeRange(min=minimum, max=maximum) if minimum is not None or maximum is not None else None
        ),
        accelerator_requirements=AcceleratorRequirements(accelerator_classes=classes) if classes else None,
        engine_config=_component(engine),
        decoder_config=_component(decoder),
    )


def _component(mode: str | None) -> ComponentConfig | None:
    if mode is None:
        return None
    return ComponentConfig(annotations=ModeAnnotations.model_validate({DEPLOYMENT_MODE_ANNOTATION: mode}))


def effective_profile(chain: Chain) -> RuntimeProfile:
    """The chain's first runtime compiled with its effective spec (its own profile for a chain of one): its
    kind, name and scope stay its own (SPEC §5)."""
    if not chain.has_parent:
        return chain.runtime
    runtime = chain.runtime.runtime
    return RuntimeProfile.of(runtime.model_copy(update={"spec": effective_spec(chain)}))


def resolve_effective(runtimes: RuntimeIndex, profile: RuntimeProfile) -> RuntimeProfile | ChainError:
    """``profile``'s effective profile (:func:`effective_profile`), or the error of its broken chain."""
    chain = resolve_chain(runtimes, profile)
    return chain if isinstance(chain, ChainError) else effective_profile(chain)
