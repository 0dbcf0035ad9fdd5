"""Each fast path of the selection core equals the plain computation it replaces.

- the entries a no-runtime message can hold, kept in place of all of them, give the same message;
- the nearest misses of a format, checked lazily from the match-key candidates and one pass, come in the
  order of sorting every runtime's check;
- reasons written with one shared writer of format reasons equal reasons written alone;
- versions compare as tuples exactly as part by part (SPEC §9).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from selection_builders import NS, entry, model, runtime

from ome_selector.selection import messages, ranking
from ome_selector.selection.matcher import FormatReasons, check
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile
from ome_selector.selection.ranking import misses_of_format, nearest_misses, rank
from ome_selector.selection.version import Version, compare_versions, parse_version

# --- the entries a no-runtime message holds -----------------------------------------------------------------


@settings(max_examples=200)
@given(
    st.lists(st.integers(0, 700).map(lambda n: "e" * n), max_size=40),
    st.text(max_size=40),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 5),
    st.text(max_size=40),
    st.integers(1, 2_000),
)
def test_the_entries_held_give_the_message_all_entries_give(
    entries: list[str],
    model_name: str,
    namespaced: int,
    cluster: int,
    other_formats: int,
    isvc_name: str,
    limit: int,
) -> None:
    def message(listed: list[str] | tuple[str, ...]) -> str:
        return messages.no_runtime_message(
            model=model_name,
            namespaced_count=namespaced,
            cluster_count=cluster,
            entries=listed,
            other_formats=other_formats,
            isvc=isvc_name,
            namespace=NS,
            limit=limit,
        )

    held = messages.no_runtime_entries_held(entries, limit)
    assert entries[: len(held)] == list(held)
    assert message(held) == message(entries)


def test_the_entries_held_stop_after_the_one_that_passes_the_limit() -> None:
    a, b = "a" * 10, "b" * 10  # "a; b" is 22 characters, "a; b; c" 25
    assert messages.no_runtime_entries_held([a, b, "c"], limit=25) == (a, b, "c")  # all fit
    assert messages.no_runtime_entries_held([a, b, "c", "d"], limit=22) == (a, b, "c")
    assert messages.no_runtime_entries_held([a, b, "c"], limit=21) == (a, b)
    assert messages.no_runtime_entries_held(["a" * 30, "b"], limit=20) == ("a" * 30,)
    assert messages.no_runtime_entries_held([], limit=20) == ()


# --- nearest misses of a format -----------------------------------------------------------------------------


@st.composite
def format_runtimes(draw: st.DrawFn) -> list[RuntimeProfile]:
    """Runtimes that all name safetensors, missing the model at every step, namespaced first, each by name."""
    found: dict[tuple[bool, str], RuntimeProfile] = {}
    for _ in range(draw(st.integers(0, 12))):
        name = draw(st.sampled_from("abcdefgh"))
        namespace = draw(st.sampled_from([NS, None]))
        fields: dict[str, Any] = {
            "arch": draw(st.sampled_from([None, "A", "B"])),
            "auto_select": draw(st.booleans()),
        }
        rt = runtime(
            name,
            entry(**fields),
            namespace=namespace,
            disabled=draw(st.sampled_from([False, False, True])),
            classes=draw(st.sampled_from([None, ["a100"]])),
            max=draw(st.sampled_from([None, "1B"])),
        )
        found[(namespace is None, name)] = RuntimeProfile.of(rt)
    return [found[key] for key in sorted(found)]


@settings(max_examples=200)
@given(format_runtimes(), st.sampled_from([(), ("a100",)]), st.sampled_from([None, "A"]))
def test_misses_of_a_format_come_in_the_order_of_sorting_every_check(
    formats: list[RuntimeProfile], classes: tuple[str, ...], arch: str | None
) -> None:
    m = ModelProfile.of(model(size="3B", arch=arch))
    candidates = rank([p for p in formats if m.match_key in p.entries_by_key], m, classes)
    every = [check(profile, m, classes) for profile in formats]
    expected = nearest_misses(result for result in every if not result.auto_selectable)
    lazily = list(misses_of_format(formats, candidates, m, classes))
    assert [(r.profile.name, r.profile.is_cluster, r.failed) for r in lazily] == [
        (r.profile.name, r.profile.is_cluster, r.failed) for r in expected
    ]


def test_misses_of_a_format_check_only_as_many_runtimes_as_are_pulled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    formats = [RuntimeProfile.of(runtime(f"rt-{i:04d}", entry(arch="other"))) for i in range(1_000)]
    m = ModelProfile.of(model(arch="A"))
    checked: list[str] = []

    def counting(profile: RuntimeProfile, *args: Any) -> Any:
        checked.append(profile.name)
        return check(profile, *args)

    monkeypatch.setattr(ranking, "check", counting)
    misses = misses_of_format(formats, rank([], m), m)
    assert [next(misses).profile.name for _ in range(3)] == ["rt-0000", "rt-0001", "rt-0002"]
    assert checked == ["rt-0000", "rt-0001", "rt-0002"]


# --- reasons with a shared writer of format reasons --------------------------------------------------------

values = st.sampled_from([None, "A", "B", "x\n"])


@st.composite
def entry_fields(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "fmt": draw(st.sampled_from(["safetensors", "onnx"])),
        "arch": draw(values),
        "quant": draw(values),
        "version": draw(st.sampled_from([None, "1.0", "2.0", "bad"])),
        "operator": draw(st.sampled_from([None, "GreaterThan", "Unknown"])),
        "framework": draw(st.sampled_from([None, "transformers", "vllm"])),
        "fw_version": draw(st.sampled_from([None, "4.0"])),
        "pipeline": draw(st.sampled_from([None, {}, {"className": "P"}])),
    }


@settings(max_examples=150)
@given(
    st.lists(st.lists(entry_fields(), max_size=3), min_size=1, max_size=6),
    entry_fields(),
    st.sampled_from([None, 5, 40, 1024]),
)
def test_reasons_written_with_a_shared_writer_equal_reasons_written_alone(
    runtimes_entries: list[list[dict[str, Any]]], model_fields: dict[str, Any], limit: int | None
) -> None:
    fields = dict(model_fields)
    fields.pop("operator")
    m = ModelProfile.of(model(**fields))
    shared = FormatReasons(m.spec, limit)
    for index, entries in enumerate(runtimes_entries):
        result = check(RuntimeProfile.of(runtime(f"rt-{index}", *[entry(**e) for e in entries])), m)
        assert result.reason_within(limit, shared) == result.reason_within(limit)


# --- versions compare as tuples -----------------------------------------------------------------------------


def _part_by_part(left: Version, right: Version) -> int:
    """SPEC §9 spelled out: numbers, then pre, build and dev identifiers as strings, then the shorter list."""
    for a, b in ((left.major, right.major), (left.minor, right.minor), (left.patch, right.patch)):
        if a != b:
            return -1 if a < b else 1
    for la, lb in ((left.pre, right.pre), (left.build, right.build), (left.dev, right.dev)):
        for a_id, b_id in zip(la, lb, strict=False):
            if a_id != b_id:
                return -1 if a_id < b_id else 1
        if len(la) != len(lb):
            return -1 if len(la) < len(lb) else 1
    return 0


identifier = st.sampled_from(["", "0", "1", "10", "2", "a", "b", "rc", "dev0", "é"])
versions = st.builds(
    lambda numbers, pre, build, dev: (
        ".".join(str(n) for n in numbers)
        + ("-" + ".".join(pre) if pre else "")
        + ("+" + ".".join(build) if build else "")
        + ("." + ".".join(dev) if dev and len(numbers) == 3 else "")
    ),
    st.lists(st.integers(0, 3), min_size=1, max_size=3),
    st.lists(identifier, max_size=2),
    st.lists(identifier, max_size=2),
    st.lists(identifier, max_size=2),
)


@settings(max_examples=300)
@given(versions, versions)
def test_versions_compare_as_tuples_exactly_as_part_by_part(a: str, b: str) -> None:
    left, right = parse_version(a), parse_version(b)
    assume(left is not None and right is not None)
    assert left is not None
    assert right is not None
    assert compare_versions(left, right) == _part_by_part(left, right)
