"""The `RuntimeReady` condition: what to store, and whether storing it changes anything (SPEC §1, §5).

The stored condition is the operator's only memory: a verdict whose status, reason and message equal the
stored ones is not written again, and `lastTransitionTime` moves only when the status flips. A message that
changes only in its runtime counts is written without an event (:func:`only_counts_differ`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ome_selector.kube.objects import now_rfc3339
from ome_selector.selection.outcome import CONDITION_TYPE

#: The Warning event recorded when another writer changed RuntimeReady (SPEC §5 "Another writer").
CONFLICT_EVENT_REASON = "RuntimeReadyConflict"


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


# The runtime counts of the SPEC §5 no-runtime message: "(checked <n> runtime(s): <a> namespace-scoped,
# <b> cluster-scoped)", the "; <k> runtime(s) serve(s) other formats" clause (absent when k is 0) and the
# "… <m> more" of a cut message (pointing at `kubectl ome-selector`, or at `kubectl ome` as written before the
# plugin's rename, so that an upgrade rewrites no condition for the hint alone).
_COUNTS = re.compile(
    r"\(checked \d+ runtimes?: \d+ namespace-scoped, \d+ cluster-scoped\)"
    r"|; \d+ runtimes? serves? other formats$"
    r"|… \d+ more \(kubectl ome(?:-selector)? runtime explain "
)


def _without_counts(message: str) -> str:
    """The message with its counts replaced by placeholders; the other-formats clause, which comes and goes
    with its count, is dropped."""

    def placeholder(found: re.Match[str]) -> str:
        text = found.group()
        return "(checked)" if text.startswith("(") else "" if text.startswith(";") else "… more ("

    return _COUNTS.sub(placeholder, message)


def only_counts_differ(stored: Mapping[str, Any] | None, status: str, reason: str, message: str) -> bool:
    """Whether the stored condition differs from the verdict only in the runtime counts of its message (SPEC
    §5: such a change is written without an event), e.g. after a runtime of another format was added."""
    if stored is None or (stored.get("status"), stored.get("reason")) != (status, reason):
        return False
    previous = stored.get("message")
    if not isinstance(previous, str) or previous == message:
        return False
    return _without_counts(previous) == _without_counts(message)


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


_CONDITION_KEY = f'k:{{"type":"{CONDITION_TYPE}"}}'


def condition_writers(metadata: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The field managers that own the RuntimeReady condition of an InferenceService, from its managedFields
    (sorted, each once).

    OME's CRDs and ours leave ``status.conditions`` an atomic list, so the manager whose write last changed
    the list owns all of it (``f:status`` → ``f:conditions``); a CRD that makes it a list-map keyed by
    ``type`` names the owner of each entry (``k:{"type":"RuntimeReady"}``). Malformed entries are ignored.
    """
    fields = (metadata or {}).get("managedFields")
    owners: set[str] = set()
    for entry in fields if isinstance(fields, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("manager"), str):
            continue
        owned = entry.get("fieldsV1")
        status = owned.get("f:status") if isinstance(owned, Mapping) else None
        conditions = status.get("f:conditions") if isinstance(status, Mapping) else None
        if not isinstance(conditions, Mapping):
            continue
        keyed = [key for key in conditions if isinstance(key, str) and key.startswith("k:")]
        if not keyed or _CONDITION_KEY in keyed:
            owners.add(entry["manager"])
    return tuple(sorted(owners))
