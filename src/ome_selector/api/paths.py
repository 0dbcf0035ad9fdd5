"""Field paths as messages write them: a module of its own, so that a reader of paths alone (the selection
core's messages) need not import the pydantic models for it."""

from __future__ import annotations

__all__ = ["field_path"]


def field_path(*parts: str | int) -> str:
    """A field path as error messages write it: ``spec.supportedModelFormats[0].priority``.

    Strings are joined with dots (a string may itself be a path, such as ``items[3]``; empty ones are
    skipped), integers are written as indexes.
    """
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part:
            path += f".{part}" if path else part
    return path
