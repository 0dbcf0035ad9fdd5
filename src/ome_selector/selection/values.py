"""Values that OME reads as something else: one rule set for admission (SPEC §7) and lint (SPEC §11).

A size that is not a parameter count reads as 0 (§2), a range whose ``min`` is above its ``max`` rejects every
model with a size, and an unknown version operator makes its entry match no versioned model. The admission
webhook reads these from the raw request body, lint from the typed catalog; both hand this module the same
primitives and get the same problems back, each naming the field(s) it is about. Only the texts differ (a
warning on one object, a finding in a catalog), and both live in :mod:`ome_selector.selection.messages`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum

from ome_selector.api.resources import KNOWN_OPERATORS
from ome_selector.selection.quantity import try_parse_parameter_count

__all__ = [
    "DEFAULT_SUGGESTION",
    "FieldPath",
    "OperatorField",
    "ValueProblem",
    "ValueRule",
    "model_value_problems",
    "runtime_value_problems",
    "suggestion_for",
]

#: The suggestion for a size that is not a count even upper-cased.
DEFAULT_SUGGESTION = "4B"

FieldPath = tuple[str | int, ...]
#: An operator as a runtime declares it: the entry's index, the selector (``modelFormat`` or
#: ``modelFramework``) and the operator's value.
OperatorField = tuple[int, str, str]

_RANGE = ("spec", "modelSizeRange")


class ValueRule(Enum):
    NOT_A_COUNT = "not a parameter count"  # lint SIZE001
    MIN_ABOVE_MAX = "min above max"  # lint SIZE002
    UNKNOWN_OPERATOR = "unknown operator"  # lint OPER001


@dataclass(frozen=True, slots=True)
class ValueProblem:
    """One problem: its rule, the field(s) it is about (the first is where it is shown) and the value(s) as
    written (a size; ``min`` and ``max``; an operator)."""

    rule: ValueRule
    fields: tuple[FieldPath, ...]
    values: tuple[str, ...]


def suggestion_for(value: str) -> str:
    """The value upper-cased if that is a parameter count (``4b`` → ``4B``), else
    :data:`DEFAULT_SUGGESTION`."""
    upper = value.upper()
    return upper if try_parse_parameter_count(upper) is not None else DEFAULT_SUGGESTION


def model_value_problems(size: str | None) -> Iterator[ValueProblem]:
    """The problem of a model's ``modelParameterSize``, if any. An empty size is "no size" (SPEC §2), not a
    value that reads as 0."""
    if size and try_parse_parameter_count(size) is None:
        yield ValueProblem(ValueRule.NOT_A_COUNT, (("spec", "modelParameterSize"),), (size,))


def runtime_value_problems(
    minimum: str | None, maximum: str | None, operators: Iterable[OperatorField]
) -> Iterator[ValueProblem]:
    """The problems of a runtime's ``modelSizeRange`` bounds (None: no bound; an empty bound is present and
    reads as 0) and of its entries' operators, in field order. ``min`` above ``max`` needs both to be counts:
    a bound that does not parse has its own problem."""
    counts = {}
    for bound, value in (("min", minimum), ("max", maximum)):
        if value is None:
            continue
        count = try_parse_parameter_count(value)
        if count is None:
            yield ValueProblem(ValueRule.NOT_A_COUNT, ((*_RANGE, bound),), (value,))
        else:
            counts[bound] = count
    if minimum is not None and maximum is not None and len(counts) == 2 and counts["min"] > counts["max"]:
        yield ValueProblem(ValueRule.MIN_ABOVE_MAX, ((*_RANGE, "min"), (*_RANGE, "max")), (minimum, maximum))
    for index, part, operator in operators:
        if operator not in KNOWN_OPERATORS:
            path: FieldPath = ("spec", "supportedModelFormats", index, part, "operator")
            yield ValueProblem(ValueRule.UNKNOWN_OPERATOR, (path,), (operator,))
