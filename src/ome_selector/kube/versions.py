"""resourceVersions as numbers, where the apiserver makes them comparable.

Kubernetes 1.35 made an object's resourceVersion comparable with another of the same resource (KEP-5504): a
positive decimal integer without leading zeros, greater for a later state. An apiserver that hands out
anything else keeps them opaque, and then nothing here orders them: :func:`version_number` says ``None`` and
the caller falls back to equality alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: More digits than any etcd revision will have; a longer string is not taken for a number.
MAX_DIGITS = 40


def version_number(value: object) -> int | None:
    """``value`` as a comparable resourceVersion, or None where it is not one."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_DIGITS:
        return None
    if not value.isascii() or not value.isdigit() or value[0] == "0":
        return None
    return int(value)


def body_version(body: Mapping[str, Any]) -> int | None:
    """The comparable resourceVersion of an object's body, or None."""
    metadata = body.get("metadata")
    return version_number(metadata.get("resourceVersion")) if isinstance(metadata, Mapping) else None
