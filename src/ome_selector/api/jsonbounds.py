"""Bounds on JSON text taken before and after parsing, shared by every reader of hostile JSON (SPEC §7,
SPEC §10.1): an upper bound of the values at C speed, and a nesting depth that visits each container once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Depth", "count_values_bound", "nesting_depth"]


def count_values_bound(body: bytes | bytearray) -> int:
    """An upper bound of the number of JSON values in ``body``, at C speed: every value but the first of
    each array or object is preceded by a comma, and every array or object opens with a bracket."""
    return body.count(b",") + body.count(b"[") + body.count(b"{") + 1


@dataclass(frozen=True)
class Depth:
    """How deep a document nests (objects and arrays count a level each), and the containers looked at."""

    depth: int
    steps: int


def nesting_depth(document: object, stop_at: int) -> Depth:
    """The nesting depth of a parsed document, looking no further once a level reaches ``stop_at``.

    Iterative (no recursion limit), and each container is visited once, so ``steps`` is at most the number of
    containers in the document.
    """
    deepest = 0
    steps = 0
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        steps += 1
        deepest = max(deepest, level)
        if deepest >= stop_at:
            break
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return Depth(deepest, steps)
