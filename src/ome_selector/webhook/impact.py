"""The review of a model or runtime change at admission (SPEC §12), on the operator's event loop.

The work is :class:`~ome_selector.review.impact.CatalogReview`'s (the implementation what-if uses): this
module runs its steps between turns of the loop — a turn at most :data:`TURN_SECONDS` long, then the loop
serves whatever waits (InferenceService reviews, watch events) — under a deadline
(:attr:`~.config.WebhookConfig.impact_budget`). A review past its deadline, or whose catalog changed while it
let the loop run, answers with the "not computed" warning: never a guess, never a denial.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from ome_selector.api.bounds import oversized
from ome_selector.api.loading import LoadError, load_resource
from ome_selector.api.resources import Kind, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.impact import (
    ALLOW_DISRUPTION_ANNOTATION,
    NOT_COMPUTED_RESULT,
    REVIEW_OUTCOMES,
    CatalogReview,
    ReviewResult,
    Shown,
)
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.webhook.config import WebhookConfig

__all__ = ["CATALOG_KINDS", "TURN_SECONDS", "CatalogReviewMetrics", "review_catalog_change"]

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


def _load(body: Mapping[str, Any] | None) -> Resource | None:
    if body is None or oversized(body) is not None:
        return None
    try:
        return load_resource(body)
    except LoadError:
        return None


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
    of them compute at a time. ``shown``: the namespaces whose objects the answer may name (None: all)."""
    if not (config.catalog_impact or config.protect_inference_services or config.deny_ambiguous_runtimes):
        return None
    deleting = operation == "DELETE"
    stored = old if deleting else body  # on DELETE the object is the stored one
    started = time.monotonic()
    deadline = started + config.impact_budget
    review: CatalogReview | None = None
    steps: Iterator[None] = iter(())
    version = live.version
    result: ReviewResult | None = None
    done = False
    while result is None and not done:
        # One review computes at a time, and it lets the loop run (the yield below) before the next one's
        # turn: a burst of reviews holds the loop for one turn at a time, not one turn each.
        async with turns if turns is not None else contextlib.nullcontext():
            turn = time.monotonic()
            if review is None:
                resource = _load(stored)  # read in the first turn too: a large runtime costs a millisecond
                if resource is None or resource.kind is not kind:
                    return None
                annotations = (stored or {}).get("metadata", {}).get("annotations") or {}
                review = CatalogReview(
                    live,
                    resource.key,
                    None if deleting else resource,
                    warn=config.catalog_impact,
                    protect=config.protect_inference_services
                    and not (deleting and username in SYSTEM_DELETERS),
                    allow_disruption=annotations.get(ALLOW_DISRUPTION_ANNOTATION) == "true",
                    deny_ambiguous=config.deny_ambiguous_runtimes,
                    lookup=lookup,
                    shown=shown,
                )
                steps, version = review.steps(), live.version
            elif live.version != version:
                result = NOT_COMPUTED_RESULT  # judged half on one catalog, half on another: no answer
                break
            while True:
                if next(steps, _DONE) is _DONE:
                    done = True
                    break
                now = time.monotonic()
                if now > deadline:
                    result = NOT_COMPUTED_RESULT
                    break
                if now - turn >= TURN_SECONDS:
                    break
            await asyncio.sleep(0)
    assert review is not None
    if result is None:
        result = review.result
    if metrics is not None:
        metrics.reviews.labels(result.outcome).inc()
        moved = (
            sum(len(item.keys) for item in review.impact.moved) if result is not NOT_COMPUTED_RESULT else 0
        )
        if moved:
            metrics.moved.inc(moved)
    return result
