"""The wire shape of the five ``ome.io/v1beta1`` kinds: frozen pydantic models, loading with CRD defaults, and
the one strict manifest reader."""

from ome_selector.api.loading import LoadError, describe_value, field_path, key_of, load_resource
from ome_selector.api.manifests import ManifestObject, load_manifest, read_manifest
from ome_selector.api.resources import (
    API_GROUP,
    API_GROUP_VERSION,
    API_VERSION,
    InferenceService,
    Kind,
    MatcherInputs,
    Model,
    ObjectKey,
    Resource,
    Runtime,
)

__all__ = [
    "API_GROUP",
    "API_GROUP_VERSION",
    "API_VERSION",
    "InferenceService",
    "Kind",
    "LoadError",
    "ManifestObject",
    "MatcherInputs",
    "Model",
    "ObjectKey",
    "Resource",
    "Runtime",
    "describe_value",
    "field_path",
    "key_of",
    "load_manifest",
    "load_resource",
    "read_manifest",
]
