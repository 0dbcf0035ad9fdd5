"""The fields of a log line about one object, as JSON fields a log backend can query (SPEC §8, logs).

With ``--log-format json`` every key given to a log call as ``extra=log_fields(...)`` is a field of its own
line; the plain format shows only the message, which says the same in words.
"""

from __future__ import annotations

from ome_selector.api.resources import Kind, ObjectKey


def log_fields(
    key: ObjectKey | None = None,
    *,
    kind: Kind | None = None,
    namespace: str | None = None,
    name: str | None = None,
    reason: str | None = None,
    status: str | None = None,
    duration: float | None = None,
) -> dict[str, object]:
    """``object`` (the name), ``kind``, ``namespace``, ``reason``, ``status`` and ``duration`` (seconds):
    those given, from ``key`` or one by one."""
    if key is not None:
        kind, namespace, name = key.kind, key.namespace, key.name
    fields: dict[str, object] = {
        "object": name,
        "kind": kind.value if kind is not None else None,
        "namespace": namespace,
        "reason": reason,
        "status": status,
        "duration": round(duration, 6) if duration is not None else None,
    }
    return {field: value for field, value in fields.items() if value is not None}
