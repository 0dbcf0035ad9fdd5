"""resourceVersions compare only where they are KEP-5504 numbers; anything else stays opaque."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.kube.versions import MAX_DIGITS, body_version, version_number


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("1", 1),
        ("2048", 2048),
        ("9" * MAX_DIGITS, int("9" * MAX_DIGITS)),
        ("0", None),  # a special value in list and watch requests, never an object's
        ("012", None),  # leading zeros: not the canonical form
        ("", None),
        ("12a", None),
        ("-3", None),
        (" 3", None),
        ("١٢", None),  # digits, but not ASCII ones
        ("9" * (MAX_DIGITS + 1), None),
        (12, None),  # not a string
        (None, None),
    ],
)
def test_version_number(value: object, number: int | None) -> None:
    assert version_number(value) == number


def test_body_version_reads_the_metadata_and_tolerates_its_absence() -> None:
    assert body_version({"metadata": {"resourceVersion": "17"}}) == 17
    assert body_version({"metadata": None}) is None
    assert body_version({}) is None


@given(st.integers(min_value=1, max_value=10**30), st.integers(min_value=1, max_value=10**30))
def test_numbers_order_as_the_versions_they_are(a: int, b: int) -> None:
    assert (version_number(str(a)) or 0) < (version_number(str(b)) or 0) or a >= b
