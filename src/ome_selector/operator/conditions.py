"""The `RuntimeReady` condition: what to store, and whether storing it changes anything (SPEC §1, §5).

The stored condition is the operator's only memory: a verdict whose status, reason and message equal the
stored ones is not written again, and `lastTransitionTime` moves only when the status flips.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ome_selector.kube.objects import now_rfc3339
from ome_selector.selection.outcome import CONDITION_TYPE


def current_condition(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The stored RuntimeReady condition of an InferenceService status, if any (malformed entries ignored)."""
    conditions = (status or {}).get("conditions")
    if not isinstance(conditions, list):
        return None
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == CONDITION_TYPE:
            return condition
    return None


def differs(stored: Mapping[str, Any] | None, status: str, reason: str, message: str) -> bool:
    if stored is None:
        return True
    return (stored.get("status"), stored.get("reason"), stored.get("message")) != (status, reason, message)


def build_condition(
    stored: Mapping[str, Any] | None, status: str, reason: str, message: str, *, now: str | None = None
) -> dict[str, Any]:
    transition = stored.get("lastTransitionTime") if stored and stored.get("status") == status else None
    return {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition or now or now_rfc3339(),
    }


def with_condition(conditions: Sequence[Any] | None, condition: Mapping[str, Any]) -> list[Any]:
    """`conditions` with RuntimeReady replaced in place (or appended); every other entry kept as it was."""
    result: list[Any] = []
    replaced = False
    for existing in conditions or []:
        if isinstance(existing, Mapping) and existing.get("type") == CONDITION_TYPE:
            if not replaced:
                result.append(dict(condition))
                replaced = True
            continue
        result.append(existing)
    if not replaced:
        result.append(dict(condition))
    return result


def without_condition(conditions: Sequence[Any] | None) -> list[Any]:
    return [c for c in conditions or [] if not (isinstance(c, Mapping) and c.get("type") == CONDITION_TYPE)]
