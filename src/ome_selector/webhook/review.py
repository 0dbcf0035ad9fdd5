"""Reading an AdmissionReview body before anything else looks at it (SPEC §7 "Robustness").

The webhook port answers whoever reaches it, so the body is read as hostile input, in an order that keeps
every step bounded: the size (over :data:`MAX_BODY_BYTES` is 413), strict UTF-8, a count of the JSON values
taken with ``bytes.count`` before parsing (so neither the parser nor Kopf's diff of ``object`` and
``oldObject`` is ever handed more than :data:`MAX_VALUES` values), the JSON itself, its nesting (deeper than
:data:`MAX_DEPTH` is refused), and then the AdmissionReview v1 envelope: the fields Kopf and the handlers read
must be there and of the right type. Anything else is :class:`MalformedReviewError`, whose reason is one line
naming the field, never echoing a value from the request.

:func:`for_kopf` is what Kopf's dispatcher is then handed: the same review without ``metadata.uid`` in
``object`` and ``oldObject``, because Kopf keeps a memory per uid for every non-CREATE review and forgets only
what a watch event deletes — a request must not choose what the operator keeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ome_selector.api.jsonbounds import Depth, count_values_bound, nesting_depth
from ome_selector.api.resources import API_GROUP, API_VERSION, Kind

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_VALUES",
    "Depth",
    "MalformedReviewError",
    "Review",
    "count_values_bound",
    "for_kopf",
    "metric_kind",
    "nesting_depth",
    "read_review",
]

#: Bodies larger than this get 413 (SPEC §7).
MAX_BODY_BYTES = 1024 * 1024
#: Deeper nesting gets 400 (SPEC §7).
MAX_DEPTH = 100
#: More JSON values than this (an upper bound: commas and opening brackets, also inside strings) get 400.
#: The largest object of OME's catalog is about 600 values, so a review of it (object, oldObject and managed
#: fields) stays far below; 20,000 keeps parsing and Kopf's diff of the two objects within a few ms.
MAX_VALUES = 20_000

ADMISSION_API_VERSION = "admission.k8s.io/v1"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_KINDS = frozenset(kind.value for kind in Kind)
_PLURALS = {kind.plural: kind for kind in Kind}


class MalformedReviewError(ValueError):
    """Not a well-formed AdmissionReview v1: ``status`` is the HTTP status (400, 404, 408 or 413), the text
    one line."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class Review:
    """A well-formed AdmissionReview v1 request for one of the five kinds."""

    document: dict[str, Any]
    request: dict[str, Any]
    uid: str
    #: The resource's kind (``request.kind.kind``), one of the five.
    kind: Kind

    @property
    def resource(self) -> str:
        return str(self.request["resource"]["resource"])


def metric_kind(text: object) -> str:
    """The ``kind`` label for a request kind: one of the five kinds, else ``other`` (a fixed set)."""
    return text if isinstance(text, str) and text in _KINDS else "other"


def read_review(body: bytes) -> Review:
    """The review in ``body``; :class:`MalformedReviewError` for anything else (checks in the order above)."""
    if len(body) > MAX_BODY_BYTES:
        raise MalformedReviewError(f"request body is larger than {MAX_BODY_BYTES} bytes", 413)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedReviewError("request body is not valid UTF-8") from None
    if count_values_bound(body) > MAX_VALUES:
        raise MalformedReviewError(f"request body has more than {MAX_VALUES} JSON values")
    try:
        document = json.loads(text)
    except RecursionError:
        raise MalformedReviewError(f"request body nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        message = error.msg if isinstance(error, json.JSONDecodeError) else "invalid"
        raise MalformedReviewError(f"request body is not JSON: {message}") from None
    if nesting_depth(document, MAX_DEPTH + 1).depth > MAX_DEPTH:
        raise MalformedReviewError(f"request body nests deeper than {MAX_DEPTH} levels")
    return _envelope(document)


def _envelope(document: Any) -> Review:
    if not isinstance(document, dict):
        raise MalformedReviewError("request body is not a JSON object")
    if document.get("apiVersion") != ADMISSION_API_VERSION:
        raise MalformedReviewError(f"apiVersion is not {ADMISSION_API_VERSION}")
    if document.get("kind") != "AdmissionReview":
        raise MalformedReviewError("kind is not AdmissionReview")
    request = document.get("request")
    if not isinstance(request, dict):
        raise MalformedReviewError("request is missing or not an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReviewError("request.uid is missing or not a non-empty string")
    kind = _strings(request, "kind", ("group", "version", "kind"))
    resource = _strings(request, "resource", ("group", "version", "resource"))
    operation = request.get("operation")
    if not isinstance(operation, str) or operation not in OPERATIONS:
        raise MalformedReviewError("request.operation is not CREATE, UPDATE, DELETE or CONNECT")
    for name in ("subResource", "name", "namespace"):
        if request.get(name) is not None and not isinstance(request[name], str):
            raise MalformedReviewError(f"request.{name} is not a string")
    if request.get("dryRun") is not None and not isinstance(request["dryRun"], bool):
        raise MalformedReviewError("request.dryRun is not a boolean")
    for name in ("userInfo", "options", "requestKind", "requestResource"):
        if request.get(name) is not None and not isinstance(request[name], dict):
            raise MalformedReviewError(f"request.{name} is not an object")
    if request.get("userInfo") is None:
        raise MalformedReviewError("request.userInfo is missing")
    present = 0
    for name in ("object", "oldObject"):
        body = request.get(name)
        if body is None:
            continue
        if not isinstance(body, dict):
            raise MalformedReviewError(f"request.{name} is not an object")
        if body.get("metadata") is not None and not isinstance(body["metadata"], dict):
            raise MalformedReviewError(f"request.{name}.metadata is not an object")
        present += 1
    if not present:
        raise MalformedReviewError("request has neither object nor oldObject")
    plural = _PLURALS.get(resource["resource"])
    if (resource["group"], resource["version"]) != (API_GROUP, API_VERSION) or plural is None:
        raise MalformedReviewError(f"request.resource is not a resource of {API_GROUP}/{API_VERSION}")
    if kind["kind"] != plural.value:
        raise MalformedReviewError("request.kind does not match request.resource")
    return Review(document, request, uid, plural)


def _strings(request: Mapping[str, Any], name: str, keys: tuple[str, ...]) -> dict[str, str]:
    value = request.get(name)
    if not isinstance(value, dict) or not all(isinstance(value.get(key), str) for key in keys):
        raise MalformedReviewError(f"request.{name} is not an object of strings {', '.join(keys)}")
    return value


def for_kopf(review: Review) -> dict[str, Any]:
    """The review as Kopf's dispatcher gets it: ``object`` and ``oldObject`` without ``metadata.uid``."""
    request = dict(review.request)
    for name in ("object", "oldObject"):
        body = request.get(name)
        if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
            metadata = {key: value for key, value in body["metadata"].items() if key != "uid"}
            request[name] = {**body, "metadata": metadata}
    return {**review.document, "request": request}
