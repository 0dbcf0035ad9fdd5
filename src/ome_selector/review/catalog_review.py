"""The review of one catalog change at admission (SPEC §12): the impact warning, protection and ambiguity.

:class:`CatalogReview` runs the impact of the change (:class:`~.impact.ImpactRun`, the implementation what-if
uses) and, for a runtime, its new SIZE003/RANK001 findings (:class:`~.ambiguity.AmbiguityRun`), a step at a
time; :func:`tally` counts what moved by SPEC §12's categories (:data:`CATEGORIES`). Its answer is one row
of :data:`ROWS`, as the SPEC §5 outcomes are (:mod:`ome_selector.selection.outcome`): :func:`review_outcome`
decides the row top-down, and the row says which text denies. The texts are
:mod:`ome_selector.selection.impact_messages`'.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ome_selector.api.resources import Kind, Model, ObjectKey, Resource, Runtime
from ome_selector.catalog.catalog import Catalog, DefinitionChange
from ome_selector.review.ambiguity import AmbiguityRun
from ome_selector.review.impact import ImpactRun, Moved, Verdict
from ome_selector.review.lint import Finding
from ome_selector.selection import impact_messages
from ome_selector.selection.impact_messages import NOT_COMPUTED, Example
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import DecisionInputs
from ome_selector.selection.profiles import MatchKey

__all__ = [
    "CATEGORIES",
    "MAX_AMBIGUITY_WARNINGS",
    "NOT_COMPUTED_RESULT",
    "REVIEW_OUTCOMES",
    "ROWS",
    "STRANDED_LISTED",
    "CatalogReview",
    "Category",
    "Denial",
    "ReviewOutcome",
    "ReviewResult",
    "Row",
    "Shown",
    "Tally",
    "category",
    "not_computed",
    "review_outcome",
    "tally",
]

#: The namespaces whose objects an answer may name (SPEC §12: to a caller not verified as the apiserver, only
#: the request's own); None: every namespace. Cluster-scoped objects are always named.
Shown = frozenset[str] | None

#: Ambiguity warnings at most per review (SPEC §12).
MAX_AMBIGUITY_WARNINGS = 3
#: How many stranded InferenceServices a denial can name at most (each takes more than 10 characters of the
#: 1,024).
STRANDED_LISTED = 100


# --- what moved
# -----------------------------------------------------------------------------------------------------


class Category(StrEnum):
    """How a moved InferenceService moved (SPEC §12), in the order the impact warning lists them."""

    LOSE = "lose"
    SWITCH = "switch"
    GAIN = "gain"


#: SPEC §12's categories by (``True`` before, ``True`` after, another runtime while ``True`` both times):
#: "lose" is ``True`` before and not after, "switch" ``True`` both times with another runtime, "gain" not
#: ``True`` before and ``True`` after; None is another change of status, reason or runtime.
CATEGORIES: Mapping[tuple[bool, bool, bool], Category | None] = {
    (True, False, False): Category.LOSE,
    (True, True, True): Category.SWITCH,
    (True, True, False): None,
    (False, True, False): Category.GAIN,
    (False, False, False): None,
}


def category(before: Verdict | None, after: Verdict | None) -> Category | None:
    """The :data:`CATEGORIES` row of a move from ``before`` to ``after``."""
    was = before is not None and before.status == "True"
    now = after is not None and after.status == "True"
    old, new = (before.runtime if before else None), (after.runtime if after else None)
    return CATEGORIES[(was, now, was and now and old != new)]


@dataclass(slots=True)
class Tally:
    """The moved InferenceServices of SPEC §12 by category, with the first of each (by namespace and name;
    under None the first of all) and, for "lose", the first ones with their reason after the change."""

    moved: int = 0
    counts: dict[Category, int] = field(default_factory=dict)
    first: dict[Category | None, tuple[tuple[str, str], Verdict | None, Verdict | None]] = field(
        default_factory=dict
    )
    stranded: list[tuple[tuple[str, str], str]] = field(default_factory=list)
    #: Moved (and of them "lose") InferenceServices in namespaces whose names the answer may not carry:
    #: counted above, never among ``first`` or ``stranded``.
    withheld: int = 0
    withheld_lose: int = 0

    @property
    def lose(self) -> int:
        return self.counts.get(Category.LOSE, 0)

    @property
    def switch(self) -> int:
        return self.counts.get(Category.SWITCH, 0)

    @property
    def gain(self) -> int:
        return self.counts.get(Category.GAIN, 0)

    def example(self) -> Example | None:
        """The impact warning's example: the first "lose", else the first "switch", else the first "gain",
        else the first moved (SPEC §12); None when none may be named."""
        for kind in (*Category, None):
            if kind in self.first:
                name, before, after = self.first[kind]
                return name, before.runtime if before else None, after.runtime if after else None
        return None


def tally(moved: Sequence[Moved], *, stranded: bool = False, shown: Shown = None) -> Iterator[Tally | None]:
    """Count ``moved`` by category and find the first of each (by namespace, then name: only the groups of
    the first namespace are searched), one group per step; the last step yields the :class:`Tally`. With
    ``stranded``, also the first :data:`STRANDED_LISTED` "lose" InferenceServices. Only those of ``shown``
    namespaces are ever named; the others are counted as withheld."""
    result = Tally()
    lost: list[tuple[tuple[str, str], str]] = []
    firsts: dict[Category | None, list[Moved]] = {}
    for item in moved:
        count = len(item.keys)
        result.moved += count
        kind = category(item.before, item.after)
        if kind is not None:
            result.counts[kind] = result.counts.get(kind, 0) + count
        namespace = item.keys[0].namespace or ""
        if shown is not None and namespace not in shown:
            result.withheld += count
            result.withheld_lose += count if kind is Category.LOSE else 0
            yield None
            continue
        for where in {kind, None}:
            known = firsts.get(where)
            if known is None or namespace < (known[0].keys[0].namespace or ""):
                firsts[where] = [item]
            elif namespace == (known[0].keys[0].namespace or ""):
                known.append(item)
        if kind is Category.LOSE and stranded:
            reason = item.after.reason if item.after is not None else ""
            least_ones = heapq.nsmallest(STRANDED_LISTED, item.keys)
            names = [((k.namespace or "", k.name), reason) for k in least_ones]
            lost = heapq.nsmallest(STRANDED_LISTED, [*lost, *names])
        yield None
    for where, items in firsts.items():
        best: tuple[tuple[str, str], Moved] | None = None
        for item in items:
            least = min(item.keys)  # one kind and one namespace per group: by name
            first = (least.namespace or "", least.name)
            if best is None or first < best[0]:
                best = (first, item)
        if best is not None:
            result.first[where] = (best[0], best[1].before, best[1].after)
        yield None
    result.stranded = lost
    yield result


# --- the answer
# -----------------------------------------------------------------------------------------------------


class ReviewOutcome(StrEnum):
    """The rows of :data:`ROWS`: a review's outcome, a metric label (a fixed set)."""

    UNCHANGED = "unchanged"
    MOVED = "moved"
    NOT_COMPUTED = "not_computed"
    DENIED_PROTECTION = "denied_protection"
    DENIED_AMBIGUITY = "denied_ambiguity"
    ALLOWED_DISRUPTION = "allowed_disruption"


class Denial(StrEnum):
    """Which text denies a change (SPEC §12)."""

    PROTECTION = "protection"
    AMBIGUITY = "ambiguity"


@dataclass(frozen=True, slots=True)
class Row:
    """One outcome of SPEC §12: the text that denies the change (None: it is allowed). The warnings do not
    depend on the row: the impact warning whenever InferenceServices move, the ambiguity warnings whenever
    there are findings, each as the review is configured to give them."""

    denial: Denial | None


#: The SPEC §12 outcomes.
ROWS: Mapping[ReviewOutcome, Row] = {
    ReviewOutcome.UNCHANGED: Row(None),
    ReviewOutcome.MOVED: Row(None),
    ReviewOutcome.NOT_COMPUTED: Row(None),
    ReviewOutcome.DENIED_PROTECTION: Row(Denial.PROTECTION),
    ReviewOutcome.DENIED_AMBIGUITY: Row(Denial.AMBIGUITY),
    ReviewOutcome.ALLOWED_DISRUPTION: Row(None),
}

#: Review outcomes (a metric label: a fixed set).
REVIEW_OUTCOMES = tuple(outcome.value for outcome in ReviewOutcome)


def review_outcome(
    counted: Tally, ambiguous: bool, *, protect: bool, allow_disruption: bool, deny_ambiguous: bool
) -> ReviewOutcome:
    """The outcome of a computed review, in this order: InferenceServices that are ``True`` now would lose
    their runtime under protection without the annotation; a new ambiguity (``ambiguous``) with
    ``deny_ambiguous``; the same loss with the annotation; InferenceServices that move; nothing moves."""
    stranding = protect and counted.lose > 0
    if stranding and not allow_disruption:
        return ReviewOutcome.DENIED_PROTECTION
    if deny_ambiguous and ambiguous:
        return ReviewOutcome.DENIED_AMBIGUITY
    if stranding:
        return ReviewOutcome.ALLOWED_DISRUPTION
    if counted.moved:
        return ReviewOutcome.MOVED
    return ReviewOutcome.UNCHANGED


@dataclass(frozen=True, slots=True)
class ReviewResult:
    """What a review answers: its warnings, the denial's message (None: allowed), and its outcome for the
    metrics (a :class:`ReviewOutcome`, which is its label)."""

    warnings: tuple[str, ...] = ()
    denial: str | None = None
    outcome: str = ReviewOutcome.UNCHANGED


NOT_COMPUTED_RESULT = ReviewResult(warnings=(NOT_COMPUTED,), outcome=ReviewOutcome.NOT_COMPUTED)


def not_computed(reason: str) -> ReviewResult:
    """The "not computed" answer with its reason (:data:`~.impact_messages.NOT_COMPUTED_QUEUED`, …)."""
    return ReviewResult(warnings=(NOT_COMPUTED, reason), outcome=ReviewOutcome.NOT_COMPUTED)


def _ambiguity_warning(finding: Finding, shown: Shown) -> str:
    """A finding's warning; withheld when it involves an object of a namespace not ``shown``."""
    foreign = (k for k in finding.objects if k.namespace is not None)
    withheld = shown is not None and any(key.namespace not in shown for key in foreign)
    return impact_messages.ambiguity_warning(finding.code.value, finding.message, withheld=withheld)


def _reads_alike(a: Resource, b: Resource) -> bool:
    """Whether selection reads ``a`` and ``b`` alike: a runtime's spec and its two annotations, a model's spec
    (as the operator decides whether an event changes anything)."""
    if isinstance(a, Runtime) and isinstance(b, Runtime):
        return a.read_inputs == b.read_inputs
    return isinstance(a, Model) and isinstance(b, Model) and a.spec == b.spec


class CatalogReview:
    """The SPEC §12 review of one catalog object stored (``resource``) or deleted (None) under ``key``,
    against ``before`` (the live catalog). ``warn``: the impact and ambiguity warnings; ``protect``: deny a
    change that strands InferenceServices that are ``True`` now, unless ``allow_disruption``;
    ``deny_ambiguous``: deny a runtime change that adds a SIZE003 or RANK001 finding involving it;
    ``shown``: the namespaces whose objects the answer may name (None: every one; SPEC §12)."""

    def __init__(
        self,
        before: Catalog,
        key: ObjectKey,
        resource: Resource | None,
        *,
        warn: bool = True,
        protect: bool = False,
        allow_disruption: bool = False,
        deny_ambiguous: bool = False,
        lookup: RuntimeLookup = RuntimeLookup.V1_3,
        shown: Shown = None,
    ) -> None:
        self.key = key
        self.shown = shown
        self.warn, self.protect, self.allow_disruption = warn, protect, allow_disruption
        self.deny_ambiguous = deny_ambiguous
        self.impact = ImpactRun(before, {key: resource}, lookup=lookup)
        self.result = ReviewResult()
        self._read_names: tuple[frozenset[str], frozenset[str]] | None = None
        # The match keys of the object reviewed, before and after the change.
        match_keys: set[MatchKey] = set()
        if key.kind in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME):
            for profile in (
                before.runtime_profile(key.kind, key.namespace, key.name),
                self.impact.after.runtime_changes.get(key),
            ):
                match_keys.update(profile.entries_by_key if profile is not None else ())
        else:
            for model in (before.get(key), resource):
                if isinstance(model, Model):
                    match_keys.add(self.impact.after.model_profile(model).match_key)
        self._match_keys = frozenset(match_keys)

    def reads(self, change: DefinitionChange) -> bool:
        """Whether the model or runtime ``change`` (stored or removed in the live catalog while the review let
        the loop run) can move what the review computes — then it must start over: a cluster-scoped object
        (every namespace sees it), one of the reviewed object's namespace, one with an entry of the reviewed
        object's match keys, or one found by a name the review looks up (the models of those keys, the
        reviewed runtime's lineage). A BaseModel or ServingRuntime of another namespace, of other formats and
        names, moves no verdict and no finding the review reads (SPEC §4: only runtimes with an entry of a
        model's match key are ranked for it)."""
        key = change.key
        if key.namespace is None or key.namespace == self.key.namespace:
            return True
        if change.match_keys & self._match_keys:
            return True
        model_names, runtime_names = self._names()
        return bool(change.names & (model_names if key.kind is Kind.BASE_MODEL else runtime_names))

    def _names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The model names and the runtime names the review looks up (computed once)."""
        if self._read_names is None:
            before, key = self.impact.before, self.key
            models = {key.name} if key.kind in (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL) else set()
            for match_key in self._match_keys:
                models.update(model.name for model in before.models_with_match_key(match_key))
            runtimes: set[str] = set()
            if key.kind in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME):
                runtimes = {key.name, *(named.name for named in before.runtime_descendants(key))}
            self._read_names = frozenset(models), frozenset(runtimes)
        return self._read_names

    def touched(self, changed: Iterable[DecisionInputs]) -> None:
        """InferenceServices joined or left the groups ``changed`` since the last step: the groups the review
        judges among them are judged again before it answers (:meth:`ImpactRun.touched`)."""
        self.impact.touched(changed)

    def steps(self) -> Iterator[None]:
        """The work, a little per step; :attr:`result` is set after the last."""
        key = self.key
        changed, stored = self.impact.changes.get(key), self.impact.before.get(key)
        if changed is not None and stored is not None and _reads_alike(stored, changed):
            return  # labels, other annotations, status: nothing selection reads changed (SPEC §5)
        impact = self.warn or self.protect
        if impact:
            yield from self.impact.steps()
        found: list[str] = []
        runtime = key.kind in (Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME)
        if runtime and (self.warn or self.deny_ambiguous) and changed is not None:
            ambiguity = AmbiguityRun(self.impact.after, key, MAX_AMBIGUITY_WARNINGS)
            yield from ambiguity.steps()
            found = [_ambiguity_warning(finding, self.shown) for finding in ambiguity.new]
        # The InferenceServices last: groups they joined or left meanwhile are judged again, and counted as
        # they are when the review answers.
        counted = Tally()
        while impact:
            yield from self.impact.pending()
            for step in tally(self.impact.moved, stranded=self.protect, shown=self.shown):
                if step is not None:
                    counted = step
                yield
            if not self.impact.has_pending:
                break
        self.result = self._answer(counted, found)

    def _answer(self, counted: Tally, found: list[str]) -> ReviewResult:
        """The answer to what moved (``counted``) and the new findings' warnings (``found``): the impact
        warning when InferenceServices move, the findings' warnings, the denial its :data:`ROWS` row names."""
        warnings: list[str] = []
        if counted.moved and self.warn:
            warnings.append(
                impact_messages.impact_warning(
                    counted.moved,
                    counted.lose,
                    counted.switch,
                    counted.gain,
                    counted.example(),
                    withheld=bool(counted.withheld),
                )
            )
        warnings.extend(found)
        outcome = review_outcome(
            counted,
            bool(found),
            protect=self.protect,
            allow_disruption=self.allow_disruption,
            deny_ambiguous=self.deny_ambiguous,
        )
        denial: str | None = None
        match ROWS[outcome].denial:
            case Denial.PROTECTION:
                denial = impact_messages.protection_denial(
                    counted.lose, counted.stranded, self.key.kind.value, withheld=counted.withheld_lose
                )
            case Denial.AMBIGUITY:
                denial = impact_messages.ambiguity_denial(found)
        return ReviewResult(tuple(warnings), denial, outcome)
