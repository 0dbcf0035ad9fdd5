"""Parameter counts (SPEC §2): the grammar, every listed edge, the writing rule and its examples."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.selection.quantity import (
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
    ("1" + "0" * 400, "400-digit integer: beyond a double"),
    ("1" + "0" * 400 + "B", "beyond a double with suffix"),
    ("9" * 5000, "more digits than int() reads (4300)"),
    ("1" + "0" * 300 + "T", "in range as a number, beyond a double once multiplied"),
    (
        "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792",
        "2**1024: rounds to infinity",
    ),
]


@pytest.mark.parametrize(("text", "value"), [(t, v) for t, v, _ in READ], ids=[i for *_, i in READ])
def test_reads_the_grammar_exactly(text: str, value: Fraction) -> None:
    assert parse_parameter_count(text) == value
    assert try_parse_parameter_count(text) == value


@pytest.mark.parametrize("text", [t for t, _ in READS_AS_ZERO], ids=[i for _, i in READS_AS_ZERO])
def test_anything_else_reads_as_zero(text: str) -> None:
    assert parse_parameter_count(text) == 0
    assert try_parse_parameter_count(text) is None


def test_largest_double_still_reads() -> None:
    dbl_max = (2**53 - 1) * 2**971
    assert parse_parameter_count(str(dbl_max)) == dbl_max
    # Just below the midpoint to 2**1024 a double still rounds down to DBL_MAX: finite, so it reads.
    assert parse_parameter_count(str(2**1024 - 2**970 - 1)) == 2**1024 - 2**970 - 1
    assert parse_parameter_count(str(2**1024 - 2**970)) == 0


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
