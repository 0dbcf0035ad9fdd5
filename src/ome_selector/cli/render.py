"""Output of `kubectl ome-selector runtime explain`: kubectl-style tables and the SPEC §6 JSON/YAML document.

The rows, their order and every value come from the selection core's
:class:`~ome_selector.selection.explain.Explanation`; this module only lays them out, so the table and the
JSON document can never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.cli.output import is_generic, object_name, render_generic
from ome_selector.selection.explain import (
    EffectiveRuntime,
    Explanation,
    RuntimeVerdict,
    effective_document,
    explanation_document,
)
from ome_selector.selection.messages import control_escapes, escape_controls

__all__ = [
    "COLUMNS",
    "OUTPUT_FORMATS",
    "WIDE_COLUMNS",
    "effective_lines",
    "escaped_json",
    "escaped_yaml",
    "render",
    "render_table",
    "table_rows",
]

OUTPUT_FORMATS = ("table", "wide", "json", "yaml")
COLUMNS = ("RUNTIME", "SCOPE", "COMPATIBLE", "PRIORITY", "SCORE", "REASON")
#: `-o wide` inserts these before REASON, so the one column of free text stays last and cannot push the
#: short columns off the screen.
#: WEIGHT (OME's explain column, SPEC §6) comes right after SCORE.
WIDE_COLUMNS = (
    "RUNTIME",
    "SCOPE",
    "COMPATIBLE",
    "PRIORITY",
    "SCORE",
    "WEIGHT",
    "SUPPORTS",
    "RANK",
    "RANGE",
    "REASON",
)
#: Spaces between columns, as kubectl's tabwriter pads them.
PADDING = 3
EMPTY = "-"


def _cell(value: object) -> str:
    """A table cell: ``-`` for None or an empty string, ``Yes``/``No`` for booleans."""
    if value is None or value == "":
        return EMPTY
    if isinstance(value, bool):
        return "Yes" if value else "No"
    return str(value)


def table_rows(explanation: Explanation, *, wide: bool = False) -> list[tuple[str, ...]]:
    """The cells of each runtime's row, in table order (no header)."""
    return [_row(verdict, wide=wide) for verdict in explanation.verdicts]


def _row(verdict: RuntimeVerdict, *, wide: bool) -> tuple[str, ...]:
    cells = [
        verdict.name,
        verdict.scope,
        _cell(verdict.compatible),
        _cell(verdict.priority),
        _cell(verdict.score),
    ]
    if wide:
        cells += [
            _cell(verdict.weight),
            _cell(verdict.supports_model),
            _cell(verdict.rank),
            _cell(verdict.range_text),
        ]
    return (*cells, _cell(verdict.reason))


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, headers: bool = True) -> str:
    """Left-aligned columns separated by three spaces, the last one unpadded, one line per row (kubectl);
    without the header line for ``headers=False`` (``--no-headers``: the columns keep the header's widths, as
    kubectl's)."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
    lines = []
    for row in (header, *rows) if headers else rows:
        cells = [cell.ljust(width + PADDING) for cell, width in zip(row, widths, strict=False)]
        lines.append("".join(cells) + row[-1])
    return "\n".join(line.rstrip() for line in lines) + "\n"


#: The abbreviations of ``SOURCE`` (SPEC §6, as OME's explain writes them).
_SOURCE_KINDS = {Kind.CLUSTER_SERVING_RUNTIME: "CSR", Kind.SERVING_RUNTIME: "SR"}


def _path(kind: str, key: ObjectKey) -> str:
    where = f"{key.namespace}/" if key.namespace is not None else ""
    return f"{kind}/{where}{key.name}"


def effective_lines(effective: EffectiveRuntime) -> list[str]:
    """The ``Effective runtime:`` block of ``--with-effective`` (SPEC §6), one string per line."""
    source = effective.source
    lines = [
        "Effective runtime:",
        f"SELECTION {effective.selection.value}",
        f"SOURCE {_path(_SOURCE_KINDS[source.kind], source) if source is not None else EMPTY}",
        f"INHERITANCE {effective.inheritance}",
    ]
    if effective.reason is not None:
        lines.append(f"REASON {effective.reason}")
    lines += [f"ROOT-FIRST {_path(key.kind.value, key)}" for key in effective.chain]
    return lines


def render(
    explanation: Explanation,
    output: str,
    effective: EffectiveRuntime | None = None,
    *,
    headers: bool = True,
) -> str:
    """The text explain prints on stdout for ``-o <output>``; empty for a table without runtimes (and without
    ``--with-effective``, whose block follows the table after one empty line, or is the document's key
    ``effective``). ``-o name`` names each row's runtime; ``-o jsonpath=…`` reads the JSON document."""
    if output in ("json", "yaml") or is_generic(output):
        document = explanation_document(explanation)
        if effective is not None:
            document["effective"] = effective_document(effective)
        if is_generic(output):
            names = (object_name(v.runtime.kind.value, v.name) for v in explanation.verdicts)
            return render_generic(output, document, names)
        if output == "json":
            return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        return _yaml(document)
    wide = output == "wide"
    table = (
        render_table(WIDE_COLUMNS if wide else COLUMNS, table_rows(explanation, wide=wide), headers=headers)
        if explanation.verdicts
        else ""
    )
    if effective is None:
        return table
    return table + "\n" + "\n".join(effective_lines(effective)) + "\n"


def _yaml(document: dict[str, Any]) -> str:
    return yaml.safe_dump(
        document, sort_keys=False, default_flow_style=False, allow_unicode=True, width=2**16
    )


# --- documents without raw control characters (SPEC §10.4) ---------------------------------------------

_ESCAPES = control_escapes()
#: json.dumps escapes C0 itself; DEL, C1, the bidi controls and the separators become JSON escapes too.
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in _ESCAPES if code >= 0x7F}


def escaped_json(document: Any) -> str:
    """``document`` as indented JSON in which no control character of SPEC §7's set is raw."""
    return json.dumps(document, indent=2, ensure_ascii=False).translate(_JSON_ESCAPES) + "\n"


class _EscapingDumper(yaml.SafeDumper):
    """A dumper that writes a string holding a control character double-quoted, with SPEC §7's escapes
    (PyYAML by itself writes ``\\e`` for ESC). Other non-ASCII text is escaped too (``\\xE9``): PyYAML
    counts the bidi controls as printable whenever it may write Unicode."""

    ESCAPE_REPLACEMENTS = {  # type: ignore[misc]  # noqa: RUF012 - PyYAML's own class attribute, extended
        **yaml.SafeDumper.ESCAPE_REPLACEMENTS,
        **{
            chr(code): text[1:]
            for code, text in _ESCAPES.items()
            if code >= 0x20 or chr(code) not in "\t\n\r"
        },
    }


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if escape_controls(value) != value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_EscapingDumper.add_representer(str, _represent_str)


def escaped_yaml(document: Any) -> str:
    """``document`` as block YAML in which no control character of SPEC §7's set is raw."""
    text: str = yaml.dump(
        document,
        Dumper=_EscapingDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=False,
        width=2**16,
    )
    return text
