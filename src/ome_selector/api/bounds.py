"""How large an object the product reads (SPEC §8 "Bounded resources").

Reading a model or runtime costs time in proportion to its ``supportedModelFormats`` entries and its
diffusion pipeline components: every other field it reads has a fixed shape, and a long string costs no more
than a copy (a size value over 64 characters is not even parsed, SPEC §2). An object of tens of thousands of
entries — valid to the API server, which bounds only the byte size — would hold the event loop for a second
each time it is read, so an object over :data:`MAX_FORMAT_ENTRIES` entries or :data:`MAX_PIPELINE_COMPONENTS`
components is not read at all: it is treated like an object the product cannot read (SPEC Choices "Objects the
product cannot read"; the operator logs one warning and forgets it, the webhook says so in a warning). The
largest runtime of OME's catalog has one entry.

:func:`oversized` looks only at lengths, so asking costs nothing whatever the object holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_FORMAT_ENTRIES", "MAX_PIPELINE_COMPONENTS", "oversized"]

#: Most ``spec.supportedModelFormats`` entries read on one runtime (about 15 ms to read and compile here).
MAX_FORMAT_ENTRIES = 1000
#: Most diffusion pipeline ``additionalComponents`` read on one object, summed over its pipelines.
MAX_PIPELINE_COMPONENTS = 1000


def oversized(body: Mapping[str, Any]) -> str | None:
    """Why the product does not read ``body`` (one line, naming the field), or None when it does."""
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        return None
    components = _components(spec.get("diffusionPipeline"))
    entries = spec.get("supportedModelFormats")
    if isinstance(entries, list):
        if len(entries) > MAX_FORMAT_ENTRIES:
            return (
                f"spec.supportedModelFormats has {len(entries)} entries, more than the {MAX_FORMAT_ENTRIES} "
                "ome-selector reads"
            )
        for entry in entries:
            if isinstance(entry, Mapping):
                components += _components(entry.get("diffusionPipeline"))
    if components > MAX_PIPELINE_COMPONENTS:
        return (
            f"its diffusion pipelines have {components} additionalComponents, more than the "
            f"{MAX_PIPELINE_COMPONENTS} ome-selector reads"
        )
    return None


def _components(pipeline: object) -> int:
    if not isinstance(pipeline, Mapping):
        return 0
    additional = pipeline.get("additionalComponents")
    return len(additional) if isinstance(additional, Mapping) else 0
