"""Hostile input to the selection core (SPEC §7 v3, §8 "bounded resources"): huge values, control characters,
huge entry lists.

Work is bounded by argument, never by a clock: each test counts what the code under test is handed (characters
escaped, versions parsed, entries looked at, reasons written) and shows it does not grow with the input.
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, isvc, model, no_runtime_message_from, runtime

from ome_selector.selection import matcher, messages, version
from ome_selector.selection.explain import explain
from ome_selector.selection.matcher import check
from ome_selector.selection.messages import MESSAGE_LIMIT
from ome_selector.selection.outcome import OutcomeKind, evaluate
from ome_selector.selection.profiles import ModelProfile, RuntimeProfile
from ome_selector.selection.version import MAX_VERSION_LENGTH, parse_version, version_matches

#: Formatting characters that reorder what a reader sees (Unicode's bidirectional controls).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def has_control(text: str) -> bool:
    """Whether ``text`` holds a character no message may carry as it is: a control character, a line or
    paragraph separator, or a bidirectional control."""
    return any(
        unicodedata.category(character) in ("Cc", "Zl", "Zp") or character in BIDI_CONTROLS
        for character in text
    )


@contextmanager
def recording(
    module: ModuleType | type, name: str, measure: Callable[..., int] = lambda *a: 1
) -> Iterator[list[int]]:
    """Replace ``module.name`` (a function, or a method of a class) by a wrapper that records
    ``measure(*args)`` for every call."""
    original = getattr(module, name)
    calls: list[int] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(measure(*args))
        return original(*args, **kwargs)

    setattr(module, name, wrapper)
    try:
        yield calls
    finally:
        setattr(module, name, original)


# --- control characters (SPEC §7 v3) ------------------------------------------------------------------------


def test_a_value_with_control_characters_is_quoted_and_escaped() -> None:
    assert messages.shown("4B\n") == '"4B\\n"'
    assert messages.shown("a\tb\r\x00\x1b\x7f\x85") == '"a\\tb\\r\\x00\\x1b\\x7f\\x85"'
    assert messages.shown("4B") == "4B"
    assert messages.shown("naïve 模型\u00a0x") == "naïve 模型\u00a0x"  # not control characters: as written


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4B\u2028x", '"4B\\u2028x"'),  # line separator: a terminal starts a new line there
        ("4B\u2029", '"4B\\u2029"'),  # paragraph separator
        ("evil\u202etxt.exe", '"evil\\u202etxt.exe"'),  # right-to-left override: shown reversed otherwise
        ("\u2066a\u2069\u200e\u200f\u061c", '"\\u2066a\\u2069\\u200e\\u200f\\u061c"'),
        ("\u200b\u00ad", "\u200b\u00ad"),  # zero-width space and soft hyphen reorder nothing: as written
    ],
)
def test_separators_and_bidirectional_controls_are_escaped(value: str, expected: str) -> None:
    assert messages.shown(value) == expected


def test_warnings_escape_the_value_in_its_quotes() -> None:
    assert messages.not_a_parameter_count_warning("spec.modelParameterSize", "4B\n", "4B") == (
        'spec.modelParameterSize "4B\\n" is not a parameter count and reads as 0; '
        "write a number with an optional M, B or T suffix, such as 4B"
    )
    assert messages.unknown_operator_warning("x.operator", "Eq\x1b[31m") == (
        'x.operator "Eq\\x1b[31m" is not a known operator, so this entry matches no versioned model'
    )


@given(st.text())
def test_escaping_leaves_no_control_character_and_keeps_clean_text(value: str) -> None:
    text = messages.shown(value)
    assert not has_control(text)
    if not has_control(value):
        assert text == value
    else:
        assert text.startswith('"')
        assert text.endswith('"')


VALUE_BUILDERS: list[Callable[[str], str]] = [
    lambda v: messages.runtime_selected("ClusterServingRuntime", v, 3),
    lambda v: messages.runtime_specified("ServingRuntime", v),
    lambda v: messages.runtime_specified_unsupported("ServingRuntime", v, v, "r"),
    lambda v: messages.advisory(v, v, "r"),
    lambda v: messages.runtime_disabled(True, v),
    lambda v: messages.runtime_not_found(v, v),
    lambda v: messages.model_not_found(v, v),
    messages.model_disabled,
    messages.model_pending,
    messages.model_pending_reason,
    messages.autoselect_disabled_reason,
    lambda v: messages.size_outside_reason(v, "[1B, 2B]"),
    lambda v: messages.interval_text(v, v) or "",
    lambda v: messages.mismatch_reason("architecture", v, v),
    lambda v: messages.missing_requirement_reason("quantization", v),
    lambda v: messages.unrequired_value_reason("framework", v),
    messages.unknown_version_operator_reason,
    messages.component_missing_reason,
    lambda v: messages.component_mismatch_reason(v, "type", v, v),
    messages.additional_component_missing_reason,
    lambda v: messages.runtime_entry(v, v, "r"),
    lambda v: messages.not_a_parameter_count_warning("p", v, v),
    lambda v: messages.min_above_max_warning(v, v),
    lambda v: messages.unknown_operator_warning("p", v),
    lambda v: messages.format_label(
        v, format_version=v, architecture=v, quantization=v, framework_name=v, framework_version=v
    ),
    lambda v: messages.no_runtime_message(
        model=v, namespaced_count=1, cluster_count=0, entries=[], other_formats=1, isvc=v, namespace=v
    ),
    lambda v: messages.no_runtime_message(
        model=v,
        namespaced_count=1,
        cluster_count=400,
        entries=["x" * 600] * 3,
        other_formats=0,
        isvc=v,
        namespace=v,
    ),
]


@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.sampled_from(["4B\n", "\x00", "a\x85b"])
)
def test_no_message_or_warning_carries_a_control_character(value: str) -> None:
    for build in VALUE_BUILDERS:
        assert not has_control(build(value))


def test_selection_texts_escape_values_from_objects() -> None:
    bad = "x\ny"
    m = model("m\r", size="4B\n", arch=bad, version="1.0")
    c = catalog(
        m,
        runtime("sized", entry(arch=bad, version="1.0"), min="1B", max="9B\t"),
        runtime("arch", entry(arch="other\x1b", version="1.0")),
        runtime("op", entry(arch=bad, version="1.0", operator="Eq\n")),
    )
    outcome = evaluate(c, isvc(model_name="m\r", name="svc\x00"))
    assert outcome is not None
    assert outcome.kind is OutcomeKind.NO_RUNTIME
    assert not has_control(outcome.message)
    assert '"4B\\n" is outside supported range [1B, "9B\\t"]' in outcome.message
    assert "unknown version operator 'Eq\\n'" in outcome.message
    for verdict in explain(c, m, NS).verdicts:
        assert not has_control(verdict.reason)
        assert not has_control(verdict.range_text or "")
    named = evaluate(c, isvc(model_name="m\r", runtime_name="arch"))
    assert named is not None
    assert not has_control(named.message)
    assert not has_control(named.advisory or "")


# --- versions: a long string is rejected on its length ------------------------------------------------------


def _longest(*strings: str) -> int:
    return max(map(len, strings))


@given(st.text(alphabet="v0123456789.-+a", min_size=MAX_VERSION_LENGTH + 1, max_size=5000))
def test_versions_longer_than_the_limit_are_never_parsed(text: str) -> None:
    with recording(version, "_parse", len) as parsed, recording(version, "_matches", _longest) as compared:
        assert parse_version(text) is None
        assert not version_matches(text, "Equal", text)
        assert not version_matches("1.0.0", "GreaterThanOrEqual", text)
    # Neither parsed nor kept as a cache key.
    assert parsed == []
    assert compared == []


def test_a_version_at_the_limit_still_parses() -> None:
    text = "1.0.0-" + "a" * (MAX_VERSION_LENGTH - 6)
    assert len(text) == MAX_VERSION_LENGTH
    assert parse_version(text) is not None
    assert parse_version(text + "a") is None


# --- messages are built only as far as they are shown -------------------------------------------------------


def test_the_no_runtime_message_pulls_only_the_entries_it_can_hold() -> None:
    pulled = 0

    def endless() -> Iterator[str]:
        nonlocal pulled
        for index in itertools.count():
            pulled += 1
            yield f"rt-{index} (runtime is disabled)"

    message = messages.no_runtime_message(
        model="m",
        namespaced_count=0,
        cluster_count=10**9,
        entries=endless(),
        other_formats=0,
        isvc="svc",
        namespace=NS,
    )
    assert len(message) <= MESSAGE_LIMIT
    shortest_entry = len("rt-0 (runtime is disabled)")
    assert pulled <= MESSAGE_LIMIT // shortest_entry + 1


HUGE = 1_000_000


def test_evaluating_huge_values_looks_at_a_bounded_part_of_them() -> None:
    # A model whose values are a megabyte each, and runtimes of its format that each miss at a different step
    # on such values: the verdict escapes and writes only what the 1,024-character message can show.
    big = "A" * HUGE + "\n"
    m = model("m", size="9" * HUGE, arch=big, quant=big, framework=big)
    c = catalog(
        m,
        *[runtime(f"arch-{i}", entry(arch="B" * HUGE, quant=big, framework=big)) for i in range(20)],
        runtime("sized", entry(arch=big, quant=big, framework=big), min="1B", max="5" * HUGE),
        runtime("named", *[entry(arch=str(i)) for i in range(2_000)]),
    )
    service = isvc(model_name="m", name="s" * HUGE)
    with (
        recording(messages, "escape_controls", len) as escaped,
        recording(matcher.FormatReasons, "entry") as reasons,
    ):
        outcome = evaluate(c, service)
        named = evaluate(c, isvc(model_name="m", runtime_name="named"))
    assert outcome is not None
    assert named is not None
    assert outcome.kind is OutcomeKind.NO_RUNTIME
    assert named.kind is OutcomeKind.RUNTIME_SPECIFIED_UNSUPPORTED
    assert len(outcome.message) <= MESSAGE_LIMIT
    assert len(named.message) <= MESSAGE_LIMIT
    # Each escaped value is cut to the limit first, and only a few values are shown at all.
    assert max(escaped) <= MESSAGE_LIMIT
    assert sum(escaped) <= 40 * MESSAGE_LIMIT
    # Of the 2,000 entries of "named" and the 20 runtimes' entries, only those the texts can hold are written.
    assert len(reasons) <= 10


def test_matching_looks_only_at_entries_that_can_match() -> None:
    # 20,000 entries of the model's format: none has the model's architecture, so none is compared; 100 do,
    # with versions, and only those are compared, up to the first that matches.
    entries = [entry(arch=f"x{i}", version="1.0.0") for i in range(20_000)]
    entries += [entry(arch="A", version=f"2.0.{i}") for i in range(100)]
    entries += [entry(arch="A", version="1.0.0")]
    profile = RuntimeProfile.of(runtime("rt", *entries))
    m = ModelProfile.of(model(arch="A", version="1.0.0"))
    with recording(matcher, "_compiled_entry_matches") as compared:
        result = check(profile, m)
    assert result.entry == 20_100
    assert len(compared) == 101


@settings(max_examples=50, deadline=None)
@example(value="a" * 60 + "\n", other="", limit=50, prefix=0)  # a control character beyond the cut
@given(
    st.text(min_size=1, max_size=300),
    st.text(max_size=300),
    st.integers(min_value=1, max_value=400),
    st.integers(min_value=0, max_value=50),
)
def test_a_reason_within_a_limit_reads_the_same_as_the_whole_reason_cut(
    value: str, other: str, limit: int, prefix: int
) -> None:
    m = model(size=value, arch=value, version="1.0", framework=value)
    for rt in (
        runtime("a", entry(arch=other), entry(arch=value, version=other, operator=other, framework=value)),
        runtime("b", entry(arch=value, version="1.0", framework=value), min=other),
        runtime("c", entry(arch=value, version="1.0", framework=value, auto_select=False)),
        runtime("d", entry(arch=value, version="1.0", framework=value), min="1B", max=other),
    ):
        result = check(RuntimeProfile.of(rt), ModelProfile.of(m))
        whole, within = "p" * prefix + result.reason, "p" * prefix + result.reason_within(limit)
        assert messages.truncate(within, limit) == messages.truncate(whole, limit)


hostile = st.text(min_size=1, max_size=30) | st.builds(
    lambda n, tail: "v" * n + tail, st.integers(200, 3000), st.sampled_from(["", "\n", "\x1b[0m"])
)


@settings(max_examples=60, deadline=None)
@given(
    hostile, hostile, st.lists(st.tuples(hostile, st.sampled_from(["arch", "size", "manual"])), max_size=6)
)
def test_the_bounded_no_runtime_message_equals_the_one_from_whole_reasons(
    name: str, arch: str, misses: list[tuple[str, str]]
) -> None:
    m = model("m" + name, size="3B", arch=arch)
    runtimes = []
    for index, (value, how) in enumerate(misses):
        if how == "arch":
            runtimes.append(runtime(f"r{index}", entry(arch=value)))
        elif how == "size":
            runtimes.append(runtime(f"r{index}", entry(arch=arch), min="1B", max=value))
        else:
            runtimes.append(runtime(f"r{index}", entry(arch=arch, auto_select=False), namespace=NS))
    c = catalog(m, *runtimes)
    service = isvc(model_name=m.name, name="svc" + name)
    outcome = evaluate(c, service)
    assert outcome is not None
    if outcome.kind is OutcomeKind.NO_RUNTIME:
        assert outcome.message == no_runtime_message_from(explain(c, m, NS), service)
        assert not has_control(outcome.message)
