"""kubectl's output habits for every `kubectl ome-selector` command with ``-o`` (SPEC §6): ``-o name``,
``-o jsonpath=TEMPLATE`` and ``--no-headers``.

``-o name`` prints one ``<kind>.ome.io/<name>`` line per object the command shows, as ``kubectl get -o name``
does. ``-o jsonpath=TEMPLATE`` applies kubectl's JSONPath template to the command's ``-o json`` document:
text outside braces is printed as written (with kubectl's escapes ``\\n``, ``\\t``, ``\\r``, ``\\\\``); each
``{PATH}`` is evaluated with jsonpath-ng (``.a.b``, ``$.a``, ``[N]``, ``[*]``, ``[A:B]``, ``['key']``, ``..``
and filters such as ``[?(@.compatible==true)]``) and its values printed separated by one space (strings as
they are, booleans ``true``/``false``, null as nothing, lists and maps as JSON); ``{"text"}`` prints ``text``;
``{range PATH}…{end}`` repeats its body for each value, the body's paths relative to it. A path that finds
nothing prints nothing, as ``kubectl get`` allows missing keys.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "JSONPATH_PREFIX",
    "NAME",
    "JsonPathError",
    "OutputChoices",
    "is_generic",
    "jsonpath",
    "object_name",
    "output_type",
    "render_generic",
]

NAME = "name"
JSONPATH_PREFIX = "jsonpath="
#: The group every ``-o name`` line names.
GROUP = "ome.io"
#: A template, or the text a path prints, is cut to this size: one command's output, not a denial of service.
TEMPLATE_LIMIT = 4096


class JsonPathError(ValueError):
    """A template that cannot be parsed; ``str()`` is kubectl's kind of one-line message."""


class OutputChoices(tuple[str, ...]):
    """The fixed ``-o`` values, and membership for ``jsonpath=TEMPLATE`` too (argparse checks ``in``)."""

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and (
            value.startswith(JSONPATH_PREFIX) or tuple.__contains__(self, value)
        )


def output_type(formats: Sequence[str]) -> Callable[[str], str]:
    """The ``type=`` of ``-o``: a fixed format, ``name``, or ``jsonpath=TEMPLATE`` with a template that
    parses (else the usage error kubectl gives)."""

    def checked(text: str) -> str:
        if text == "jsonpath":
            raise argparse.ArgumentTypeError("template format specified but no template given")
        if text.startswith(JSONPATH_PREFIX):
            try:
                _parse(text[len(JSONPATH_PREFIX) :])
            except JsonPathError as error:
                raise argparse.ArgumentTypeError(str(error)) from error
        return text

    return checked


def is_generic(output: str) -> bool:
    """Whether ``output`` is one of the formats this module renders (``name``, ``jsonpath=…``)."""
    return output == NAME or output.startswith(JSONPATH_PREFIX)


def object_name(kind: str, name: str) -> str:
    """``<kind>.ome.io/<name>``, as ``kubectl get -o name`` writes it."""
    return f"{kind.lower()}.{GROUP}/{name}"


def render_generic(output: str, document: Any, names: Iterable[str]) -> str:
    """The text of ``-o name`` (``names``, one a line) or ``-o jsonpath=…`` (applied to ``document``)."""
    if output == NAME:
        return "".join(f"{name}\n" for name in names)
    return jsonpath(output[len(JSONPATH_PREFIX) :], document)


# --- kubectl's JSONPath template --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Text:
    text: str


@dataclass(frozen=True, slots=True)
class _Path:
    source: str
    path: Any


@dataclass(frozen=True, slots=True)
class _Range:
    path: _Path
    body: tuple[_Text | _Path | _Range, ...]


_Node = _Text | _Path | _Range
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda found: _ESCAPES.get(found.group(1), found.group(0)), text)


def _compiled(source: str) -> _Path:
    # Only a jsonpath template pays for loading the parser.
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError  # noqa: PLC0415
    from jsonpath_ng.ext import parse  # noqa: PLC0415

    expression = source.strip()
    if not expression:
        raise JsonPathError("unrecognized identifier: empty expression {}")
    if expression.startswith("$"):
        text = expression
    else:
        text = "$" + ("" if expression.startswith(("[", ".")) else ".") + expression
    try:
        return _Path(expression, parse(text))
    except (JsonPathLexerError, JsonPathParserError, ValueError, AttributeError, IndexError) as error:
        raise JsonPathError(f"unrecognized identifier in {{{expression}}}: {error}") from error


def _parse(template: str) -> tuple[_Node, ...]:
    """The template as text, paths and ranges; :class:`JsonPathError` for an unclosed brace, an ``{end}``
    without ``{range}`` or a path jsonpath-ng cannot parse."""
    if len(template) > TEMPLATE_LIMIT:
        raise JsonPathError(f"the template is longer than {TEMPLATE_LIMIT} characters")
    stack: list[tuple[_Path | None, list[_Node]]] = [(None, [])]
    position = 0
    while position < len(template):
        start = template.find("{", position)
        if start < 0:
            stack[-1][1].append(_Text(_unescape(template[position:])))
            break
        if start > position:
            stack[-1][1].append(_Text(_unescape(template[position:start])))
        end = _closing(template, start)
        inner = template[start + 1 : end].strip()
        position = end + 1
        quoted = _QUOTED.fullmatch(inner)
        if quoted:
            literal = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
            stack[-1][1].append(_Text(_unescape(literal)))
        elif inner == "end":
            if len(stack) == 1:
                raise JsonPathError("not in range, nothing to end")
            path, body = stack.pop()
            assert path is not None
            stack[-1][1].append(_Range(path, tuple(body)))
        elif inner.startswith("range ") or inner == "range":
            stack.append((_compiled(inner[len("range") :]), []))
        else:
            stack[-1][1].append(_compiled(inner))
    if len(stack) != 1:
        raise JsonPathError("unclosed range: {range} without {end}")
    return tuple(stack[0][1])


def _closing(template: str, start: int) -> int:
    """The index of the brace that closes the one at ``start`` (braces inside quotes do not count)."""
    quote: str | None = None
    index = start + 1
    while index < len(template):
        char = template[index]
        if quote is not None:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "}":
            return index
        index += 1
    raise JsonPathError(f"unclosed action {template[start:]!r}")


def _values(path: _Path, data: Any) -> list[Any]:
    try:
        return [match.value for match in path.path.find(data)]
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as error:
        raise JsonPathError(f"error executing jsonpath {{{path.source}}}: {error}") from error


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _render(nodes: Sequence[_Node], data: Any, out: list[str]) -> None:
    for node in nodes:
        if isinstance(node, _Text):
            out.append(node.text)
        elif isinstance(node, _Path):
            out.append(" ".join(_text(value) for value in _values(node, data)))
        else:
            values = _values(node.path, data)
            if len(values) == 1 and isinstance(values[0], list):
                values = values[0]  # {range .items}: each element, as {range .items[*]}
            for item in values:
                _render(node.body, item, out)


def jsonpath(template: str, document: Any) -> str:
    """``template`` (kubectl's JSONPath template) applied to ``document``."""
    out: list[str] = []
    _render(_parse(template), document, out)
    return "".join(out)
