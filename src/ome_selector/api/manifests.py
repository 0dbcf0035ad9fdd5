"""Manifest text to object bodies, strictly, as kubectl reads it: the product's one reader of YAML and JSON.

:func:`read_manifest` reads a YAML stream (or, with ``json_stream``, one or more concatenated JSON values, as
kubectl accepts them), drops empty documents, expands ``kind: List`` (also nested) and returns every object
with where it was. It refuses what kubectl refuses — a key given twice in one mapping (a YAML merge key ``<<``
may still be overridden), a document or List item that is not an object — and keeps unquoted dates as strings,
as the API server does. :func:`load_manifest` also loads the five kinds from it.

Each object keeps where it is in the text (:class:`Positions`): the line of the object and, in YAML, of each
of its keys, read from the parser's marks, so that a finding can name ``file:line`` (SPEC §11).

Hostile text costs bounded work: nesting deeper than :data:`MAX_DEPTH` is an error, a number too long to read
is an error, and a List reached twice through YAML aliases is an error (aliases could otherwise multiply the
objects exponentially). Every problem is a :class:`~.loading.LoadError` naming the document and field.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from ome_selector.api.loading import LoadError, describe_value, field_path, load_resource
from ome_selector.api.resources import Resource

__all__ = ["MAX_DEPTH", "ManifestObject", "Positions", "load_manifest", "read_manifest"]

#: Objects nested deeper than this are refused (real manifests, CRDs included, stay far below it).
MAX_DEPTH = 100


@dataclass(frozen=True, slots=True)
class Positions:
    """Where an object and its fields are in the text: 1-based lines.

    ``line`` is the object's first line; ``node`` is its YAML node (None for JSON, whose objects have only
    their first line), kept to find the line of a field when one is asked for.
    """

    line: int
    node: yaml.Node | None = None

    def at(self, parts: Sequence[str | int]) -> Positions:
        """The positions of the field at ``parts`` (``("spec", "modelSizeRange", "min")``, an index for an
        array item); those of the deepest field found on the way when it is not in the text (a default)."""
        node, line = self.node, self.line
        for part in parts:
            child = _child(node, part)
            if child is None:
                break
            line, node = child
        return Positions(line, node)

    def line_of(self, parts: Sequence[str | int]) -> int:
        """The line of the field at ``parts`` (see :meth:`at`)."""
        return self.at(parts).line


def _child(node: yaml.Node | None, part: str | int) -> tuple[int, yaml.Node] | None:
    """The line of the key (or item) ``part`` of ``node`` and its value's node. The last of equal keys: merge
    keys put the merged pairs before the mapping's own, which override them."""
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
        found = None
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == part:
                found = (key.start_mark.line + 1, value)
        return found
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item = node.value[part]
        return item.start_mark.line + 1, item
    return None


@dataclass(frozen=True, slots=True)
class ManifestObject:
    """One object of a manifest: its body, the document it is in (1-based, None when the text holds one
    document), its path in that document (``items[3]`` in a ``kind: List``, ``""`` for the document) and
    where it is in the text."""

    body: Mapping[str, Any]
    document: int | None = None
    path: str = ""
    positions: Positions | None = field(default=None, compare=False)


def read_manifest(text: str, *, json_stream: bool = False) -> list[ManifestObject]:
    """The objects of a manifest, in order; raises :class:`LoadError` for text that is not one."""
    located = _json_values(text) if json_stream else _yaml_documents(text)
    located = [(document, where) for document, where in located if document is not None]
    several = len(located) > 1
    objects: list[ManifestObject] = []
    expanded: set[int] = set()
    for index, (document, where) in enumerate(located, start=1):
        number = index if several else None
        try:
            _check_depth(document)
            objects.extend(
                ManifestObject(body, number, path, _item_positions(where, path))
                for body, path in _expand(document, expanded)
            )
        except LoadError as error:
            raise error.in_document(number) from None
    return objects


def _item_positions(document: Positions, path: str) -> Positions:
    """The positions of the object at ``path`` (``items[3].items[0]`` in nested Lists) in a document."""
    if not path or document.node is None:
        return document
    parts: list[str | int] = []
    for step in path.split("."):
        name, _, index = step.partition("[")
        parts.extend([name, int(index.rstrip("]"))])
    return document.at(parts)


def load_manifest(
    text: str, *, json_stream: bool = False, default_namespace: str | None = None
) -> list[Resource]:
    """The ``ome.io/v1beta1`` resources of a manifest, in order (other kinds skipped); :class:`LoadError`
    names the document and the field of the first invalid one."""
    resources: list[Resource] = []
    for item in read_manifest(text, json_stream=json_stream):
        try:
            resource = load_resource(item.body, default_namespace=default_namespace, from_file=True)
        except LoadError as error:
            raise error.within(item.path).in_document(item.document) from None
        if resource is not None:
            resources.append(resource)
    return resources


# --- YAML ---------------------------------------------------------------------------------------------------

try:  # libyaml when present: several times faster on big files
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]


class _StrictLoader(_BaseLoader):
    """The safe loader, strict about keys given twice, with timestamps left as strings."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f'mapping key "{key}" already defined', key_node.start_mark
                )
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _yaml_documents(text: str) -> list[tuple[Any, Positions]]:
    """Each document with its positions. As ``yaml.load_all``, but each document's node tree is kept:
    construction flattens merge keys into it, so a merged key has the line where it is written."""
    try:
        loader = _StrictLoader(text)
        try:
            documents: list[tuple[Any, Positions]] = []
            while loader.check_node():
                node = loader.get_node()
                if node is None:  # pragma: no cover - check_node said there is one
                    break
                documents.append((loader.construct_document(node), Positions(node.start_mark.line + 1, node)))
            return documents
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise LoadError("", f"invalid YAML: {_yaml_problem(error)}") from None
    except RecursionError:  # the pure-Python composer recurses per level of nesting
        raise LoadError("", f"invalid YAML: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:  # an integer beyond Python's 4300-digit conversion limit
        raise LoadError("", f"invalid YAML: {_number_problem(error)}") from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError):
        problem = error.problem or error.context or "syntax error"
        mark = error.problem_mark or error.context_mark
        if mark is not None:
            return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
        return problem
    return str(error)


def _number_problem(error: ValueError) -> str:
    return "a number is too long to read" if "digits" in str(error) else str(error)


# --- JSON ---------------------------------------------------------------------------------------------------


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (kubectl does too)."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(f'mapping key "{key}" already defined')
        result[key] = value
    return result


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)
_SPACE = " \t\r\n"


def _json_values(text: str) -> list[tuple[Any, Positions]]:
    """One or more concatenated JSON values (a JSON stream, as kubectl accepts), each with its first line."""
    values: list[tuple[Any, Positions]] = []
    position, length = 0, len(text)
    line, counted = 1, 0
    while True:
        while position < length and text[position] in _SPACE:
            position += 1
        if position >= length:
            return values
        line += text.count("\n", counted, position)
        counted = position
        start = Positions(line)
        try:
            value, position = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise LoadError(
                "", f"invalid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
            ) from None
        except _DuplicateKeyError as error:
            raise LoadError("", f"invalid JSON: {error}") from None
        except RecursionError:  # the decoder recurses per level of nesting
            raise LoadError("", f"invalid JSON: nested deeper than {MAX_DEPTH} levels") from None
        except ValueError as error:  # an integer beyond Python's 4300-digit conversion limit
            raise LoadError("", f"invalid JSON: {_number_problem(error)}") from None
        values.append((value, start))


# --- structure ----------------------------------------------------------------------------------------------


def _check_depth(document: Any) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH`; each container is visited once, even when YAML aliases
    share it, so the work is linear in the text."""
    visited: set[int] = set()
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        if depth > MAX_DEPTH:
            raise LoadError("", f"nested deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def _expand(document: Any, expanded: set[int]) -> Iterator[tuple[Mapping[str, Any], str]]:
    """The document itself, or each item of a ``kind: List`` (nested Lists too), with its path.

    ``expanded`` holds the Lists already expanded in this text: one reached again (through a YAML alias) is
    an error rather than a second copy of its objects.
    """
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, Mapping):
            raise LoadError(path, f"must be an object, not {describe_value(node)}")
        if node.get("kind") != "List":
            yield node, path
            continue
        items = node.get("items")
        if items is None:
            continue
        if not isinstance(items, list):
            raise LoadError(field_path(path, "items"), f"must be an array, not {describe_value(items)}")
        if id(node) in expanded:
            raise LoadError(path, "a List may appear only once (this one is repeated through a YAML alias)")
        expanded.add(id(node))
        # Pushed in reverse so that items come out in order.
        stack.extend(
            (item, field_path(path, "items", index))
            for index, item in reversed(list(enumerate(items)))
            if item is not None
        )
