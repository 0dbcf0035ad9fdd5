"""A metadata-only listing kept undecoded: where its items begin, and what its digest covers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ome_selector.api.resources import API_GROUP_VERSION, Kind
from ome_selector.kube.objects import Listing, _list_parts


def _page(resource_version: str, items: list[dict[str, Any]], token: str | None = None) -> bytes:
    """A list page laid out as the apiserver writes it (compact JSON, its fields in this order)."""
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if token is not None:
        metadata["continue"] = token
    page: dict[str, Any] = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1"}
    page["metadata"] = metadata
    page["items"] = items
    return json.dumps(page, separators=(",", ":")).encode()


def _item(name: str, version: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version, "uid": "u", **extra}}


ITEMS = [_item("a", "5"), _item("b", "7", annotations={"note": '"items":[] ,"items":'})]


@pytest.mark.parametrize(
    ("page", "head", "items"),
    [
        pytest.param(_page("10", ITEMS), {"resourceVersion": "10"}, ITEMS, id="one page"),
        pytest.param(
            _page("11", ITEMS, "tok"), {"resourceVersion": "11", "continue": "tok"}, ITEMS, id="pages follow"
        ),
        pytest.param(_page("12", []), {"resourceVersion": "12"}, [], id="empty"),
    ],
)
def test_the_list_fields_are_read_and_the_items_kept_as_bytes(
    page: bytes, head: dict[str, Any], items: list[dict[str, Any]]
) -> None:
    fields, rest = _list_parts(page)
    assert fields["metadata"] == head
    assert rest.startswith(b',"items":')
    assert json.loads(b"{" + rest[1:]) == {"items": items}


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(b'{"items":[],"metadata":{"resourceVersion":"3"}}', id="items first"),
        pytest.param(b'{"metadata": {"resourceVersion": "3"}, "items": []}', id="spaced"),
        pytest.param(b'{"metadata":{"resourceVersion":"3"}}', id="no items"),
    ],
)
def test_a_page_laid_out_otherwise_is_decoded_whole_and_counts_whole(page: bytes) -> None:
    fields, rest = _list_parts(page)
    assert fields["metadata"] == {"resourceVersion": "3"}
    assert rest == page


def test_a_page_that_is_not_a_list_is_refused() -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        _list_parts(b"[1, 2]")
    cut_short = b'{"metadata":{},"items":[{"metadata":'
    assert _list_parts(cut_short)[1] == b',"items":[{"metadata":'  # its digest matches no whole page
    with pytest.raises(json.JSONDecodeError):
        Listing(Kind.SERVING_RUNTIME, b"", (cut_short,)).bodies()


def test_the_bodies_name_each_object_and_its_version_only() -> None:
    listing = Listing(Kind.SERVING_RUNTIME, b"", (_page("10", ITEMS[:1], "tok"), _page("10", ITEMS[1:])))
    assert listing.bodies() == [
        {
            "apiVersion": API_GROUP_VERSION,
            "kind": "ServingRuntime",
            "metadata": {"name": name, "namespace": "ns", "uid": "u", "resourceVersion": version},
        }
        for name, version in (("a", "5"), ("b", "7"))
    ]
