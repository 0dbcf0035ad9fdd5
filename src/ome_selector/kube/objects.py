"""The ome.io objects and core/v1 Events through kubernetes_asyncio: list, get, patch, create events.

:meth:`Objects.list_objects` is one consistent, paged listing (SPEC §6 live mode): the first list fixes a
resourceVersion and every later list (other kinds, other pages) is read at exactly that resourceVersion, so
the snapshot is one point in time. Any error fails the whole listing: callers never act on a partial catalog.
:meth:`Objects.list_pages` is the same listing handed out a page at a time: only the page being read and the
one being consumed are alive, not every body of every kind; an error ends it before the pages still to come,
so a consumer acts on what is absent only once the iteration has finished. :meth:`Objects.stream_pages` (the
operator's startup and resync) hands out pages the same way, each kind read as a streaming list from the
apiserver's watch cache (:mod:`~ome_selector.kube.watchlist`), in pages where the apiserver refuses.
:meth:`Objects.list_versions` lists one kind metadata only (the apiserver's
``PartialObjectMetadataList``): which objects exist and at which resourceVersion, for a fraction of the bytes
and none of the specs, kept undecoded with a digest of the items, so a reader that has compared the same
items before need not decode them again (see :class:`Listing`); :meth:`Objects.list_objects_where` keeps
only the objects a predicate accepts. Both decode each page with the garbage collector paused (see
:func:`_sifted`), and ask for it uncompressed: they sit on the admission path, where compressing half a
megabyte costs the apiserver and the reader more time than the bytes take to cross a cluster's network.

Bodies are plain dicts with ``apiVersion`` and ``kind`` always filled in. Status (and a model's learned
fields, SPEC §10) is written with a JSON merge patch; the caller guards it with ``metadata.resourceVersion``,
so a concurrent writer's change makes the apiserver answer 409 (:class:`ConflictError`) instead of being
overwritten.
"""

from __future__ import annotations

import datetime
import gc
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from ome_selector.api.resources import (
    API_GROUP_VERSION,
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    Kind,
)
from ome_selector.kube.scope import custom_object_call
from ome_selector.kube.watchlist import (
    BUSY_STATUS,
    REFUSED_STATUSES,
    StreamingListRefusedError,
    initial_state,
    lines,
    watch_list_query,
)

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

__all__ = [
    "ALL_KINDS",
    "DEPENDENTS_FIRST",
    "EVENT_MESSAGE_LIMIT",
    "EVENT_NAMESPACE_OF_CLUSTER_OBJECTS",
    "METADATA_ONLY",
    "METADATA_PAGE_SIZE",
    "PAGE_SIZE",
    "ApiError",
    "ConflictError",
    "GoneError",
    "Listing",
    "Objects",
    "Page",
    "Snapshot",
    "now_rfc3339",
    "read_or_absent",
]

#: The order of :meth:`Objects.stream_pages`: each kind before the kinds it reads (an InferenceService its
#: model and runtime, a ServingRuntime a ClusterServingRuntime it inherits from).
DEPENDENTS_FIRST: tuple[Kind, ...] = (
    Kind.INFERENCE_SERVICE,
    Kind.BASE_MODEL,
    Kind.CLUSTER_BASE_MODEL,
    Kind.SERVING_RUNTIME,
    Kind.CLUSTER_SERVING_RUNTIME,
)
#: A streaming list: how long to connect, how long the events may pause, how much is read at a time.
STREAM_CONNECT_SECONDS = 10
STREAM_SILENCE_SECONDS = 60
STREAM_CHUNK_BYTES = 256 * 1024

#: Any failed API call (status, reason and body as the apiserver answered).
ApiError = ApiException

PAGE_SIZE = 500
#: Items per page of a metadata-only listing: about half a kilobyte each, so a page stays near 1 MiB.
METADATA_PAGE_SIZE = 2000
ALL_KINDS: tuple[Kind, ...] = (
    Kind.CLUSTER_SERVING_RUNTIME,
    Kind.SERVING_RUNTIME,
    Kind.CLUSTER_BASE_MODEL,
    Kind.BASE_MODEL,
    Kind.INFERENCE_SERVICE,
)
#: The apiserver's limit on an event message (longer ones are cut, not rejected).
EVENT_MESSAGE_LIMIT = 1024
#: Where the events of cluster-scoped objects go (client-go's choice).
EVENT_NAMESPACE_OF_CLUSTER_OBJECTS = "default"
_MERGE_PATCH = "application/merge-patch+json"
#: The Accept header of a metadata-only list: the apiserver answers a PartialObjectMetadataList.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#: Where a list's items begin in the apiserver's JSON (after kind, apiVersion and the list's metadata).
_ITEMS = b',"items":'


#: One page of a listing: (kind, namespace or None, the list call's keyword arguments) → the list.
_PageReader = Callable[[Kind, str | None, dict[str, Any]], Awaitable[dict[str, Any]]]
#: What a listing keeps of a page's items (of the kind given).
_Sift = Callable[[Kind, list[dict[str, Any]]], list[dict[str, Any]]]
#: The list call's keyword arguments, as query parameters.
_QUERY_NAMES = {
    "limit": "limit",
    "_continue": "continue",
    "resource_version": "resourceVersion",
    "resource_version_match": "resourceVersionMatch",
}


async def read_or_absent(read: Awaitable[_T]) -> _T | None:
    """What the read answers; None when the apiserver has no such object (404)."""
    try:
        return await read
    except ApiException as error:
        if error.status == 404:
            return None
        raise


class ConflictError(Exception):
    """The object changed since it was read (HTTP 409)."""


class GoneError(Exception):
    """The object no longer exists (HTTP 404)."""


@dataclass
class Snapshot:
    """Raw object bodies (with apiVersion and kind filled in) and the resourceVersion they were read at."""

    resource_version: str | None = None
    bodies: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Page:
    """One page of a listing: bodies of ``kind`` (apiVersion and kind filled in) and the resourceVersion of
    the listing as far as it is known (a consistent listing's, the same on every page; a streamed kind's
    comes with its last page)."""

    kind: Kind
    resource_version: str | None
    bodies: list[dict[str, Any]]


@dataclass(frozen=True)
class Listing:
    """A metadata-only listing of one kind as read (one consistent listing, however many pages): the pages
    undecoded, and a digest of their items.

    The digest leaves out what changes between two reads when no listed object does (the listing's
    resourceVersion, continue tokens): equal digests mean the same objects at the same resourceVersions.
    """

    kind: Kind
    digest: bytes
    pages: tuple[bytes, ...]

    def bodies(self) -> list[dict[str, Any]]:
        """Each listed object as a body of its kind holding only the metadata :func:`_identity` keeps."""
        return [
            _complete(item, self.kind)
            for page in self.pages
            for item in _sifted(page, self.kind, _identities).get("items") or []
        ]


def _list_parts(data: bytes) -> tuple[dict[str, Any], bytes]:
    """A list page's own fields (kind, apiVersion, metadata) and the bytes of its items, the items not
    decoded. A page not laid out as the apiserver writes lists is decoded whole, and all of it counts as
    its items (a digest of it then matches no other page: correct, only slower)."""
    at = data.find(_ITEMS)
    if at >= 0:
        try:
            head = json.loads(data[:at] + b"}")
        except ValueError:
            head = None
        if isinstance(head, dict):
            return head, data[at:]
    whole = json.loads(data)
    if not isinstance(whole, dict):
        raise ValueError("a list page that is not a JSON object")
    return whole, data


def now_rfc3339() -> str:
    """The current time as Kubernetes writes timestamps (UTC, whole seconds)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sifted(data: bytes, kind: Kind, sift: _Sift) -> dict[str, Any]:
    """The list page in ``data`` with its items sifted by ``sift``.

    Parsed and sifted with the garbage collector paused: a page holds tens of thousands of containers, which
    would otherwise survive the collections that run while they are built into the oldest generation, and
    make the next collection of it — of every object the operator holds, 0.1 s for 1,000 runtimes and
    nothing else — come sooner. Paused, what is not kept dies young.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        page: dict[str, Any] = json.loads(data)
        page["items"] = sift(kind, page.get("items") or [])
    finally:
        if collecting:
            gc.enable()
    return page


def _identities(kind: Kind, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_identity(item.get("metadata") or {}) for item in items]


#: What a metadata-only list item keeps: which object, and which version of it.
_IDENTITY = ("name", "namespace", "uid", "resourceVersion", "generation")
#: The annotations the product reads (SPEC §1: a runtime's), which the generation does not follow.
_READ_ANNOTATIONS = (INHERIT_FROM_ANNOTATION, RUNTIME_PROFILE_ANNOTATION)


def _identity(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A metadata-only list item as a body of its own kind: name, namespace, uid, resourceVersion and
    generation, and the annotations the product reads when it has any."""
    kept = {key: metadata[key] for key in _IDENTITY if key in metadata}
    annotations = metadata.get("annotations")
    if isinstance(annotations, Mapping):
        read = {key: annotations[key] for key in _READ_ANNOTATIONS if key in annotations}
        if read:
            kept["annotations"] = read
    return {"metadata": kept}


def _complete(body: dict[str, Any], kind: Kind) -> dict[str, Any]:
    body.setdefault("apiVersion", API_GROUP_VERSION)
    body.setdefault("kind", kind.value)
    return body


class Objects:
    """The API calls the product makes, over one ``ApiClient`` (which the caller owns and closes)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._api_client: Any = api_client  # untyped: call_api
        # Typed as Any: the bundled stubs omit `_content_type`, and bodies are plain dicts on purpose.
        self._custom: Any = client.CustomObjectsApi(api_client)
        self._core: Any = client.CoreV1Api(api_client)
        #: Whether :meth:`stream_pages` streams (False once the apiserver refused).
        self.streaming = True

    async def list_objects(
        self,
        *,
        namespaces: Sequence[str] | None = None,
        kinds: Iterable[Kind] = ALL_KINDS,
        label_selector: str | None = None,
    ) -> Snapshot:
        """Every object of `kinds`: namespaced kinds in `namespaces` (all when None), cluster kinds all; only
        those that match `label_selector` when given."""
        selector = {} if label_selector is None else {"label_selector": label_selector}

        async def read_page(kind: Kind, namespace: str | None, arguments: dict[str, Any]) -> dict[str, Any]:
            return await self._page(kind, namespace, arguments | selector)

        return await self._list(namespaces, kinds, read_page, PAGE_SIZE)

    def stream_pages(
        self, *, namespaces: Sequence[str] | None = None, kinds: Iterable[Kind] = DEPENDENTS_FIRST
    ) -> AsyncIterator[Page]:
        """Every object of ``kinds``, as :meth:`list_pages` hands them out, each kind read as a streaming list
        (:mod:`~ome_selector.kube.watchlist`): from the apiserver's watch cache instead of a read from etcd
        per page. Each kind is at least as new as the ones read before it, not one point in time as the pages
        of :meth:`list_pages` are (the operator's watch delivers whatever changed since); by default the
        InferenceServices come first, so what they depend on is never older than they are. Where the
        apiserver refuses to stream, that kind and every later listing of this client are read in pages; where
        a stream breaks off before its end, that kind alone, so the objects it had handed out come again (a
        consumer that stores by key, as the catalog does, sees each once)."""
        return self._streamed_pages(namespaces, kinds)

    async def _streamed_pages(
        self, namespaces: Sequence[str] | None, kinds: Iterable[Kind]
    ) -> AsyncIterator[Page]:
        version: str | None = None  # the first stream's: every later one is at least as new
        for kind in kinds:
            scopes: Sequence[str | None] = (
                [None] if not kind.namespaced or namespaces is None else list(namespaces)
            )
            for namespace in scopes:
                if self.streaming:
                    try:
                        async for page in self._stream(kind, namespace, version):
                            version = version or page.resource_version
                            yield page
                        continue
                    except StreamingListRefusedError as refused:
                        if refused.lasting:
                            logger.info("the apiserver does not stream lists (%s): listing in pages", refused)
                            self.streaming = False
                paged = [namespace] if namespace is not None else None
                async for page in self._pages(paged, [kind], self._page, PAGE_SIZE):
                    yield page

    async def _stream(self, kind: Kind, namespace: str | None, version: str | None) -> AsyncIterator[Page]:
        where = "/namespaces/{namespace}" if namespace is not None else ""
        response = await self._api_client.call_api(
            f"/apis/{API_GROUP_VERSION}{where}/{kind.plural}",
            "GET",
            path_params={"namespace": namespace} if namespace is not None else {},
            query_params=watch_list_query(version),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            # Events flow without a pause until the closing bookmark: a silent minute is a dead connection.
            _request_timeout=(STREAM_CONNECT_SECONDS, STREAM_SILENCE_SECONDS),
        )
        try:
            if response.status in REFUSED_STATUSES or response.status == BUSY_STATUS:
                why = f"HTTP {response.status} {response.reason}"
                raise StreamingListRefusedError(why, lasting=response.status != BUSY_STATUS)
            if not 200 <= response.status <= 299:
                await _checked_body(response)  # raises ApiError, as a list call would
            events = lines(response.content.iter_chunked(STREAM_CHUNK_BYTES))
            async for bodies, stream_version in initial_state(events, PAGE_SIZE):
                yield Page(kind, stream_version or version, [_complete(body, kind) for body in bodies])
        finally:
            response.close()

    def list_pages(
        self, *, namespaces: Sequence[str] | None = None, kinds: Iterable[Kind] = ALL_KINDS
    ) -> AsyncIterator[Page]:
        """As :meth:`list_objects`, a page at a time, each read when the previous one has been consumed.

        The listing is as consistent as :meth:`list_objects`' (one resourceVersion, read exactly); an error
        ends the iteration with the exception, after the pages already handed out.
        """
        return self._pages(namespaces, kinds, self._page, PAGE_SIZE)

    async def list_versions(self, kind: Kind, namespace: str | None = None) -> Listing:
        """The objects of ``kind`` (in ``namespace``; a cluster kind, or every namespace, when None) read now
        as one consistent listing, metadata only and undecoded (see :class:`Listing`)."""
        digest = hashlib.blake2b(digest_size=16)
        pages: list[bytes] = []
        token: str | None = None
        while True:
            query: list[tuple[str, Any]] = [("limit", METADATA_PAGE_SIZE)]
            if token:
                query.append(("continue", token))  # it carries the first page's resourceVersion
            data = await self._read_list(kind, namespace, query, METADATA_ONLY)
            head, items = _list_parts(data)
            digest.update(len(items).to_bytes(8, "big"))
            digest.update(items)
            pages.append(data)
            token = (head.get("metadata") or {}).get("continue")
            if not token:
                return Listing(kind, digest.digest(), tuple(pages))

    async def list_objects_where(
        self,
        keep: Callable[[dict[str, Any]], bool],
        *,
        namespaces: Sequence[str] | None = None,
        kinds: Iterable[Kind] = ALL_KINDS,
    ) -> Snapshot:
        """As :meth:`list_objects`, keeping only the bodies ``keep`` accepts (it sees every body, with
        ``apiVersion`` and ``kind`` filled in, while the collector is paused: it must be quick)."""

        def sift(kind: Kind, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [item for item in items if keep(_complete(item, kind))]

        return await self._list(namespaces, kinds, self._sifted_pages("application/json", sift), PAGE_SIZE)

    async def _list(
        self, namespaces: Sequence[str] | None, kinds: Iterable[Kind], read_page: _PageReader, limit: int
    ) -> Snapshot:
        snapshot = Snapshot()
        async for page in self._pages(namespaces, kinds, read_page, limit):
            snapshot.resource_version = page.resource_version
            snapshot.bodies.extend(page.bodies)
        return snapshot

    async def _pages(
        self, namespaces: Sequence[str] | None, kinds: Iterable[Kind], read_page: _PageReader, limit: int
    ) -> AsyncIterator[Page]:
        version: str | None = None  # the first list's: every later list and page is read at exactly it
        for kind in kinds:
            scopes: Sequence[str | None] = (
                [None] if not kind.namespaced or namespaces is None else list(namespaces)
            )
            for namespace in scopes:
                token: str | None = None
                while True:
                    arguments: dict[str, Any] = {"limit": limit}
                    if token:
                        arguments["_continue"] = token  # a continue token carries the first resourceVersion
                    elif version is not None:
                        arguments["resource_version"] = version
                        arguments["resource_version_match"] = "Exact"
                    page = await read_page(kind, namespace, arguments)
                    metadata = page.get("metadata") or {}
                    if version is None:
                        version = metadata.get("resourceVersion")
                    token = metadata.get("continue")
                    bodies = [_complete(item, kind) for item in page.get("items") or []]
                    del page  # the consumer's page is the only one alive while it works on it
                    yield Page(kind, version, bodies)
                    if not token:
                        break

    async def _page(self, kind: Kind, namespace: str | None, arguments: dict[str, Any]) -> dict[str, Any]:
        page: dict[str, Any] = await custom_object_call(self._custom, "list", kind, namespace)(**arguments)
        return page

    def _sifted_pages(self, accept: str, sift: _Sift) -> _PageReader:
        """Reads pages as ``accept`` and sifts their items with :func:`_sifted`."""

        async def read_page(kind: Kind, namespace: str | None, arguments: dict[str, Any]) -> dict[str, Any]:
            query = [(_QUERY_NAMES[key], value) for key, value in arguments.items() if key in _QUERY_NAMES]
            return _sifted(await self._read_list(kind, namespace, query, accept), kind, sift)

        return read_page

    async def _read_list(
        self, kind: Kind, namespace: str | None, query: list[tuple[str, Any]], accept: str
    ) -> bytes:
        """The body of one list call, as ``accept`` and uncompressed (see the module's docstring)."""
        # The generated list calls fix Accept and parse the body themselves, hence call_api.
        where = "/namespaces/{namespace}" if namespace is not None else ""
        response = await self._api_client.call_api(
            f"/apis/{API_GROUP_VERSION}{where}/{kind.plural}",
            "GET",
            path_params={"namespace": namespace} if namespace is not None else {},
            query_params=query,
            header_params={"Accept": accept, "Accept-Encoding": "identity"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
        )
        return await _checked_body(response)

    async def get(self, kind: Kind, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object as stored now; None when there is none (404)."""
        body = await read_or_absent(custom_object_call(self._custom, "get", kind, namespace)(name))
        return _complete(dict(body), kind) if body is not None else None

    async def patch_status(
        self, kind: Kind, namespace: str | None, name: str, patch: Mapping[str, Any], *, field_manager: str
    ) -> dict[str, Any]:
        """A merge patch of the status subresource; the object as stored afterwards.

        Raises :class:`ConflictError` when ``patch`` names an outdated ``metadata.resourceVersion`` and
        :class:`GoneError` when the object is gone.
        """
        return await self.patch(kind, namespace, name, patch, field_manager=field_manager, status=True)

    async def patch(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        *,
        field_manager: str,
        status: bool = False,
    ) -> dict[str, Any]:
        """A merge patch of the object (or, with ``status``, of its status subresource); the object as stored
        afterwards.

        Raises :class:`ConflictError` when ``patch`` names an outdated ``metadata.resourceVersion`` and
        :class:`GoneError` when the object is gone.
        """
        call = custom_object_call(self._custom, "patch", kind, namespace, status=status)
        try:
            body = await call(name, dict(patch), field_manager=field_manager, _content_type=_MERGE_PATCH)
        except ApiException as error:
            where = f"{namespace}/{name}" if namespace else name
            if error.status == 409:
                raise ConflictError(where) from error
            if error.status == 404:
                raise GoneError(where) from error
            raise
        return _complete(dict(body), kind)

    async def create_event(
        self,
        kind: Kind,
        involved: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        component: str,
        instance: str,
    ) -> None:
        """A new core/v1 Event on ``involved`` (a body of ``kind``), reported as ``component``.

        The event of a cluster-scoped object is recorded in ``default``, as client-go's recorder does
        (``kubectl describe`` finds it there).
        """
        metadata = involved.get("metadata", {})
        namespace, name = metadata.get("namespace"), metadata.get("name")
        event_namespace = namespace or EVENT_NAMESPACE_OF_CLUSTER_OBJECTS
        now = now_rfc3339()
        event = {
            "metadata": {"generateName": f"{name}.", "namespace": event_namespace},
            "involvedObject": {
                "apiVersion": API_GROUP_VERSION,
                "kind": kind.value,
                "name": name,
                "namespace": namespace,
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "type": type_,
            "reason": reason,
            "message": message[:EVENT_MESSAGE_LIMIT],
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": instance,
        }
        # The created Event is not read back into a model object: nothing uses it, and that parse cost more
        # CPU than the rest of the call.
        response = await self._core.create_namespaced_event(
            event_namespace, event, field_manager=component, _preload_content=False
        )
        await _checked_body(response)


async def _checked_body(response: Any) -> bytes:
    """The body of a response read with ``_preload_content=False``; an :class:`ApiError` for a failure, as
    the generated calls raise it."""
    data: bytes = await response.read()
    if not 200 <= response.status <= 299:
        error = ApiException(status=response.status, reason=response.reason)
        text: Any = data.decode("utf-8", "replace")  # call_api puts text there too (its stub says bytes)
        error.body, error.headers = text, response.headers
        raise error
    return data
