"""The texts of the review of a catalog change at admission (SPEC §12): the impact warning, the protection
denial, the ambiguity warnings and the "not computed" answers.

A sibling of :mod:`.messages`, with its rules (no control character in a text; warnings cut to
:data:`~.messages.ADMISSION_WARNING_LIMIT`, denials to :data:`~.messages.MESSAGE_LIMIT`) and its helpers; kept
apart because these texts speak of a change to the catalog, not of one InferenceService's selection. Only
text is built here: what moved, what is counted and what is withheld from a caller are decided by
:mod:`ome_selector.review.catalog_review`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ome_selector.selection import messages

__all__ = [
    "ALLOW_DISRUPTION_ANNOTATION",
    "NOT_COMPUTED",
    "NOT_COMPUTED_CHANGED",
    "NOT_COMPUTED_QUEUED",
    "NOT_COMPUTED_WAITED",
    "WITHHELD",
    "WITHHELD_FINDING",
    "Example",
    "ambiguity_denial",
    "ambiguity_warning",
    "impact_warning",
    "protection_denial",
]

#: The annotation that lets a change through protection (SPEC §12).
ALLOW_DISRUPTION_ANNOTATION = "ome-selector.ome.io/allow-disruption"
#: The warning of a review that did not finish within the admission budget (SPEC §12).
NOT_COMPUTED = (
    "the impact of this change was not computed within the admission budget; "
    "see kubectl ome-selector runtime what-if"
)
#: Why a review was not computed, the warning after :data:`NOT_COMPUTED` when the budget alone does not say it
#: (SPEC §12): the catalog reviews already waiting for the loop, the wait for a turn, the restarts.
NOT_COMPUTED_QUEUED = "not computed because {count} other catalog reviews were already waiting for their turn"
NOT_COMPUTED_WAITED = (
    "not computed because the review waited its whole budget for a turn behind other catalog reviews"
)
NOT_COMPUTED_CHANGED = (
    "not computed because the models and runtimes it reads changed {count} times while it ran"
)
#: What stands for the names an unverified caller is not told (SPEC §12).
WITHHELD = "names withheld from an unverified caller"
#: An ambiguity finding that involves another namespace's objects, as an unverified caller reads it.
WITHHELD_FINDING = f"a new finding involving another namespace's objects ({WITHHELD})"

#: An example of the impact warning: the InferenceService's namespace and name, and ``<Kind>/<name>`` of its
#: runtime before and after the change (None: none).
Example = tuple[tuple[str, str], str | None, str | None]


def _runtime_text(runtime: str | None) -> str:
    return runtime if runtime is not None else "none"


def impact_warning(
    moved: int, lose: int, switch: int, gain: int, example: Example | None, *, withheld: bool = False
) -> str:
    """`this change moves <n> InferenceService(s): <l> lose their runtime, <k> switch runtime, <g> gain one
    (e.g. <ns>/<name>: <before> → <after>); see kubectl ome-selector runtime what-if`, categories with 0 left
    out, cut to 256 characters (SPEC §12). Without ``example``, the `(e.g. …)` part is `(names withheld from
    an unverified caller)` when names were ``withheld``, else left out. A change that moves
    InferenceServices in none of the three categories (a reason that changes, status and runtime kept) has no
    list."""
    parts = [
        text
        for count, text in (
            (lose, f"{lose} lose their runtime"),
            (switch, f"{switch} switch runtime"),
            (gain, f"{gain} gain one"),
        )
        if count
    ]
    shown = f" ({WITHHELD})" if withheld else ""
    if example is not None:
        (namespace, name), before, after = example
        shown = f" (e.g. {namespace}/{name}: {_runtime_text(before)} → {_runtime_text(after)})"
    listed = f": {', '.join(parts)}" if parts else ""
    moves = f"this change moves {moved} InferenceService(s)"
    text = f"{moves}{listed}{shown}; see kubectl ome-selector runtime what-if"
    return messages.admission_warning(messages.escape_controls(text))


def protection_denial(
    lose: int, stranded: Sequence[tuple[tuple[str, str], str]], kind: str, *, withheld: int = 0
) -> str:
    """`this change leaves <l> InferenceService(s) without a runtime: <ns>/<name> (<after reason>); …;
    annotate the <Kind> with ome-selector.ome.io/allow-disruption: "true" to apply it anyway`, the entries
    ``stranded`` (by namespace and name, with the reason after the change): as many as 1,024 characters hold
    with the end kept, then `…`; the ``withheld`` of the ``lose`` last, as `<m> (names withheld from an
    unverified caller)` (SPEC §12)."""
    head = f"this change leaves {lose} InferenceService(s) without a runtime: "
    tail = f'; annotate the {kind} with {ALLOW_DISRUPTION_ANNOTATION}: "true" to apply it anyway'
    withheld_entry = f"{withheld} ({WITHHELD})" if withheld else ""
    named = lose - withheld
    room = messages.MESSAGE_LIMIT - len(head) - len(tail) - (len(withheld_entry) + 2 if withheld_entry else 0)
    entries: list[str] = []
    for (namespace, name), reason in stranded:
        entry = messages.escape_controls(f"{namespace}/{name} ({reason})")
        last = len(entries) + 1 == named
        # Room for this entry, and for "; …" after it unless it is the last.
        if len("; ".join([*entries, entry])) + (0 if last else 3) > room:
            break
        entries.append(entry)
    if len(entries) < named:
        entries.append(messages.ELLIPSIS)
    if withheld_entry:
        entries.append(withheld_entry)
    return messages.truncate(head + "; ".join(entries) + tail)


def ambiguity_warning(code: str, message: str, *, withheld: bool = False) -> str:
    """`<code>: <finding message>`, cut to 256 characters (SPEC §12); a finding whose names are ``withheld``
    (it involves an object of a namespace the caller may not be told about): `<code>: a new finding
    involving another namespace's objects (names withheld from an unverified caller)`."""
    if withheld:
        return f"{code}: {WITHHELD_FINDING}"
    return messages.admission_warning(messages.escape_controls(f"{code}: {message}"))


def ambiguity_denial(warnings: Iterable[str]) -> str:
    """The denial of an ambiguous runtime change: its ambiguity warnings, cut as §5's messages (SPEC §12)."""
    return messages.truncate("; ".join(warnings))
