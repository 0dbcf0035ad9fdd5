"""The memo of auto-selection results: what it returns, what it forgets, and its bound."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from selection_builders import NS, entry, model, runtime

from ome_selector.selection.matcher import check
from ome_selector.selection.memo import AutoSelection, AutoSelectionMemo
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile


def result(name: str = "m", **fields: object) -> AutoSelection:
    return AutoSelection(ModelProfile.of(model(name, **fields)), None)


def test_a_result_is_found_for_its_namespace_model_profile_and_classes() -> None:
    memo = AutoSelectionMemo()
    kept = result()
    memo.put(NS, (), kept)
    assert memo.get(NS, kept.model, ()) is kept
    assert memo.get("other", kept.model, ()) is None
    assert memo.get(NS, kept.model, ("a100",)) is None


def test_a_new_spec_of_the_model_is_not_taken_for_the_old_one() -> None:
    memo = AutoSelectionMemo()
    old, new = result(size="3B"), result(size="4B")
    memo.put(NS, (), old)
    assert memo.get(NS, new.model, ()) is None
    memo.put(NS, (), new)
    assert memo.get(NS, new.model, ()) is new
    assert memo.get(NS, old.model, ()) is old  # kept until the memo starts over; no model of it reads it


def test_models_of_one_spec_share_a_result_and_the_name_does_not_count() -> None:
    memo = AutoSelectionMemo()
    kept = result("base", size="8B")
    memo.put(NS, (), kept)
    assert memo.get(NS, ModelProfile.of(model("fine-tune", size="8B")), ()) is kept
    assert memo.get(NS, ModelProfile.of(model("fine-tune", size="8.5B")), ()) is None
    assert memo.get(NS, ModelProfile.of(model("fine-tune", size="8B", arch="Other")), ()) is None
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
    results = [result(f"m{i}", size=f"{i + 1}B") for i in range(4)]
    for kept in results[:3]:
        memo.put(NS, (), kept)
    assert len(memo) == 3
    memo.put(NS, (), results[3])
    assert len(memo) == 1
    assert memo.get(NS, results[3].model, ()) is results[3]
    assert memo.get(NS, results[0].model, ()) is None


def _selected(runtime_profile: RuntimeProfile, model_profile: ModelProfile) -> AutoSelection:
    result = check(runtime_profile, model_profile)
    assert result.failed is None
    return AutoSelection(model_profile, result)


def _profile(name: str, priority: int, namespace: str | None = None) -> RuntimeProfile:
    return RuntimeProfile.of(runtime(name, entry(priority=priority), namespace=namespace))


def _winner(memo: AutoSelectionMemo, scope: str | None, model_profile: ModelProfile) -> str | None:
    found = memo.get(scope, model_profile, ())
    assert found is not None
    return found.selected.profile.name if found.selected is not None else None


def test_a_runtime_change_is_replayed_on_the_kept_result_not_ranked_again() -> None:
    memo = AutoSelectionMemo()
    m = ModelProfile.of(model())
    b = _profile("b", priority=2)
    memo.put(None, (), _selected(b, m))
    memo.runtime_changed(None, _profile("a", 1).runtime.key, _profile("a", 1))  # ranks after b: lower score
    assert _winner(memo, None, m) == "b"
    memo.runtime_changed(None, _profile("c", 3).runtime.key, _profile("c", 3))  # ranks before b
    assert _winner(memo, None, m) == "c"
    memo.runtime_changed(NS, _profile("local", 1, NS).runtime.key, _profile("local", 1, NS))
    assert _winner(memo, None, m) == "c"  # the shared result is not read from a namespace with runtimes
    memo.put(NS, (), _selected(_profile("c", 3), m))
    memo.runtime_changed(NS, _profile("local", 1, NS).runtime.key, _profile("local", 1, NS))
    assert _winner(memo, NS, m) == "local"  # every ServingRuntime ranks before every ClusterServingRuntime
    memo.runtime_changed(None, _profile("a", 1).runtime.key, None)  # removing a runtime not selected
    assert _winner(memo, None, m) == "c"
    assert len(memo) == 2


@pytest.mark.parametrize(
    "kept",
    [
        pytest.param(lambda m, c: _selected(c, m), id="its selected runtime changed"),
        pytest.param(lambda m, c: AutoSelection(m, None), id="it selected nothing"),
    ],
)
def test_a_result_the_change_may_alter_otherwise_is_computed_again(
    kept: Callable[[ModelProfile, RuntimeProfile], AutoSelection],
) -> None:
    memo = AutoSelectionMemo()
    m, c = ModelProfile.of(model()), _profile("c", 3)
    memo.put(None, (), kept(m, c))
    memo.runtime_changed(None, c.runtime.key, _profile("c", 4))
    assert memo.get(None, m, ()) is None
    assert len(memo) == 0


def test_past_its_log_limit_the_memo_starts_over() -> None:
    memo = AutoSelectionMemo(log_limit=2)
    m = ModelProfile.of(model())
    memo.put(None, (), _selected(_profile("c", 3), m))
    for name in ("a", "b"):
        memo.runtime_changed(None, _profile(name, 1).runtime.key, _profile(name, 1))
    assert len(memo) == 1
    memo.runtime_changed(None, _profile("d", 1).runtime.key, _profile("d", 1))
    assert len(memo) == 0
