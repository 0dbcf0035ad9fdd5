"""Output of `kubectl ome runtime explain`: kubectl-style tables and the SPEC §6 JSON/YAML document.

The rows, their order and every value come from the selection core's
:class:`~ome_selector.selection.explain.Explanation`; this module only lays them out, so the table and the
JSON document can never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from ome_selector.selection.explain import Explanation, RuntimeVerdict, explanation_document

__all__ = ["COLUMNS", "OUTPUT_FORMATS", "WIDE_COLUMNS", "render", "render_table", "table_rows"]

OUTPUT_FORMATS = ("table", "wide", "json", "yaml")
COLUMNS = ("RUNTIME", "SCOPE", "COMPATIBLE", "PRIORITY", "SCORE", "REASON")
#: `-o wide` inserts these before REASON, so the one column of free text stays last and cannot push the
#: short columns off the screen.
WIDE_COLUMNS = ("RUNTIME", "SCOPE", "COMPATIBLE", "PRIORITY", "SCORE", "SUPPORTS", "RANK", "RANGE", "REASON")
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
        cells += [_cell(verdict.supports_model), _cell(verdict.rank), _cell(verdict.range_text)]
    return (*cells, _cell(verdict.reason))


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by three spaces, the last one unpadded, one line per row (kubectl)."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
    lines = []
    for row in (header, *rows):
        cells = [cell.ljust(width + PADDING) for cell, width in zip(row, widths, strict=False)]
        lines.append("".join(cells) + row[-1])
    return "\n".join(line.rstrip() for line in lines) + "\n"


def render(explanation: Explanation, output: str) -> str:
    """The text explain prints on stdout for ``-o <output>``; empty for a table without runtimes."""
    if output in ("json", "yaml"):
        document = explanation_document(explanation)
        if output == "json":
            return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        return _yaml(document)
    if not explanation.verdicts:
        return ""
    wide = output == "wide"
    return render_table(WIDE_COLUMNS if wide else COLUMNS, table_rows(explanation, wide=wide))


def _yaml(document: dict[str, Any]) -> str:
    return yaml.safe_dump(
        document, sort_keys=False, default_flow_style=False, allow_unicode=True, width=2**16
    )
