"""How lint's findings are reported (SPEC §11): switched off, summarised, located and written as JSON, SARIF
2.1.0 or GitHub workflow annotations.

- :func:`suppress` drops the findings whose code ``--disable`` names, and those whose code an object of the
  finding names in its :data:`LINT_DISABLE_ANNOTATION` annotation (:func:`annotation_codes`);
- :func:`summarise` keeps each finding of a :data:`SUMMARISED` code out of the list, unless asked for, and
  counts them in one :class:`Summary` per code instead (178 DEAD001 on OME's published catalog would bury the
  rest);
- a :data:`Locate` says where a finding is: the file and line of its subject's field, or a
  :class:`Location` without a file for an object read from the cluster.

Everything here is pure: the command reads the objects, and prints what these functions return.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath
from typing import Any
from urllib.parse import quote

from ome_selector.api.resources import ObjectKey
from ome_selector.review.lint import RULES, Code, Finding, Severity, severity_of

__all__ = [
    "LINT_DISABLE_ANNOTATION",
    "SARIF_SCHEMA",
    "SUMMARISED",
    "Locate",
    "Location",
    "Summary",
    "annotation_codes",
    "github_annotations",
    "json_document",
    "parse_codes",
    "sarif_log",
    "summarise",
    "suppress",
]

#: The annotation that switches findings off for one object: codes separated by commas (SPEC §11).
LINT_DISABLE_ANNOTATION = "ome-selector.ome.io/lint-disable"
#: The codes summarised in one line unless ``--show`` names them.
SUMMARISED = frozenset({Code.DEAD001})
#: The ``$schema`` of the SARIF log: the OASIS standard's schema, errata 01.
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_CODES = {code.value: code for code in Code}


def parse_codes(text: str) -> tuple[frozenset[Code], tuple[str, ...]]:
    """The codes of ``text`` (``"DEAD001, SIZE002"``: commas, spaces around them ignored, any letter case)
    and the words that are not codes, in order."""
    known: set[Code] = set()
    unknown: list[str] = []
    for word in (part.strip() for part in text.split(",")):
        if not word:
            continue
        code = _CODES.get(word.upper())
        if code is None:
            unknown.append(word)
        else:
            known.add(code)
    return frozenset(known), tuple(unknown)


def annotation_codes(body: Mapping[str, Any]) -> tuple[frozenset[Code], tuple[str, ...]]:
    """The codes an object body switches off with :data:`LINT_DISABLE_ANNOTATION`, and the words of the
    value that are not codes. A value that is not a string switches nothing off."""
    metadata = body.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    value = annotations.get(LINT_DISABLE_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not isinstance(value, str):
        return frozenset(), ()
    return parse_codes(value)


def suppress(
    findings: Iterable[Finding],
    disabled: Collection[Code] = (),
    per_object: Mapping[ObjectKey, Collection[Code]] | None = None,
) -> tuple[Finding, ...]:
    """``findings`` without those of a ``disabled`` code, and without those one of whose objects switches
    their code off (``per_object``, from :func:`annotation_codes`)."""
    per_object = per_object or {}
    return tuple(
        finding
        for finding in findings
        if finding.code not in disabled
        and not any(finding.code in per_object.get(key, ()) for key in finding.objects)
    )


@dataclass(frozen=True, slots=True)
class Summary:
    """The findings of one summarised code, counted: one line instead of ``count`` findings."""

    code: Code
    count: int

    @property
    def severity(self) -> Severity:
        return Severity.WARNING

    @property
    def message(self) -> str:
        if self.count == 1:
            return (
                "1 runtime is rank 1 for no model and no InferenceService uses it "
                f"(--show {self.code.value} lists it)"
            )
        return (
            f"{self.count} runtimes are rank 1 for no model and no InferenceService uses them "
            f"(--show {self.code.value} lists them)"
        )


def summarise(
    findings: Sequence[Finding], shown: Collection[Code] = ()
) -> tuple[tuple[Finding, ...], tuple[Summary, ...]]:
    """The findings listed in full, and a summary for each :data:`SUMMARISED` code not in ``shown`` that has
    findings."""
    hidden = SUMMARISED - set(shown)
    listed = tuple(finding for finding in findings if finding.code not in hidden)
    counts: dict[Code, int] = {}
    for finding in findings:
        if finding.code in hidden:
            counts[finding.code] = counts.get(finding.code, 0) + 1
    return listed, tuple(Summary(code, counts[code]) for code in sorted(counts))


@dataclass(frozen=True, slots=True)
class Location:
    """Where a finding is: a file and a 1-based line, or no file (``None``) for an object read from the
    cluster."""

    file: str | None
    line: int | None = None

    @property
    def text(self) -> str:
        """``file:line``, or ``(cluster)``."""
        return f"{self.file}:{self.line}" if self.file is not None else "(cluster)"


#: Where a finding is (None: nowhere known).
Locate = Callable[[Finding], Location | None]


def _object(key: ObjectKey) -> dict[str, str | None]:
    return {"kind": key.kind.value, "name": key.name, "namespace": key.namespace}


def json_document(
    findings: Sequence[Finding], summaries: Sequence[Summary], locate: Locate
) -> dict[str, Any]:
    """The ``-o json`` object (SPEC §11); ``location`` is null for an object read from the cluster."""
    items = []
    for finding in findings:
        location = locate(finding)
        items.append(
            {
                "code": finding.code.value,
                "severity": finding.severity.value,
                "objects": [_object(key) for key in finding.objects],
                "message": finding.message,
                "location": (
                    {"file": location.file, "line": location.line}
                    if location is not None and location.file is not None
                    else None
                ),
            }
        )
    return {
        "findings": items,
        "summarised": [
            {
                "code": summary.code.value,
                "severity": summary.severity.value,
                "count": summary.count,
                "message": summary.message,
            }
            for summary in summaries
        ],
    }


# --- SARIF 2.1.0 --------------------------------------------------------------------------------------------

_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def _uri(file: str) -> str | None:
    """A file as a SARIF artifact URI: a relative reference for a relative path (what code scanning wants,
    from the repository's root), a ``file:`` URI for an absolute one; None for standard input."""
    if file.startswith("<"):
        return None
    path = PurePath(file)
    if path.is_absolute():
        return path.as_uri()
    return quote(PurePosixPath(*path.parts).as_posix())


def _sarif_location(key: ObjectKey, location: Location | None) -> dict[str, Any]:
    where: dict[str, Any] = {}
    uri = _uri(location.file) if location is not None and location.file is not None else None
    if uri is not None and location is not None:
        region = {"startLine": location.line} if location.line is not None else {}
        where["physicalLocation"] = {
            "artifactLocation": {"uri": uri},
            **({"region": region} if region else {}),
        }
    where["logicalLocations"] = [{"fullyQualifiedName": f"{key.kind.value}/{_name(key)}", "kind": "object"}]
    return where


def _name(key: ObjectKey) -> str:
    return f"{key.namespace}/{key.name}" if key.namespace is not None else key.name


def _related(finding: Finding, locate_object: Callable[[ObjectKey], Location | None]) -> list[dict[str, Any]]:
    return [
        {"id": index, **_sarif_location(key, locate_object(key))}
        for index, key in enumerate(key for key in finding.objects if key != finding.subject)
    ]


def sarif_log(
    findings: Sequence[Finding],
    summaries: Sequence[Summary],
    locate: Locate,
    locate_object: Callable[[ObjectKey], Location | None],
    *,
    version: str,
) -> dict[str, Any]:
    """The ``-o sarif`` log: one run, one rule per code, one result per finding (at its subject, the other
    objects as related locations) and one per summary (without a location)."""
    codes = sorted(Code, key=lambda code: code.value)
    index = {code: position for position, code in enumerate(codes)}
    rules = [
        {
            "id": code.value,
            "shortDescription": {"text": RULES[code]},
            "defaultConfiguration": {"level": _LEVELS[severity_of(code)]},
        }
        for code in codes
    ]
    results: list[dict[str, Any]] = []
    for finding in findings:
        result: dict[str, Any] = {
            "ruleId": finding.code.value,
            "ruleIndex": index[finding.code],
            "level": _LEVELS[finding.severity],
            "message": {"text": finding.message},
        }
        if finding.subject is not None:
            result["locations"] = [_sarif_location(finding.subject, locate(finding))]
            related = _related(finding, locate_object)
            if related:
                result["relatedLocations"] = related
        results.append(result)
    for summary in summaries:
        results.append(
            {
                "ruleId": summary.code.value,
                "ruleIndex": index[summary.code],
                "level": _LEVELS[summary.severity],
                "message": {"text": summary.message},
                "properties": {"count": summary.count},
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kubectl-ome_selector runtime lint",
                        "semanticVersion": version,
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }


# --- GitHub workflow annotations ----------------------------------------------------------------------------


def _data(text: str) -> str:
    """A workflow command's message, escaped as the runner reads it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value, escaped as the runner reads it."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(
    findings: Sequence[Finding], summaries: Sequence[Summary], locate: Locate
) -> list[str]:
    """``-o github``: one workflow command per finding (``::error file=F,line=L,title=CODE::message``; no
    ``file``/``line`` for an object read from the cluster) and one per summary."""
    lines: list[str] = []
    for finding in findings:
        location = locate(finding)
        properties = []
        if location is not None and location.file is not None:
            properties.append(f"file={_property(location.file)}")
            if location.line is not None:
                properties.append(f"line={location.line}")
        properties.append(f"title={finding.code.value}")
        lines.append(f"::{_LEVELS[finding.severity]} {','.join(properties)}::{_data(finding.message)}")
    lines.extend(
        f"::{_LEVELS[summary.severity]} title={summary.code.value}::{_data(summary.message)}"
        for summary in summaries
    )
    return lines
