"""The memo of auto-selection results: what it returns, what it forgets, and its bound."""

from __future__ import annotations

from selection_builders import NS, model

from ome_selector.selection.memo import AutoSelection, AutoSelectionMemo
from ome_selector.selection.profiles import ModelProfile


def result(name: str = "m", **fields: object) -> AutoSelection:
    return AutoSelection(ModelProfile.of(model(name, **fields)), None)


def test_a_result_is_found_for_its_namespace_model_profile_and_classes() -> None:
    memo = AutoSelectionMemo()
    kept = result()
    memo.put(NS, (), kept)
    assert memo.get(NS, kept.model, ()) is kept
    assert memo.get("other", kept.model, ()) is None
    assert memo.get(NS, kept.model, ("a100",)) is None


def test_a_new_profile_of_the_model_is_not_taken_for_the_old_one() -> None:
    memo = AutoSelectionMemo()
    old, new = result(size="3B"), result(size="4B")
    memo.put(NS, (), old)
    assert memo.get(NS, new.model, ()) is None
    memo.put(NS, (), new)  # replaces the old one: one result per model
    assert memo.get(NS, new.model, ()) is new
    assert len(memo) == 1


def test_runtime_changes_forget_their_namespace_or_everything() -> None:
    memo = AutoSelectionMemo()
    here, there = result("a"), result("b")
    memo.put(NS, (), here)
    memo.put("other", (), there)
    memo.runtimes_changed("elsewhere")
    assert len(memo) == 2
    memo.runtimes_changed(NS)
    assert memo.get(NS, here.model, ()) is None
    assert memo.get("other", there.model, ()) is there
    assert len(memo) == 1
    memo.put(NS, (), here)
    memo.runtimes_changed(None)  # a ClusterServingRuntime is visible from every namespace
    assert len(memo) == 0
    assert memo.get("other", there.model, ()) is None


def test_past_its_capacity_the_memo_starts_over() -> None:
    memo = AutoSelectionMemo(capacity=3)
    results = [result(f"m{i}") for i in range(4)]
    for kept in results[:3]:
        memo.put(NS, (), kept)
    assert len(memo) == 3
    memo.put(NS, (), results[3])
    assert len(memo) == 1
    assert memo.get(NS, results[3].model, ()) is results[3]
    assert memo.get(NS, results[0].model, ()) is None
