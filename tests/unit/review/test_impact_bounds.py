"""The catalog impact review stays bounded whatever the tenants do (SPEC §12): a step ranks at most once,
namespaces whose ServingRuntimes serve other formats share the cluster view, the review never writes the live
memo, changes it does not read never reset it, and its restarts, its queue and its wait for a turn are
bounded, each with the answer's reason. Work is counted (rankings), never timed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest
from selection_builders import NS, catalog, entry, isvc, model, runtime, runtime_doc

from ome_selector.api.resources import Kind, ObjectKey, Resource, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.catalog_review import CatalogReview, ReviewResult
from ome_selector.review.impact import run_to_end
from ome_selector.selection import outcome as outcome_module
from ome_selector.selection import ranking as ranking_module
from ome_selector.selection.impact_messages import NOT_COMPUTED
from ome_selector.selection.outcome import evaluate
from ome_selector.webhook import impact as webhook_impact
from ome_selector.webhook.config import WebhookConfig
from ome_selector.webhook.impact import MAX_QUEUED_REVIEWS, review_catalog_change

MODELS = 4
CLUSTER_RUNTIMES = 12


def tenants(count: int, fmt: str = "safetensors") -> list[Resource]:
    """``count`` tenant namespaces, each with a ServingRuntime of ``fmt`` and an InferenceService of each
    model; 12 ClusterServingRuntimes and 4 ClusterBaseModels of safetensors; InferenceServices in ``ns``
    (no ServingRuntimes)."""
    objects: list[Resource] = [
        runtime(f"c{i}", entry(priority=1 + i % 3), min=f"{1 + i % 6}B", max=f"{20 + i}B")
        for i in range(CLUSTER_RUNTIMES)
    ]
    objects += [model(f"m{j}", size=f"{2 + 3 * j}B") for j in range(MODELS)]
    for k in range(count):
        objects.append(runtime("own", entry(fmt, priority=1), namespace=f"t{k}", min="1B", max="30B"))
        objects += [isvc(f"s{j}", model_name=f"m{j}", namespace=f"t{k}") for j in range(MODELS)]
    objects += [isvc(f"s{j}", model_name=f"m{j}") for j in range(MODELS)]
    return objects


def stepped(steps: Iterator[None], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rankings (SPEC §4) each step of ``steps`` computed."""
    rankings = [0]
    ranking = ranking_module.rank

    def counted(*args: Any, **kwargs: Any) -> Any:
        rankings[-1] += 1
        return ranking(*args, **kwargs)

    monkeypatch.setattr(outcome_module, "rank", counted)
    for _ in steps:
        rankings.append(0)
    return rankings


def wide(name: str = "new") -> Runtime:
    return runtime(name, entry(priority=9), min="1B", max="40B")


REVIEWED: dict[str, Callable[[], tuple[ObjectKey, Resource | None]]] = {
    "a new ClusterServingRuntime": lambda: (wide().key, wide()),
    "a ClusterServingRuntime deleted": lambda: (ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "c3"), None),
    "a tenant's ServingRuntime edited": lambda: (
        ObjectKey(Kind.SERVING_RUNTIME, "t2", "own"),
        runtime("own", entry(priority=1), namespace="t2", min="1B", max="40B"),
    ),
    "a ClusterBaseModel edited": lambda: (model("m1", size="25B").key, model("m1", size="25B")),
}


@pytest.mark.parametrize("case", list(REVIEWED))
def test_a_step_ranks_at_most_once(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 30 namespaces whose ServingRuntime competes for every model: each is a view of its own.
    live = catalog(*tenants(30))
    key, resource = REVIEWED[case]()
    review = CatalogReview(live, key, resource, protect=True, deny_ambiguous=True)
    rankings = stepped(review.steps(), monkeypatch)
    assert max(rankings) <= 1
    # Each namespace is ranked, in a step of its own (a ServingRuntime: its own namespace only).
    assert sum(rankings) >= (1 if key.namespace else 30)


def test_a_new_cluster_runtime_ranks_each_namespace_view_in_steps_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The ambiguity part alone (nothing else warms the memos): one view of one model per ranking step.
    live = catalog(*tenants(30))
    review = CatalogReview(live, wide().key, wide(), warn=False, deny_ambiguous=True)
    rankings = stepped(review.steps(), monkeypatch)
    assert max(rankings) == 1
    assert sum(rankings) >= 30  # the work is done, one view per step


def test_namespaces_whose_runtimes_serve_other_formats_share_the_cluster_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    totals = []
    for count in (2, 40):
        live = catalog(*tenants(count, fmt="onnx"))
        review = CatalogReview(live, wide().key, wide())
        totals.append(sum(stepped(review.steps(), monkeypatch)))
        monkeypatch.undo()
        assert review.result.outcome == "moved"
    assert totals[0] == totals[1]


def test_the_review_never_writes_the_live_memo() -> None:
    cold = catalog(*tenants(5))
    review = CatalogReview(cold, wide().key, wide(), protect=True)
    run_to_end(review.steps())
    assert review.result.outcome == "moved"
    assert len(cold.auto_selections) == 0

    warm = catalog(*tenants(5))
    for service in warm.inference_services():
        evaluate(warm, service)
    memo = warm.auto_selections
    kept = {
        (scope, j): memo.peek(scope, warm.model_profile(model(f"m{j}", size=f"{2 + 3 * j}B")), ())
        for scope in (None, *(f"t{k}" for k in range(5)))
        for j in range(MODELS)
    }
    size = len(memo)
    review = CatalogReview(warm, wide().key, wide(), protect=True)
    run_to_end(review.steps())
    assert len(memo) == size
    for (scope, j), found in kept.items():
        assert found is not None
        again = memo.peek(scope, warm.model_profile(model(f"m{j}", size=f"{2 + 3 * j}B")), ())
        assert again is found


# --- the driver: changes between turns, retries, queue, wait -------------------------------------------


def drive(
    live: Catalog,
    body: dict[str, Any],
    churn: Callable[[Catalog, int], None] | None,
    monkeypatch: pytest.MonkeyPatch,
    *,
    churns: int | None = None,
) -> ReviewResult | None:
    """The admission review of storing ``body``, one step per turn, while ``churn(live, i)`` changes the
    catalog at each turn of the loop (``churns`` times, or until the review answers)."""
    monkeypatch.setattr(webhook_impact, "TURN_SECONDS", 0.0)
    config = WebhookConfig(protect_inference_services=True, impact_budget=60.0)

    async def run() -> ReviewResult | None:
        done = asyncio.Event()

        async def changing() -> None:
            i = 0
            while churn is not None and not done.is_set() and (churns is None or i < churns):
                churn(live, i)
                i += 1
                await asyncio.sleep(0)

        async def reviewing() -> ReviewResult | None:
            try:
                return await review_catalog_change(
                    live,
                    Kind(body["kind"]),
                    body,
                    None,
                    operation="CREATE",
                    config=config,
                    turns=asyncio.Lock(),
                )
            finally:
                done.set()

        answer, _ = await asyncio.gather(reviewing(), changing())
        return answer

    return asyncio.run(run())


def computed(live: Catalog, body: dict[str, Any]) -> ReviewResult:
    from ome_selector.api.loading import load_resource

    resource = load_resource(body)
    assert resource is not None
    review = CatalogReview(live, resource.key, resource, protect=True)
    run_to_end(review.steps())
    return review.result


def _isvc_elsewhere(live: Catalog, i: int) -> None:
    service = isvc(f"churn-{i}", model_name="other-model", namespace="tenant")
    live.upsert(service)
    live.remove(service.key)


def _tenant_model_of_another_format(live: Catalog, i: int) -> None:
    live.upsert(model(f"own-{i}", fmt="onnx", namespace="t1"))
    live.remove(ObjectKey(Kind.BASE_MODEL, "t1", f"own-{i}"))


def _tenant_runtime_of_another_format(live: Catalog, i: int) -> None:
    live.upsert(runtime(f"own-{i}", entry("onnx"), namespace="t1"))
    live.remove(ObjectKey(Kind.SERVING_RUNTIME, "t1", f"own-{i}"))


@pytest.mark.parametrize(
    "churn", [_isvc_elsewhere, _tenant_model_of_another_format, _tenant_runtime_of_another_format]
)
def test_changes_the_review_does_not_read_never_reset_it(
    churn: Callable[[Catalog, int], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    live = catalog(*tenants(3, fmt="onnx"))
    body = runtime_doc("new", entry(priority=9), min="1B", max="40B")
    expected = computed(live, body)
    assert expected.outcome == "moved"
    assert drive(live, body, churn, monkeypatch) == expected


def test_inference_services_that_join_the_groups_judged_are_counted_as_they_are_at_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    live = catalog(*tenants(3, fmt="onnx"))
    body = runtime_doc("new", entry(priority=9), min="1B", max="40B")
    before = computed(live, body)

    def joining(live: Catalog, i: int) -> None:
        # Into a group already judged (ns, m0), and a group of its own (a namespace the review never saw).
        live.upsert(isvc(f"late-{i}", model_name="m0", namespace=NS if i % 2 else "late"))

    answer = drive(live, body, joining, monkeypatch, churns=6)
    assert answer == computed(live, body)
    assert answer != before
    assert answer is not None
    assert answer.warnings[0].startswith(f"this change moves {MODELS * 4 + 6} InferenceService(s)")


@pytest.mark.parametrize(
    "stored",
    [
        lambda i: model(f"x{i}", size=f"{i % 9 + 1}B"),  # a ClusterBaseModel of the runtime's format
        lambda i: runtime(f"x{i}", entry("onnx")),  # cluster-scoped: every namespace reads it
        lambda i: runtime(f"x{i}", entry(), namespace="t1"),  # a tenant's, of the runtime's format
    ],
)
def test_restarts_are_bounded_and_the_answer_says_why(
    stored: Callable[[int], Resource], monkeypatch: pytest.MonkeyPatch
) -> None:
    live = catalog(*tenants(3, fmt="onnx"))
    body = runtime_doc("new", entry(priority=9), min="1B", max="40B")
    answer = drive(live, body, lambda live, i: live.upsert(stored(i)), monkeypatch)
    assert answer == ReviewResult(
        (
            NOT_COMPUTED,
            "not computed because the models and runtimes it reads changed 3 times while it ran",
        ),
        None,
        "not_computed",
    )


def _held(
    reviews: int, budget: float, last_budget: float
) -> Callable[[], Coroutine[Any, Any, tuple[ReviewResult | None, list[ReviewResult | None]]]]:
    """With the turns held by someone else, ``reviews`` reviews wait for a turn and one more is asked."""
    live = catalog(*tenants(2))
    body = runtime_doc("new", entry(priority=9), min="1B", max="40B")

    def ask(lock: asyncio.Lock, seconds: float) -> Coroutine[Any, Any, ReviewResult | None]:
        config = WebhookConfig(catalog_impact=True, impact_budget=seconds)
        return review_catalog_change(
            live, Kind.CLUSTER_SERVING_RUNTIME, body, None, operation="CREATE", config=config, turns=lock
        )

    async def run() -> tuple[ReviewResult | None, list[ReviewResult | None]]:
        lock = asyncio.Lock()
        await lock.acquire()
        waiting = [asyncio.get_running_loop().create_task(ask(lock, budget)) for _ in range(reviews)]
        await asyncio.sleep(0)  # each one takes its place in the queue
        last = await asyncio.wait_for(ask(lock, last_budget), 30)  # a regression fails, never hangs
        lock.release()
        return last, list(await asyncio.gather(*waiting))

    return run


def test_a_full_queue_answers_at_once_with_its_reason() -> None:
    last, waited = asyncio.run(_held(MAX_QUEUED_REVIEWS, 60.0, 60.0)())
    assert last == ReviewResult(
        (NOT_COMPUTED, "not computed because 16 other catalog reviews were already waiting for their turn"),
        None,
        "not_computed",
    )
    assert all(answer is not None and answer.outcome == "moved" for answer in waited)


def test_no_review_waits_for_a_turn_past_its_budget() -> None:
    last, waited = asyncio.run(_held(1, 60.0, 0.05)())
    assert last == ReviewResult(
        (
            NOT_COMPUTED,
            "not computed because the review waited its whole budget for a turn behind other catalog reviews",
        ),
        None,
        "not_computed",
    )
    assert waited[0] is not None
    assert waited[0].outcome == "moved"
