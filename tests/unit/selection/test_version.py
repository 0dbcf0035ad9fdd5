"""Versions and operators (SPEC §9): parsing, Equal, GreaterThan(OrEqual), the precision and prefix guard."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.selection.version import Version, compare_versions, parse_version, version_matches

PARSE = [
    ("1", Version(1, 0, 0, "", 1), "major only"),
    ("1.12", Version(1, 12, 0, "", 2), "major.minor"),
    ("0.6.0", Version(0, 6, 0, "", 3), "major.minor.patch"),
    ("v0.8.0", Version(0, 8, 0, "v", 3), "v prefix"),
    ("v1", Version(1, 0, 0, "v", 1), "v prefix, major only"),
    ("4.43.0.dev0", Version(4, 43, 0, "", 3, dev=("dev0",)), "dev part"),
    ("4.43.0.dev0.post1", Version(4, 43, 0, "", 3, dev=("dev0", "post1")), "dev part with dots"),
    ("4.51.3-SAM-HQ-preview", Version(4, 51, 3, "", 3, pre=("SAM-HQ-preview",)), "pre-release"),
    ("1.0.0-rc.1", Version(1, 0, 0, "", 3, pre=("rc", "1")), "dotted pre-release"),
    ("4.43.0+build", Version(4, 43, 0, "", 3, build=("build",)), "build"),
    ("1.0.0-rc+b.7", Version(1, 0, 0, "", 3, pre=("rc",), build=("b", "7")), "pre and build"),
    ("1.0.0+b-x", Version(1, 0, 0, "", 3, build=("b-x",)), "dash inside build"),
    ("1.0.0.dev1-rc", Version(1, 0, 0, "", 3, pre=("rc",), dev=("dev1",)), "dev before pre"),
    ("0.0.0", Version(0, 0, 0, "", 3), "zeros"),
    ("18446744073709551615", Version(2**64 - 1, 0, 0, "", 1), "largest uint64"),
]

UNPARSEABLE = [
    ("", "empty"),
    ("V1.0", "upper-case V"),
    ("v", "prefix alone"),
    ("01.0", "leading zero in major"),
    ("1.02", "leading zero in minor"),
    ("1.0.03", "leading zero in patch"),
    ("1.", "empty minor"),
    ("1..0", "empty minor between dots"),
    ("1.0.", "empty patch"),
    ("1-rc", "pre-release without patch"),
    ("1.0-rc", "pre-release after minor"),
    ("1.0.0-", "empty pre-release"),
    ("1.0.0+", "empty build"),
    ("1.0.0.", "empty dev"),
    ("1.0.0-rc..1", "empty pre-release identifier"),
    ("a.b.c", "letters"),
    ("١.٠", "Arabic-Indic digits"),
    ("１.0", "full-width digit"),
    ("+1.0.0", "sign"),
    (" 1.0.0", "space"),
    ("18446744073709551616", "beyond uint64"),
    ("9" * 5000, "a very long number"),
]


@pytest.mark.parametrize(("text", "expected"), [(t, v) for t, v, _ in PARSE], ids=[i for *_, i in PARSE])
def test_parses_like_upstream(text: str, expected: Version) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", [t for t, _ in UNPARSEABLE], ids=[i for _, i in UNPARSEABLE])
def test_unparseable_versions(text: str) -> None:
    assert parse_version(text) is None


# (runtime version, operator, model version, matches, why). Rows marked "guard" fail without the precision and
# prefix guard of GreaterThan/GreaterThanOrEqual: the plain comparison of the numbers would say yes.
MATCHES = [
    # Equal: numbers and identifiers; precision and prefix ignored
    ("1.8.0", "Equal", "1.8.0", True, "equal"),
    ("1.9.0", "Equal", "1.8.0", False, "different minor"),
    ("1", "Equal", "1.0", True, "Equal ignores precision: 1 = 1.0"),
    ("1", "Equal", "v1.0.0", True, "Equal ignores precision and prefix: 1 = v1.0.0"),
    ("v1.0", "Equal", "1", True, "Equal ignores the prefix"),
    ("1.8.0-alpha", "Equal", "1.8.0-alpha", True, "equal pre-release"),
    ("1.8.0-beta", "Equal", "1.8.0-alpha", False, "different pre-release"),
    ("1.8.0+20240708", "Equal", "1.8.0+20240707", False, "different build"),
    ("4.45.0.dev0", "Equal", "4.45.0.dev0", True, "equal dev"),
    ("4.45.0.dev0", "Equal", "4.45.0", False, "dev part against none"),
    # GreaterThan / GreaterThanOrEqual, same precision and prefix
    ("1.8.0", "GreaterThan", "1.7.0", True, "runtime above model"),
    ("1.7.0", "GreaterThan", "1.7.0", False, "GreaterThan is strict"),
    ("1.7.0", "GreaterThanOrEqual", "1.7.0", True, "GreaterThanOrEqual includes equal"),
    ("1.6.0", "GreaterThanOrEqual", "1.7.0", False, "runtime below model"),
    ("2", "GreaterThan", "1", True, "precision 1 on both sides"),
    ("v0.9.0", "GreaterThan", "v0.8.0", True, "v prefix on both sides"),
    ("1.10.0", "GreaterThan", "1.9.0", True, "numeric, not lexical, minor"),
    # the guard: these compare unequal versions whose numbers satisfy the operator
    ("2.0", "GreaterThan", "1.0.0", False, "guard: precision 2 vs 3"),
    ("2", "GreaterThanOrEqual", "1.5", False, "guard: precision 1 vs 2"),
    ("1.1.0", "GreaterThanOrEqual", "1.0", False, "guard: precision 3 vs 2"),
    ("v2.0.0", "GreaterThan", "1.0.0", False, "guard: prefix on the runtime only"),
    ("2.0.0", "GreaterThanOrEqual", "v1.0.0", False, "guard: prefix on the model only"),
    ("1.0", "GreaterThanOrEqual", "1.0.0", False, "guard: even equal numbers need equal precision"),
    # pre/build/dev force Equal
    ("1.8.0-dev", "GreaterThan", "1.8.0-dev", True, "unofficial on both sides: Equal, so equal matches"),
    ("1.9.0-dev", "GreaterThan", "1.8.0", False, "unofficial runtime forces Equal"),
    ("1.9.0", "GreaterThanOrEqual", "1.8.0.dev0", False, "unofficial model forces Equal"),
    ("1.8.0", "GreaterThanOrEqual", "1.8.0+build", False, "build part forces Equal"),
    ("1.8.0-beta", "GreaterThan", "1.8.0-alpha", False, "different pre-releases under forced Equal"),
    ("1.0.0-rc", "GreaterThan", "1-rc", False, "unparseable model version"),
    ("4.45.0.dev0", "GreaterThanOrEqual", "v4.45.0.dev0", True, "forced Equal ignores the prefix too"),
    # unparseable
    ("1.0.0", "Equal", "latest", False, "unparseable model version never matches"),
    ("latest", "Equal", "latest", False, "unparseable on both sides never matches"),
    ("", "Equal", "", False, "empty versions never match"),
    # unknown operators never match (departure from upstream, which fell back to Equal)
    ("1.0.0", "LessThan", "1.0.0", False, "unknown operator, equal versions"),
    ("1.0.0", "equal", "1.0.0", False, "operators are case-sensitive"),
    ("1.0.0", "", "1.0.0", False, "empty operator"),
    ("1.0.0-rc", "In", "1.0.0-rc", False, "unknown operator with unofficial versions"),
]


@pytest.mark.parametrize(
    ("runtime", "operator", "model", "expected"),
    [(r, o, m, e) for r, o, m, e, _ in MATCHES],
    ids=[i for *_, i in MATCHES],
)
def test_version_matches(runtime: str, operator: str, model: str, expected: bool) -> None:
    assert version_matches(runtime, operator, model) is expected


def test_guard_rows_would_match_without_the_guard() -> None:
    """The guard rows are meaningful: their numbers alone satisfy the operator."""
    for runtime, operator, model, expected, why in MATCHES:
        if not why.startswith("guard"):
            continue
        assert expected is False
        left, right = parse_version(runtime), parse_version(model)
        assert left is not None
        assert right is not None
        result = compare_versions(left, right)
        assert result > 0 if operator == "GreaterThan" else result >= 0, why


versions = st.builds(
    lambda prefix, parts: prefix + ".".join(str(p) for p in parts),
    st.sampled_from(["", "v"]),
    st.lists(st.integers(0, 30), min_size=1, max_size=3),
)


@given(versions, versions)
def test_equal_is_symmetric_and_greater_than_is_antisymmetric(a: str, b: str) -> None:
    assert version_matches(a, "Equal", b) == version_matches(b, "Equal", a)
    assert not (version_matches(a, "GreaterThan", b) and version_matches(b, "GreaterThan", a))
    if version_matches(a, "GreaterThan", b):
        assert version_matches(a, "GreaterThanOrEqual", b)


@given(st.text(max_size=30), st.text(max_size=30), st.text(max_size=20))
def test_never_raises(a: str, b: str, operator: str) -> None:
    version_matches(a, operator, b)
    parse_version(a)
