"""The review of a model or runtime change at admission (SPEC §12), on the operator's event loop.

The work is :class:`~ome_selector.review.catalog_review.CatalogReview`'s (built on what-if's implementation):
this module runs its steps between turns of the loop — a turn at most :data:`TURN_SECONDS` long, then
the loop serves whatever waits (InferenceService reviews, watch events) — under a deadline
(:attr:`~.config.WebhookConfig.impact_budget`). A review past its deadline answers with the "not computed"
warning: never a guess, never a denial. Between two turns the catalog may change: InferenceServices stored or
removed send the groups the review judges back to be judged again (the rest stands: verdicts read only models
and runtimes); a model or runtime stored or removed that the review reads
(:meth:`~ome_selector.review.catalog_review.CatalogReview.reads`) starts it over, at most :data:`MAX_RESTARTS`
times. At most :data:`MAX_QUEUED_REVIEWS` reviews compute or wait for a turn at once, and none waits past
its deadline; each of these answers "not computed" with its reason.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from ome_selector.api.loading import stored_or_absent
from ome_selector.api.resources import Kind
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.catalog_review import (
    NOT_COMPUTED_RESULT,
    REVIEW_OUTCOMES,
    CatalogReview,
    ReviewResult,
    Shown,
    not_computed,
)
from ome_selector.selection.impact_messages import (
    ALLOW_DISRUPTION_ANNOTATION,
    NOT_COMPUTED_CHANGED,
    NOT_COMPUTED_QUEUED,
    NOT_COMPUTED_WAITED,
)
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.webhook.config import WebhookConfig

__all__ = [
    "CATALOG_KINDS",
    "MAX_QUEUED_REVIEWS",
    "MAX_RESTARTS",
    "TURN_SECONDS",
    "CatalogReviewMetrics",
    "review_catalog_change",
]

#: The kinds whose changes are reviewed.
CATALOG_KINDS = (Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL, Kind.SERVING_RUNTIME, Kind.CLUSTER_SERVING_RUNTIME)
#: Who deletes objects for Kubernetes itself: a namespace being deleted, owners gone.
SYSTEM_DELETERS = frozenset(
    {
        "system:serviceaccount:kube-system:namespace-controller",
        "system:serviceaccount:kube-system:generic-garbage-collector",
    }
)
_DONE = object()
#: Longest the review holds the loop before letting it run (SPEC §12: never over 50 ms).
TURN_SECONDS = 0.002
#: Catalog reviews computing or waiting for a turn at once (SPEC §12); one more answers at once.
MAX_QUEUED_REVIEWS = 16
#: How many times a review starts over when the models or runtimes change under it (SPEC §12).
MAX_RESTARTS = 2
#: The reviews computing or waiting, per turns lock (one per event loop's admission handlers).
_queued: weakref.WeakKeyDictionary[asyncio.Lock, int] = weakref.WeakKeyDictionary()


class CatalogReviewMetrics:
    """``ome_selector_catalog_reviews_total{outcome}`` and
    ``ome_selector_catalog_moved_inferenceservices_total``: labels from a fixed set, 7 series in all."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.reviews = Counter(
            "ome_selector_catalog_reviews",
            "Model and runtime changes reviewed at admission (SPEC §12), by outcome",
            ["outcome"],
            registry=registry,
        )
        self.moved = Counter(
            "ome_selector_catalog_moved_inferenceservices",
            "InferenceServices that the model and runtime changes reviewed would move (SPEC §12)",
            registry=registry,
        )
        for outcome in REVIEW_OUTCOMES:
            self.reviews.labels(outcome)


async def review_catalog_change(
    live: Catalog,
    kind: Kind,
    body: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    *,
    operation: str,
    config: WebhookConfig,
    lookup: RuntimeLookup = RuntimeLookup.V1_3,
    metrics: CatalogReviewMetrics | None = None,
    username: str | None = None,
    turns: asyncio.Lock | None = None,
    shown: Shown = None,
) -> ReviewResult | None:
    """The SPEC §12 answer for a CREATE, UPDATE or DELETE of ``kind``; None when there is nothing to review
    (every part off, or an object the product cannot read: §7's warnings only). ``username`` is who asks:
    protection never denies the deletions of the namespace controller and the garbage collector (a namespace
    being deleted would otherwise stay Terminating). ``turns``, shared by the reviews of one loop, lets one
    of them compute at a time (and bounds how many wait). ``shown``: the namespaces whose objects the answer
    may name (None: all)."""
    if not (config.catalog_impact or config.protect_inference_services or config.deny_ambiguous_runtimes):
        return None
    deleting = operation == "DELETE"
    stored = old if deleting else body  # on DELETE the object is the stored one
    started = time.monotonic()
    deadline = started + config.impact_budget
    resource = stored_or_absent(stored)  # a large runtime costs a millisecond
    if resource is None or resource.kind is not kind:
        return None
    annotations = (stored or {}).get("metadata", {}).get("annotations") or {}

    def start() -> CatalogReview:
        return CatalogReview(
            live,
            resource.key,
            None if deleting else resource,
            warn=config.catalog_impact,
            protect=config.protect_inference_services and not (deleting and username in SYSTEM_DELETERS),
            allow_disruption=annotations.get(ALLOW_DISRUPTION_ANNOTATION) == "true",
            deny_ambiguous=config.deny_ambiguous_runtimes,
            lookup=lookup,
            shown=shown,
        )

    waiting = _queued.get(turns, 0) if turns is not None else 0
    review: CatalogReview | None = None
    if turns is not None and waiting >= MAX_QUEUED_REVIEWS:
        result = not_computed(NOT_COMPUTED_QUEUED.format(count=waiting))
    else:
        if turns is not None:
            _queued[turns] = waiting + 1
        try:
            result, review = await _run(live, start, deadline, turns)
        finally:
            if turns is not None:
                _queued[turns] -= 1
    if metrics is not None:
        metrics.reviews.labels(result.outcome).inc()
        computed = review is not None and result.outcome != "not_computed"
        moved = sum(len(item.keys) for item in review.impact.moved) if computed and review else 0
        if moved:
            metrics.moved.inc(moved)
    return result


async def _run(
    live: Catalog, start: Callable[[], CatalogReview], deadline: float, turns: asyncio.Lock | None
) -> tuple[ReviewResult, CatalogReview | None]:
    """Run a review's steps in turns (see the module's text); its answer, and the review (None when it never
    had a turn)."""
    review: CatalogReview | None = None
    steps: Iterator[None] = iter(())
    restarts = 0
    definitions = mark = 0
    while True:
        # One review computes at a time, and it lets the loop run (the yield below) before the next one's
        # turn: a burst of reviews holds the loop for one turn at a time, not one turn each.
        if turns is not None:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await turns.acquire()
            except TimeoutError:
                return not_computed(NOT_COMPUTED_WAITED), review
        try:
            turn = time.monotonic()
            restart = review is None
            if review is not None:
                stored = live.definition_changes_since(definitions)
                changed = live.inference_service_changes_since(mark)
                if stored is None or changed is None:
                    restart = True  # more changed than the catalog remembers
                elif any(review.reads(change) for change in stored):
                    restart = True  # what its verdicts read changed: judged on one catalog, never two
                elif changed:
                    review.touched(changed)
            if restart:
                if review is not None:
                    restarts += 1
                    if restarts > MAX_RESTARTS:
                        return not_computed(NOT_COMPUTED_CHANGED.format(count=restarts)), review
                review = start()
                steps = review.steps()
            definitions = live.definition_changes
            assert review is not None
            mark = live.inference_service_changes
            while True:
                if next(steps, _DONE) is _DONE:
                    return review.result, review
                now = time.monotonic()
                if now > deadline:
                    return NOT_COMPUTED_RESULT, review
                if now - turn >= TURN_SECONDS:
                    break
        finally:
            if turns is not None:
                turns.release()
        await asyncio.sleep(0)
