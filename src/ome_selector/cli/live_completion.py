"""Completion of object names from the live cluster (SPEC §6): `--model`, `--isvc` and `-n` of
`kubectl ome-selector` offer the names the current kubeconfig context lists.

Bounded on every side: one list call per kind asking for at most :data:`LIMIT` items (the apiserver's
``limit``, so it never sends more), the whole lookup within :data:`TIMEOUT_SECONDS`, and any failure (no
kubeconfig, no access, no answer in time) offers nothing rather than an error: a shell waiting on a completion
must never hang or print a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ome_selector.api.resources import Kind
from ome_selector.kube.clients import core_api, custom_objects_api
from ome_selector.kube.connection import ClusterAccess, kubeconfig_namespace
from ome_selector.kube.scope import custom_object_call

__all__ = ["LIMIT", "TIMEOUT_SECONDS", "live_names"]

#: Items asked for per kind.
LIMIT = 200
#: The whole lookup, connection included.
TIMEOUT_SECONDS = 2.0

#: What each option completes: the kinds whose names it takes (a namespaced kind in the namespace).
_KINDS = {
    "model": (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL),
    "isvc": (Kind.INFERENCE_SERVICE,),
}


def _given(words: Sequence[str], *options: str) -> str | None:
    """The value of the last of ``options`` among ``words`` (``-n X`` or ``--namespace=X``)."""
    value: str | None = None
    for index, word in enumerate(words):
        name, equals, rest = word.partition("=")
        if name in options:
            value = rest if equals else (words[index + 1] if index + 1 < len(words) else None)
    return value


def live_names(dest: str, words: Sequence[str], partial: str) -> list[str] | None:
    """The names for option ``dest`` starting with ``partial``, given the words typed so far; None when the
    option completes no names (the caller then answers as before). With ``-f`` the cluster is not read."""
    if dest not in (*_KINDS, "namespace"):
        return None
    if _given(words, "-f", "--filename") is not None:
        return []
    kubeconfig_text = _given(words, "--kubeconfig")
    kubeconfig = Path(kubeconfig_text) if kubeconfig_text else None
    context = _given(words, "--context")
    namespace = _given(words, "-n", "--namespace")
    try:
        names = asyncio.run(asyncio.wait_for(_names(dest, kubeconfig, context, namespace), TIMEOUT_SECONDS))
    except Exception:  # anything (no kubeconfig, no access, no answer): a shell's completion never fails
        return []
    return sorted(name for name in set(names) if name.startswith(partial))


async def _names(dest: str, kubeconfig: Path | None, context: str | None, namespace: str | None) -> list[str]:
    access = ClusterAccess(kubeconfig, context, request_timeout=TIMEOUT_SECONDS)
    async with await access.api_client() as api:
        if dest == "namespace":
            body: Any = await core_api(api).list_namespace(limit=LIMIT)
            return [item.metadata.name for item in body.items]
        where = namespace or kubeconfig_namespace(kubeconfig, context) or "default"
        custom = custom_objects_api(api)
        names: list[str] = []
        for kind in _KINDS[dest]:
            listed = await custom_object_call(custom, "list", kind, where if kind.namespaced else None)(
                limit=LIMIT
            )
            names += [str(item.get("metadata", {}).get("name", "")) for item in listed.get("items", [])]
        return [name for name in names if name]
