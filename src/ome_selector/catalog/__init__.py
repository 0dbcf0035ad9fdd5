"""The in-memory, indexed catalog of models, runtimes and InferenceServices (what the operator keeps)."""

from ome_selector.catalog.catalog import Catalog

__all__ = ["Catalog"]
