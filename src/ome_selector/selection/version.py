"""Format and framework versions and the version operators (SPEC §9, upstream OME's ``pkg/modelver``).

A version is ``[v]major[.minor[.patch]]`` with ASCII digits and no leading zeros; after the patch come
``-pre``, ``+build`` and anything after a third ``.`` (a dev part, as in ``4.43.0.dev0``). Missing parts are
0. A comparison is "runtime version OP model version". ``Equal`` ignores precision and the ``v`` prefix;
``GreaterThan`` and ``GreaterThanOrEqual`` need the same precision and prefix on both sides; a pre/build/dev
part on either side forces ``Equal``. An unparseable version never matches, and neither does an unknown
operator.

A version longer than :data:`MAX_VERSION_LENGTH` characters is not a version: it is rejected on its length, so
parsing and comparing cost at most that many characters of work whatever the input (no real version comes
near it; SPEC §8 "bounded resources").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

__all__ = [
    "EQUAL",
    "GREATER_THAN",
    "GREATER_THAN_OR_EQUAL",
    "KNOWN_OPERATORS",
    "MAX_VERSION_LENGTH",
    "Version",
    "compare_versions",
    "parse_version",
    "parsed_versions_match",
    "version_matches",
]

EQUAL = "Equal"
GREATER_THAN = "GreaterThan"
GREATER_THAN_OR_EQUAL = "GreaterThanOrEqual"
KNOWN_OPERATORS = frozenset({EQUAL, GREATER_THAN, GREATER_THAN_OR_EQUAL})

_UINT64_MAX = 2**64 - 1


@dataclass(frozen=True, slots=True)
class Version:
    """A parsed version. ``precision`` counts the dot-separated parts written (1 to 3).

    ``order`` is what comparisons compare: numbers, then the pre, build and dev identifiers as strings. Tuples
    compare exactly so (element by element, then the shorter first), at C speed.
    """

    major: int
    minor: int
    patch: int
    prefix: str
    precision: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    dev: tuple[str, ...] = ()
    order: tuple[int, int, int, tuple[str, ...], tuple[str, ...], tuple[str, ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        order = (self.major, self.minor, self.patch, self.pre, self.build, self.dev)
        object.__setattr__(self, "order", order)  # frozen: set once, here

    @property
    def unofficial(self) -> bool:
        """Whether it has a pre-release, build or dev part (which forces ``Equal`` comparisons)."""
        return bool(self.pre or self.build or self.dev)


def _numeric(text: str) -> int | None:
    # ASCII digits only: isdigit() alone would accept other scripts' digits and superscripts.
    if not text or len(text) > 20 or not (text.isascii() and text.isdigit()):
        return None
    if len(text) > 1 and text[0] == "0":
        return None
    value = int(text)
    return value if value <= _UINT64_MAX else None


def _identifiers(text: str) -> tuple[str, ...] | None:
    parts = tuple(text.split("."))
    return None if "" in parts else parts


#: A longer string is not a version (an image tag, the longest version-like label in Kubernetes, is 128).
MAX_VERSION_LENGTH = 128


def parse_version(text: str) -> Version | None:
    """Parse ``text`` as upstream OME does; None when it is not a version (such a version never matches)."""
    if not isinstance(text, str) or not text or len(text) > MAX_VERSION_LENGTH:
        return None
    return _parse(text)


# Versions repeat across runtimes and decisions; every cached key is at most MAX_VERSION_LENGTH long.
@lru_cache(maxsize=4096)
def _parse(text: str) -> Version | None:
    parts = text.split(".", 2)
    precision = len(parts)
    major_text = parts[0]
    prefix = ""
    if major_text.startswith("v"):
        prefix = "v"
        major_text = major_text[1:]
    major = _numeric(major_text)
    minor = _numeric(parts[1]) if precision > 1 else 0
    if major is None or minor is None:
        return None

    patch_text = parts[2] if precision > 2 else "0"
    build: tuple[str, ...] | None = ()
    pre: tuple[str, ...] | None = ()
    dev: tuple[str, ...] | None = ()
    patch_text, plus, build_text = patch_text.partition("+")
    if plus:
        build = _identifiers(build_text)
    patch_text, dash, pre_text = patch_text.partition("-")
    if dash:
        pre = _identifiers(pre_text)
    patch_text, dot, dev_text = patch_text.partition(".")
    if dot:
        dev = _identifiers(dev_text)
    patch = _numeric(patch_text)
    if patch is None or pre is None or build is None or dev is None:
        return None
    return Version(major, minor, patch, prefix, precision, pre, build, dev)


def compare_versions(left: Version, right: Version) -> int:
    """-1, 0 or 1 as ``left`` is below, equal to or above ``right`` (numbers, then pre, build, dev as
    strings, each list of identifiers element by element and then the shorter first).

    Precision and prefix do not take part: ``1`` = ``1.0`` = ``v1.0.0``. Go's strings.Compare orders UTF-8
    bytes, which is the order of code points, i.e. Python's str order.
    """
    a, b = left.order, right.order
    return (a > b) - (a < b)


def version_matches(runtime_version: str, operator: str, model_version: str) -> bool:
    """Whether "runtime version OPERATOR model version" holds (SPEC §9).

    Unknown operators never match, whatever the versions (upstream fell back to ``Equal``); unparseable
    versions never match; a pre/build/dev part on either side forces ``Equal``;
    ``GreaterThan``/``GreaterThanOrEqual`` need the same precision and ``v`` prefix on both sides.
    """
    if operator not in KNOWN_OPERATORS:
        return False
    if len(runtime_version) > MAX_VERSION_LENGTH or len(model_version) > MAX_VERSION_LENGTH:
        return False  # not versions; and only short strings become cache keys
    return _matches(runtime_version, operator, model_version)


@lru_cache(maxsize=8192)
def _matches(runtime_version: str, operator: str, model_version: str) -> bool:
    model = parse_version(model_version)
    runtime = parse_version(runtime_version)
    if model is None or runtime is None:
        return False
    return parsed_versions_match(runtime, operator, model)


def parsed_versions_match(runtime: Version, operator: str, model: Version) -> bool:
    """:func:`version_matches` for versions already parsed."""
    if operator not in KNOWN_OPERATORS:
        return False
    if operator == EQUAL or model.unofficial or runtime.unofficial:
        return runtime.order == model.order
    if model.precision != runtime.precision or model.prefix != runtime.prefix:
        return False
    result = compare_versions(runtime, model)
    if operator == GREATER_THAN:
        return result > 0
    return result >= 0
