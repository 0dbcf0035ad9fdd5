"""The five ``ome.io/v1beta1`` kinds ome-selector reads (SPEC §1): frozen pydantic models, and for an
InferenceService an immutable slotted record around its pydantic spec (see :class:`InferenceService`).

Only the fields the product reads are modelled; everything else in a document is ignored. Field names are
snake_case in Python and camelCase on the wire (``populate_by_name`` accepts both). A ``null`` counts as
absent everywhere. Build instances with :func:`ome_selector.api.loading.load_resource`, which also applies the
CRD defaults and validation and reports errors with field paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

API_GROUP = "ome.io"
API_VERSION = "v1beta1"
API_GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

#: The annotation an InferenceService can use to ask for an accelerator class (SPEC §3.2).
ACCELERATOR_CLASS_ANNOTATION = "ome.io/accelerator-class"
#: The annotation of a runtime that names its parent runtime (SPEC §1 "Effective runtime").
INHERIT_FROM_ANNOTATION = "ome.io/inherit-from"
#: The annotation that marks a runtime as a profile meant to be inherited from (SPEC §11 INHR003).
RUNTIME_PROFILE_ANNOTATION = "ome.io/runtime-profile"
#: The key of a component's ``annotations`` that declares its deployment mode (SPEC §3.3).
DEPLOYMENT_MODE_ANNOTATION = "ome.io/deploymentMode"
#: The deployment modes that declare something (SPEC §3.3); any other value declares nothing.
DEPLOYMENT_MODES = frozenset({"RawDeployment", "OMENative", "MultiNode", "VirtualDeployment"})
#: The values the shipped InferenceService CRD allows for ``spec.deploymentMode`` (SPEC §1).
DEPLOYMENT_MODE_ENUM = ("OMENative", "RawDeployment")

#: The version operators SPEC §9 knows; any other value matches no versioned model.
KNOWN_OPERATORS = ("Equal", "GreaterThan", "GreaterThanOrEqual")
DEFAULT_OPERATOR = "Equal"


class Kind(StrEnum):
    """The five kinds ome-selector reads."""

    BASE_MODEL = "BaseModel"
    CLUSTER_BASE_MODEL = "ClusterBaseModel"
    SERVING_RUNTIME = "ServingRuntime"
    CLUSTER_SERVING_RUNTIME = "ClusterServingRuntime"
    INFERENCE_SERVICE = "InferenceService"

    @property
    def plural(self) -> str:
        """The resource name in API paths, e.g. ``basemodels``."""
        return _PLURALS[self]

    @property
    def namespaced(self) -> bool:
        """Whether objects of this kind live in a namespace."""
        return self in _NAMESPACED

    @property
    def is_model(self) -> bool:
        return self in (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL)

    @property
    def is_runtime(self) -> bool:
        return self in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME)


_PLURALS = {
    Kind.BASE_MODEL: "basemodels",
    Kind.CLUSTER_BASE_MODEL: "clusterbasemodels",
    Kind.SERVING_RUNTIME: "servingruntimes",
    Kind.CLUSTER_SERVING_RUNTIME: "clusterservingruntimes",
    Kind.INFERENCE_SERVICE: "inferenceservices",
}
_NAMESPACED = frozenset({Kind.BASE_MODEL, Kind.SERVING_RUNTIME, Kind.INFERENCE_SERVICE})


class ObjectKey(NamedTuple):
    """Identity of one object: ``namespace`` is None for the cluster kinds."""

    kind: Kind
    namespace: str | None
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace is not None else ""
        return f"{self.kind.value} {where}{self.name}"


class _Frozen(BaseModel):
    """Base of every model here: immutable, camelCase aliases, unknown fields ignored, ``null`` = absent."""

    model_config = ConfigDict(
        frozen=True,
        populate_by_name=True,
        alias_generator=to_camel,
        extra="ignore",
        protected_namespaces=(),
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            return {key: value for key, value in data.items() if value is not None}
        return data


# ------------------------------------------------------------------------------------------------------------
# Models (BaseModel, ClusterBaseModel)


class ModelFormat(_Frozen):
    """``spec.modelFormat`` of a model. A missing or empty name means the metadata is not known yet."""

    name: StrictStr = ""
    version: StrictStr | None = None


class ModelFramework(_Frozen):
    """``spec.modelFramework`` of a model."""

    name: StrictStr = ""
    version: StrictStr | None = None


class DiffusionComponent(_Frozen):
    """One component of a diffusion pipeline; an empty string is "not set"."""

    library: StrictStr = ""
    type: StrictStr = ""


class DiffusionPipeline(_Frozen):
    """``diffusionPipeline`` on a model or on a runtime entry (SPEC §9)."""

    class_name: StrictStr | None = None
    scheduler: DiffusionComponent | None = None
    text_encoder: DiffusionComponent | None = None
    tokenizer: DiffusionComponent | None = None
    transformer: DiffusionComponent | None = None
    vae: DiffusionComponent | None = None
    additional_components: dict[StrictStr, DiffusionComponent] = Field(default_factory=dict)


class ModelSpec(_Frozen):
    """The fields of a model's spec that runtime selection reads."""

    model_format: ModelFormat | None = None
    model_framework: ModelFramework | None = None
    model_architecture: StrictStr | None = None
    quantization: StrictStr | None = None
    model_parameter_size: StrictStr | None = None
    diffusion_pipeline: DiffusionPipeline | None = None
    disabled: StrictBool = False

    @property
    def format_name(self) -> str:
        """The format name, ``""`` when the model has none yet."""
        return self.model_format.name if self.model_format is not None else ""

    @property
    def has_format(self) -> bool:
        """Whether the model has a non-empty ``modelFormat.name`` (otherwise its metadata is pending)."""
        return bool(self.format_name)

    @property
    def has_size(self) -> bool:
        """Whether ``modelParameterSize`` is a non-empty string (even one that reads as 0), SPEC §2."""
        return bool(self.model_parameter_size)


class Model(_Frozen):
    """A BaseModel (namespaced) or ClusterBaseModel (``namespace`` None)."""

    kind: Kind
    name: StrictStr
    namespace: StrictStr | None = None
    spec: ModelSpec = Field(default_factory=ModelSpec)
    uid: StrictStr | None = None
    resource_version: StrictStr | None = None
    #: ``spec.storage.storageUri`` when it is a non-empty string (SPEC §11 QUANT001: the storage is known).
    storage_uri: StrictStr | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.kind, self.namespace, self.name)

    @property
    def is_cluster(self) -> bool:
        return self.kind is Kind.CLUSTER_BASE_MODEL


# ------------------------------------------------------------------------------------------------------------
# Runtimes (ServingRuntime, ClusterServingRuntime)


class FormatSelector(_Frozen):
    """``supportedModelFormats[].modelFormat``: name required; ``operator`` Equal, ``weight`` 1 by default."""

    name: StrictStr
    version: StrictStr | None = None
    operator: StrictStr = DEFAULT_OPERATOR
    weight: StrictInt = 1


class FrameworkSelector(_Frozen):
    """``supportedModelFormats[].modelFramework``; ``operator`` Equal and ``weight`` 1 by default."""

    name: StrictStr = ""
    version: StrictStr | None = None
    operator: StrictStr = DEFAULT_OPERATOR
    weight: StrictInt = 1


class SupportedModelFormat(_Frozen):
    """One entry of ``spec.supportedModelFormats`` (SPEC §1)."""

    model_format: FormatSelector | None = None
    model_framework: FrameworkSelector | None = None
    model_architecture: StrictStr | None = None
    quantization: StrictStr | None = None
    diffusion_pipeline: DiffusionPipeline | None = None
    auto_select: StrictBool = False
    priority: Annotated[StrictInt, Field(ge=1)] = 1


class ModelSizeRange(_Frozen):
    """``spec.modelSizeRange``: each bound is present when its key holds a string (even an empty one)."""

    min: StrictStr | None = None
    max: StrictStr | None = None


class AcceleratorRequirements(_Frozen):
    """``spec.acceleratorRequirements``; only the class list matters for selection."""

    accelerator_classes: tuple[StrictStr, ...] = ()


class ModeAnnotations(_Frozen):
    """The ``annotations`` map of a component (a runtime's ``engineConfig``/``decoderConfig``, an
    InferenceService's ``engine``/``decoder``), reduced to the one key selection reads (SPEC §3.3). The
    loader checks that every value of the map is a string."""

    deployment_mode: StrictStr | None = Field(default=None, alias=DEPLOYMENT_MODE_ANNOTATION)


def declared_mode(value: str | None) -> str | None:
    """``value`` when it is one of the four deployment modes (SPEC §3.3), else None: it declares nothing."""
    return value if value in DEPLOYMENT_MODES else None


def _annotated_mode(annotations: ModeAnnotations | None) -> str | None:
    return annotations.deployment_mode if annotations is not None else None


class ComponentConfig(_Frozen):
    """``spec.engineConfig`` or ``spec.decoderConfig`` of a runtime: only its mode annotation is read."""

    annotations: ModeAnnotations | None = None

    @property
    def mode_annotation(self) -> str | None:
        """The ``ome.io/deploymentMode`` value as written (None when absent), valid or not."""
        return _annotated_mode(self.annotations)


class RuntimeSpec(_Frozen):
    """The fields of a runtime's spec that runtime selection reads.

    ``disabled`` is None when the spec does not set it (an effective spec takes it from a parent then, SPEC
    §1); :attr:`is_disabled` is what the checks read.
    """

    disabled: StrictBool | None = None
    supported_model_formats: tuple[SupportedModelFormat, ...] = ()
    model_size_range: ModelSizeRange | None = None
    accelerator_requirements: AcceleratorRequirements | None = None
    engine_config: ComponentConfig | None = None
    decoder_config: ComponentConfig | None = None

    @property
    def is_disabled(self) -> bool:
        """``spec.disabled: true`` (absent counts as false)."""
        return self.disabled is True

    @property
    def accelerator_classes(self) -> tuple[str, ...]:
        reqs = self.accelerator_requirements
        return reqs.accelerator_classes if reqs is not None else ()

    @property
    def engine_mode_annotation(self) -> str | None:
        """``spec.engineConfig.annotations["ome.io/deploymentMode"]`` as written, None when absent."""
        return self.engine_config.mode_annotation if self.engine_config is not None else None

    @property
    def decoder_mode_annotation(self) -> str | None:
        """``spec.decoderConfig.annotations["ome.io/deploymentMode"]`` as written, None when absent."""
        return self.decoder_config.mode_annotation if self.decoder_config is not None else None


class Runtime(_Frozen):
    """A ServingRuntime (namespaced) or ClusterServingRuntime (``namespace`` None)."""

    kind: Kind
    name: StrictStr
    namespace: StrictStr | None = None
    spec: RuntimeSpec = Field(default_factory=RuntimeSpec)
    uid: StrictStr | None = None
    resource_version: StrictStr | None = None
    #: ``metadata.generation``: moves with every change of the spec, not with one of labels or annotations.
    generation: int | None = None
    #: ``metadata.annotations["ome.io/inherit-from"]`` as written (None when absent): the parent's name.
    inherit_from: StrictStr | None = None
    #: ``metadata.annotations["ome.io/runtime-profile"]`` as written (None when absent).
    runtime_profile: StrictStr | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.kind, self.namespace, self.name)

    @property
    def is_cluster(self) -> bool:
        return self.kind is Kind.CLUSTER_SERVING_RUNTIME

    @property
    def parent_name(self) -> str | None:
        """The ``ome.io/inherit-from`` value, None when absent or ``""`` (no parent, SPEC §1)."""
        return self.inherit_from or None

    @property
    def read_inputs(self) -> tuple[RuntimeSpec, str | None, str | None]:
        """Everything of the runtime a verdict or a finding reads: its spec and its two annotations (SPEC §1,
        §5 v4: an annotation change counts although it leaves ``metadata.generation`` as it was)."""
        return self.spec, self.inherit_from, self.runtime_profile

    @property
    def scope(self) -> str:
        """``Namespaced`` or ``Cluster`` (the SCOPE column of explain)."""
        return "Cluster" if self.is_cluster else "Namespaced"


# ------------------------------------------------------------------------------------------------------------
# InferenceService


class ModelRef(_Frozen):
    """``spec.model``; ``name`` is required (the kind is ignored by lookups)."""

    name: StrictStr


class RuntimeRef(_Frozen):
    """``spec.runtime``; an absent or empty name means auto-selection. ``kind`` picks the named runtime's
    lookup (SPEC §1); the loader defaults an absent one to ``ClusterServingRuntime`` for files, as the CRD
    does."""

    name: StrictStr | None = None
    kind: StrictStr | None = None
    auto_sync: StrictBool | None = None


class RunnerSpec(_Frozen):
    image: StrictStr | None = None


class LeaderWorkerSpec(_Frozen):
    runner: RunnerSpec | None = None


class AcceleratorSelector(_Frozen):
    accelerator_class: StrictStr | None = None


class EngineSpec(_Frozen):
    """The parts of ``spec.engine`` that selection reads; its presence alone matters to the webhook."""

    runner: RunnerSpec | None = None
    leader: LeaderWorkerSpec | None = None
    worker: LeaderWorkerSpec | None = None
    accelerator_override: AcceleratorSelector | None = None
    annotations: ModeAnnotations | None = None


class DecoderSpec(_Frozen):
    accelerator_override: AcceleratorSelector | None = None
    annotations: ModeAnnotations | None = None


class InferenceServiceSpec(_Frozen):
    model: ModelRef | None = None
    runtime: RuntimeRef | None = None
    engine: EngineSpec | None = None
    decoder: DecoderSpec | None = None
    accelerator_selector: AcceleratorSelector | None = None
    deployment_mode: StrictStr | None = None
    #: Whether ``spec.replicaRefs`` is set: any value but null, an empty list or false. Such an
    #: InferenceService fronts standalone replicas; selection leaves it alone (SPEC §5). Only its presence
    #: is read, so any value passes.
    replica_refs: bool = False

    @field_validator("replica_refs", mode="before")
    @classmethod
    def _replica_refs_set(cls, value: Any) -> bool:
        return value if isinstance(value, bool) else value != []


class DeploymentModes(NamedTuple):
    """The deployment modes an InferenceService declares for its engine and its decoder (SPEC §3.3), each
    None when it declares none."""

    engine: str | None
    decoder: str | None


#: No mode declared (explain ``--model``, lint's model rankings).
NO_MODES = DeploymentModes(None, None)


class MatcherInputs(NamedTuple):
    """Every field of an InferenceService (SPEC §1) that a verdict or an admission decision depends on."""

    model_name: str | None
    runtime_name: str | None
    auto_sync: bool
    has_engine: bool
    engine_image: str | None
    leader_image: str | None
    worker_image: str | None
    accelerator_classes: tuple[str, ...]
    deleting: bool
    runtime_kind: str | None
    deployment_mode: str | None
    engine_mode_annotation: str | None
    decoder_mode_annotation: str | None
    has_decoder: bool
    replica_refs: bool


#: The annotations of an InferenceService that selection reads (the others are not kept).
READ_ANNOTATIONS = frozenset({ACCELERATOR_CLASS_ANNOTATION})
_NO_ANNOTATIONS: Mapping[str, str] = MappingProxyType({})


class InferenceService:
    """An InferenceService, reduced to what runtime selection reads: its validated spec, the annotations of
    :data:`READ_ANNOTATIONS` and a few metadata fields.

    Unlike the other kinds it is not a pydantic model but an immutable slotted record around one (its spec),
    because the operator keeps one per InferenceService of the cluster: tens of thousands, where a model
    instance with its field dictionary and field set costs some 2 KB and this some 100 bytes
    (:func:`~ome_selector.api.loading.load_resource`, which validates every field, also lets InferenceServices
    with equal specs share one). Equal fields make equal InferenceServices.
    """

    __slots__ = (
        "annotations",
        "deletion_timestamp",
        "generation",
        "name",
        "namespace",
        "resource_version",
        "spec",
        "uid",
    )
    kind: ClassVar[Kind] = Kind.INFERENCE_SERVICE

    name: str
    namespace: str
    spec: InferenceServiceSpec
    annotations: Mapping[str, str]
    deletion_timestamp: str | None
    uid: str | None
    resource_version: str | None
    generation: int | None

    def __init__(
        self,
        *,
        name: str,
        namespace: str,
        spec: InferenceServiceSpec | None = None,
        annotations: Mapping[str, str] | None = None,
        deletion_timestamp: str | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        generation: int | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "name", name)
        put(self, "namespace", namespace)
        put(self, "spec", spec if spec is not None else InferenceServiceSpec())
        put(self, "annotations", annotations if annotations else _NO_ANNOTATIONS)
        put(self, "deletion_timestamp", deletion_timestamp)
        put(self, "uid", uid)
        put(self, "resource_version", resource_version)
        put(self, "generation", generation)

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _ISVC_FIELDS)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"InferenceService is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"InferenceService is immutable: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InferenceService):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self.namespace, self.name, self.spec, self.resource_version))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _ISVC_FIELDS)
        return f"InferenceService({fields})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _inference_service, self._fields()

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(Kind.INFERENCE_SERVICE, self.namespace, self.name)

    @property
    def model_name(self) -> str | None:
        """``spec.model.name``, or None when the InferenceService has no ``spec.model``."""
        return self.spec.model.name if self.spec.model is not None else None

    @property
    def runtime_name(self) -> str | None:
        """``spec.runtime.name``, or None when absent or empty (auto-selection)."""
        runtime = self.spec.runtime
        return runtime.name if runtime is not None and runtime.name else None

    @property
    def runtime_kind(self) -> str | None:
        """``spec.runtime.kind`` as stored (None when absent), compared exactly by the lookup (SPEC §1)."""
        runtime = self.spec.runtime
        return runtime.kind if runtime is not None else None

    @property
    def deployment_modes(self) -> DeploymentModes:
        """The engine and decoder modes of SPEC §3.3: a component's own ``ome.io/deploymentMode`` annotation
        if valid, else ``spec.deploymentMode`` if valid; the decoder's only when ``spec.decoder`` is
        present."""
        spec = self.spec
        if spec.engine is None and spec.decoder is None and spec.deployment_mode is None:
            return NO_MODES
        fallback = declared_mode(spec.deployment_mode)
        engine = declared_mode(_annotated_mode(spec.engine.annotations if spec.engine else None)) or fallback
        decoder = None
        if spec.decoder is not None:
            decoder = declared_mode(_annotated_mode(spec.decoder.annotations)) or fallback
        return NO_MODES if engine is None and decoder is None else DeploymentModes(engine, decoder)

    @property
    def raw_deployment_modes(self) -> tuple[str, str]:
        """The engine and decoder modes as written, for SPEC §7's mode warning: a component's own
        ``ome.io/deploymentMode`` annotation when non-empty (valid or not), else ``spec.deploymentMode``, else
        ``""``. Unlike :attr:`deployment_modes` nothing is dropped for being invalid."""
        spec = self.spec
        fallback = spec.deployment_mode or ""
        engine = _annotated_mode(spec.engine.annotations if spec.engine else None) or fallback
        decoder = _annotated_mode(spec.decoder.annotations if spec.decoder else None) or fallback
        return engine, decoder

    @property
    def has_replica_refs(self) -> bool:
        """Whether ``spec.replicaRefs`` is set: selection leaves the InferenceService alone (SPEC §5)."""
        return self.spec.replica_refs

    @property
    def auto_sync(self) -> bool:
        """``spec.runtime.autoSync``; absent counts as true."""
        runtime = self.spec.runtime
        return runtime is None or runtime.auto_sync is None or runtime.auto_sync

    @property
    def has_engine(self) -> bool:
        return self.spec.engine is not None

    @property
    def accelerator_classes(self) -> tuple[str, ...]:
        """The non-empty accelerator classes asked for, from the 4 sources of SPEC §3.2, without repeats."""
        spec = self.spec
        candidates = (
            self.annotations.get(ACCELERATOR_CLASS_ANNOTATION),
            spec.accelerator_selector.accelerator_class if spec.accelerator_selector else None,
            _override_class(spec.engine.accelerator_override if spec.engine else None),
            _override_class(spec.decoder.accelerator_override if spec.decoder else None),
        )
        return tuple(dict.fromkeys(c for c in candidates if c))

    @property
    def _images(self) -> tuple[str | None, str | None, str | None]:
        engine = self.spec.engine
        if engine is None:
            return None, None, None
        return (
            engine.runner.image if engine.runner else None,
            _runner_image(engine.leader),
            _runner_image(engine.worker),
        )

    @property
    def defers_auto_selection(self) -> bool:
        """Whether the engine names its own image (``runner.image``, or leader and worker images), SPEC §7."""
        engine_image, leader_image, worker_image = self._images
        return bool(engine_image) or (bool(leader_image) and bool(worker_image))

    @property
    def matcher_inputs(self) -> MatcherInputs:
        """A hashable projection of every SPEC §1 field the verdict depends on (not status, not other
        metadata)."""
        engine_image, leader_image, worker_image = self._images
        return MatcherInputs(
            model_name=self.model_name,
            runtime_name=self.runtime_name,
            auto_sync=self.auto_sync,
            has_engine=self.has_engine,
            engine_image=engine_image,
            leader_image=leader_image,
            worker_image=worker_image,
            accelerator_classes=self.accelerator_classes,
            deleting=self.deletion_timestamp is not None,
            runtime_kind=self.runtime_kind,
            deployment_mode=self.spec.deployment_mode,
            engine_mode_annotation=_annotated_mode(
                self.spec.engine.annotations if self.spec.engine else None
            ),
            decoder_mode_annotation=_annotated_mode(
                self.spec.decoder.annotations if self.spec.decoder else None
            ),
            has_decoder=self.spec.decoder is not None,
            replica_refs=self.spec.replica_refs,
        )


_ISVC_FIELDS = (
    "name",
    "namespace",
    "spec",
    "annotations",
    "deletion_timestamp",
    "uid",
    "resource_version",
    "generation",
)


def _inference_service(*fields: Any) -> InferenceService:
    """An InferenceService from its fields in the order of ``_ISVC_FIELDS`` (copy and pickle)."""
    return InferenceService(**dict(zip(_ISVC_FIELDS, fields, strict=True)))


def _override_class(selector: AcceleratorSelector | None) -> str | None:
    return selector.accelerator_class if selector is not None else None


def _runner_image(part: LeaderWorkerSpec | None) -> str | None:
    if part is None or part.runner is None:
        return None
    return part.runner.image


Resource = Model | Runtime | InferenceService
