"""Parameter counts (SPEC §2): the grammar, every listed edge, the writing rule and its examples."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.selection import quantity
from ome_selector.selection.quantity import (
    MAX_LENGTH,
    format_parameter_count,
    parse_parameter_count,
    try_parse_parameter_count,
)

F = Fraction

READ = [
    ("3.21B", F(3_210_000_000), "decimal with B"),
    ("2B", F(2 * 10**9), "integer with B"),
    ("500M", F(500_000_000), "M"),
    ("1.5T", F(1_500_000_000_000), "T"),
    ("999", F(999), "no suffix"),
    ("0.5B", F(500_000_000), "0.5B equals 500M"),
    ("1500M", F(1_500_000_000), "1500M"),
    ("7.", F(7), "trailing point"),
    ("7.B", F(7 * 10**9), "trailing point with suffix"),
    (".5B", F(500_000_000), "leading point"),
    ("007B", F(7 * 10**9), "leading zeros"),
    ("0", F(0), "zero"),
    ("0.000001T", F(1_000_000), "small fraction of T"),
    ("1.23456789B", F(1_234_567_890), "more decimals than a count needs"),
    ("0.1", F(1, 10), "exact tenth (a float would not be)"),
]

READS_AS_ZERO = [
    ("4b", "lower-case b"),
    ("2b", "lower-case b (min: 2b sets no lower limit)"),
    ("4m", "lower-case m"),
    ("1t", "lower-case t"),
    ("4B\n", "trailing newline"),
    ("\n4B", "leading newline"),
    (" 4B", "leading space"),
    ("4B ", "trailing space"),
    ("4 B", "space before the suffix"),
    ("", "empty string"),
    (".", "a lone point"),
    ("B", "suffix alone"),
    ("+5", "plus sign"),
    ("-5", "minus sign"),
    ("-5B", "negative with suffix"),
    ("1e9", "exponent"),
    ("1E9", "upper-case exponent"),
    ("1e9B", "exponent with suffix"),
    ("4K", "K suffix"),
    ("4KB", "two letters"),
    ("4BB", "suffix twice"),
    ("inf", "inf"),
    ("Inf", "Inf"),
    ("NaN", "NaN"),
    ("infinity", "infinity"),
    ("0x10", "hex"),
    ("1_000", "underscore"),
    ("1,000", "comma"),
    ("١٢B", "Arabic-Indic digits"),
    ("۴B", "extended Arabic-Indic digit"),
    ("４B", "full-width digit"),
    ("4Ｂ", "full-width suffix"),
    ("1" + "0" * 64, "65 digits: longer than 64 characters"),
    ("1" * 63 + "B" + " ", "64 characters of a count and a space"),
    ("9" * 5000, "5,000 digits"),
    ("0" * 1_000_000 + "1B", "a million leading zeros"),
]


@pytest.mark.parametrize(("text", "value"), [(t, v) for t, v, _ in READ], ids=[i for *_, i in READ])
def test_reads_the_grammar_exactly(text: str, value: Fraction) -> None:
    assert parse_parameter_count(text) == value
    assert try_parse_parameter_count(text) == value


@pytest.mark.parametrize("text", [t for t, _ in READS_AS_ZERO], ids=[i for _, i in READS_AS_ZERO])
def test_anything_else_reads_as_zero(text: str) -> None:
    assert parse_parameter_count(text) == 0
    assert try_parse_parameter_count(text) is None


def test_sixty_four_characters_still_read() -> None:
    assert MAX_LENGTH == 64
    assert parse_parameter_count("9" * 63 + "T") == (10**63 - 1) * 10**12
    assert parse_parameter_count("0" * 62 + "1B") == 10**9
    assert parse_parameter_count("9" * 65) == 0


def test_non_strings_read_as_zero() -> None:
    assert parse_parameter_count(7) == 0  # type: ignore[arg-type]
    assert parse_parameter_count(None) == 0  # type: ignore[arg-type]


def test_comparisons_are_on_values() -> None:
    assert parse_parameter_count("0.5B") == parse_parameter_count("500M")
    assert parse_parameter_count("1500M") >= parse_parameter_count("1B")
    assert parse_parameter_count("0.001T") == parse_parameter_count("1B")


WRITE = [
    (3_212_749_824, "3.21B", "SPEC example 3.21B"),
    (1_500_000_000, "1.5B", "SPEC example 1.5B"),
    (685_000_000_000, "685B", "SPEC example 685B"),
    (999_999_999_999, "1T", "rounding reaches 1000B: next suffix"),
    (1_005_000, "1.01M", "half away from zero (a float would give 1M)"),
    (22_713_216, "22.71M", "SPEC example 22.71M"),
    (350_000, "350000", "below 1e6: bare integer"),
    (999_999, "999999", "largest bare integer"),
    (1_000_000, "1M", "exactly 1e6"),
    (999_995_000, "1B", "999.995M rounds to 1000M: next suffix"),
    (999_994_999, "999.99M", "just below the carry"),
    (10**9, "1B", "exactly 1e9"),
    (10**12, "1T", "exactly 1e12"),
    (1_234_000_000_000_000, "1234T", "T has no next suffix"),
    (999_995 * 10**9, "1000T", "a carry on T stays T"),
    (7_241_732_096, "7.24B", "a real model"),
    (70_553_706_496, "70.55B", "another"),
    (0, "0", "zero"),
    (F(999_999_6, 10), "1M", "fraction rounding to 1e6"),
    (F(1, 2), "1", "half rounds away from zero"),
    (F(3, 2) * 10**9, "1.5B", "fraction input"),
]


@pytest.mark.parametrize(("count", "text"), [(c, t) for c, t, _ in WRITE], ids=[i for *_, i in WRITE])
def test_writes_as_spec_says(count: int | Fraction, text: str) -> None:
    assert format_parameter_count(count) == text


def test_writing_a_negative_count_is_an_error() -> None:
    with pytest.raises(ValueError, match="negative"):
        format_parameter_count(-1)


@given(st.text())
def test_reading_never_raises(text: str) -> None:
    value = parse_parameter_count(text)
    assert value >= 0


@given(st.from_regex(r"([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})[MBT]?", fullmatch=True))
def test_every_grammatical_value_reads_exactly(text: str) -> None:
    number = text.rstrip("MBT")
    multiplier = {"M": 10**6, "B": 10**9, "T": 10**12}.get(text[-1], 1)
    whole, _, decimals = number.partition(".")
    expected = (
        F(int(whole or "0")) + (F(int(decimals), 10 ** len(decimals)) if decimals else 0)
    ) * multiplier
    assert parse_parameter_count(text) == expected


@given(st.integers(min_value=1, max_value=10**20))
def test_writing_then_reading_stays_within_half_a_percent(count: int) -> None:
    text = format_parameter_count(count)
    back = parse_parameter_count(text)
    assert back > 0
    assert abs(back - count) <= F(5, 1000) * count


@given(st.fractions(min_value=10**6, max_value=10**18))
def test_writing_fractions_then_reading_stays_within_half_a_percent(count: Fraction) -> None:
    back = parse_parameter_count(format_parameter_count(count))
    assert abs(back - count) <= F(5, 1000) * count


@given(st.integers(min_value=0, max_value=10**20))
def test_written_counts_are_canonical(count: int) -> None:
    text = format_parameter_count(count)
    assert try_parse_parameter_count(text) is not None
    mantissa = text.rstrip("MBT")
    assert not mantissa.endswith(".")
    assert "." not in mantissa or not mantissa.endswith("0")
    if text[-1] in "MB":
        assert float(mantissa) < 1000


# --- bounded work (SPEC §2 v3): a huge value is rejected on its length, never parsed ----------------------


class _CountingGrammar:
    """Stands in for the grammar and records how many characters each match was handed."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.lengths: list[int] = []

    def fullmatch(self, text: str) -> Any:
        self.lengths.append(len(text))
        return self.pattern.fullmatch(text)


@given(
    st.text(alphabet="0123456789.MBT \n", min_size=65, max_size=2000)
    | st.builds(lambda n, tail: "9" * n + tail, st.integers(65, 200_000), st.sampled_from(["", "B", ".5T"]))
)
def test_values_longer_than_64_characters_are_never_parsed(text: str) -> None:
    grammar = _CountingGrammar(quantity._GRAMMAR)
    original = quantity._GRAMMAR
    quantity._GRAMMAR = grammar  # type: ignore[assignment]
    try:
        assert try_parse_parameter_count(text) is None
        assert parse_parameter_count(text) == 0
    finally:
        quantity._GRAMMAR = original
    assert grammar.lengths == []


@given(st.text(max_size=MAX_LENGTH))
def test_short_values_hand_at_most_64_characters_to_the_grammar(text: str) -> None:
    grammar = _CountingGrammar(quantity._GRAMMAR)
    original = quantity._GRAMMAR
    quantity._GRAMMAR = grammar  # type: ignore[assignment]
    try:
        parse_parameter_count(text)
    finally:
        quantity._GRAMMAR = original
    assert all(length <= MAX_LENGTH for length in grammar.lengths)
