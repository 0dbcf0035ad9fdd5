"""The wire shape of the five ``ome.io/v1beta1`` kinds: frozen pydantic models and loading with CRD
defaults."""

from ome_selector.api.loading import LoadError, load_resource, load_yaml
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
    "MatcherInputs",
    "Model",
    "ObjectKey",
    "Resource",
    "Runtime",
    "load_resource",
    "load_yaml",
]
