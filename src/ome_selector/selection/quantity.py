"""Parameter counts: reading and writing ``modelParameterSize`` and ``modelSizeRange`` values (SPEC §2).

Reading accepts exactly ``([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([MBT])?`` (ASCII digits, no sign, no exponent,
nothing around it) of at most 64 characters and gives the exact value as a :class:`~fractions.Fraction`.
Anything else reads as 0 and never raises. A longer value is rejected on its length alone, so reading costs
at most 64 characters of work whatever the input (SPEC §2 v3: a huge value must not stall the event loop).

Writing picks ``T``/``B``/``M`` or a bare integer and rounds half away from zero to two decimals.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "MAX_LENGTH",
    "MULTIPLIERS",
    "format_parameter_count",
    "parse_parameter_count",
    "try_parse_parameter_count",
]

#: Suffix → multiplier.
MULTIPLIERS: dict[str, int] = {"M": 10**6, "B": 10**9, "T": 10**12}

_GRAMMAR = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<suffix>[MBT])?")

#: A longer value is not a parameter count (SPEC §2 v3). 64 characters are at most 10^76 parameters, far below
#: the largest double, so no value that passes this check is "too large for a double".
MAX_LENGTH = 64

_ZERO = Fraction(0)


def try_parse_parameter_count(text: str) -> Fraction | None:
    """The exact count ``text`` denotes, or None when it is not a parameter count (the webhook warns then).

    A value longer than :data:`MAX_LENGTH` is not a parameter count; it is never looked at further.
    """
    if not isinstance(text, str) or len(text) > MAX_LENGTH:
        return None
    return _parse(text)


# Runtimes repeat a few bounds ("7B", "70B") and each stored runtime reads its own; every cached key is at
# most MAX_LENGTH characters long.
@lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction | None:
    match = _GRAMMAR.fullmatch(text)
    if match is None:
        return None
    # Decimal reads the digits exactly; the grammar already excluded everything Decimal would accept beyond
    # it (signs, exponents, inf, nan, underscores, Unicode digits).
    value = Fraction(Decimal(match["number"]))
    suffix = match["suffix"]
    if suffix is not None:
        value *= MULTIPLIERS[suffix]
    return value


def parse_parameter_count(text: str) -> Fraction:
    """The exact count ``text`` denotes; 0 for anything that is not a parameter count (never raises)."""
    value = try_parse_parameter_count(text)
    return _ZERO if value is None else value


def _round_hundredths(value: Fraction) -> int:
    """``value`` (>= 0) rounded half away from zero to 2 decimals, as a number of hundredths."""
    return math.floor(value * 100 + Fraction(1, 2))


def _hundredths_text(hundredths: int) -> str:
    whole, cents = divmod(hundredths, 100)
    return f"{whole}.{cents:02d}".rstrip("0").rstrip(".")


_SUFFIXES: tuple[tuple[str, int], ...] = (("T", 10**12), ("B", 10**9), ("M", 10**6))


def format_parameter_count(count: int | Fraction) -> str:
    """Write ``count`` as SPEC §2 does: ``3.21B``, ``1.5B``, ``685B``, ``1T``, ``1.01M``, ``350000``.

    The suffix is ``T`` for >= 1e12, ``B`` for >= 1e9, ``M`` for >= 1e6, else the bare integer; the mantissa
    is divided exactly and rounded half away from zero to 2 decimals, trailing zeros and point dropped; when
    rounding reaches 1000 the next suffix is used. Reading the text back gives an integer count within 0.5%.

    Raises ValueError for a negative count (a parameter count never is).
    """
    value = Fraction(count)
    if value < 0:
        raise ValueError(f"a parameter count cannot be negative: {count}")
    for index, (suffix, multiplier) in enumerate(_SUFFIXES):
        if value >= multiplier:
            hundredths = _round_hundredths(value / multiplier)
            if hundredths >= 100_000 and index > 0:
                bigger_suffix, bigger = _SUFFIXES[index - 1]
                return _hundredths_text(_round_hundredths(value / bigger)) + bigger_suffix
            return _hundredths_text(hundredths) + suffix
    whole = math.floor(value + Fraction(1, 2))
    if whole >= 10**6:
        return "1M"
    return str(whole)
