"""Hostile admission requests, sent straight to an operator's webhook port (the fuzz test, bench.hostile).

:class:`HostileReviews` makes request bodies of every kind the webhook port may receive from someone who is
not the apiserver: garbage bytes, JSON that is not an object, AdmissionReviews with a field missing or of the
wrong type, invalid UTF-8, deep nesting, too many values, bodies over 1 MiB, reviews of kinds that do not
exist (fresh ``kind`` strings, the old metric-label attack), and well-formed reviews of the five kinds whose
objects carry hostile values (control characters, long strings, unknown operators, fresh uids). Seeded, so a
run repeats.

:class:`WebhookClient` posts them over one kept-alive TLS connection, verifying the server with the CA of the
operator's registered configuration, as the apiserver does.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import random
import socket
import ssl
import string
import tempfile
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ome_selector.api.resources import API_GROUP, API_VERSION, Kind
from ome_selector.webhook.registration import HANDLER_IDS

PLURALS = {kind: kind.plural for kind in Kind}
ENVELOPE_FIELDS = (
    "apiVersion",
    "kind",
    "request",
    "request.uid",
    "request.kind",
    "request.kind.kind",
    "request.resource",
    "request.resource.resource",
    "request.operation",
    "request.userInfo",
    "request.object",
    "request.object.metadata",
    "request.oldObject",
    "request.dryRun",
    "request.namespace",
    "request.subResource",
)
HOSTILE_STRINGS = (
    "4B\n",
    "4B\x1b[31m",
    "\x00",
    "\u202e7B",
    "1" * 100_000,
    "9" * 65,
    "1e9",
    "NaN",
    "-1B",
    "\ud7ff" * 10,
    "x" * 5000,
    "",
)


@dataclass(frozen=True)
class Hostile:
    """One request: what it tries, where it goes, its body, and whether it is a well-formed review."""

    category: str
    path: str
    body: bytes
    well_formed: bool


def review(kind: Kind, *, operation: str = "CREATE", obj: dict[str, Any] | None = None) -> dict[str, Any]:
    """A well-formed AdmissionReview v1 of ``kind``, as the apiserver sends one."""
    namespace = "fuzz" if kind.namespaced else None
    body: dict[str, Any] = (
        obj if obj is not None else {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": kind.value}
    )
    metadata: dict[str, Any] = body.setdefault(
        "metadata", {"name": "fuzzed", **({"namespace": namespace} if namespace else {})}
    )
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": API_GROUP, "version": API_VERSION, "kind": kind.value},
        "resource": {"group": API_GROUP, "version": API_VERSION, "resource": kind.plural},
        "requestKind": {"group": API_GROUP, "version": API_VERSION, "kind": kind.value},
        "name": metadata.get("name", "fuzzed"),
        "operation": operation,
        "userInfo": {"username": "fuzzer", "groups": ["system:authenticated"]},
        "object": body,
        "oldObject": copy.deepcopy(body) if operation == "UPDATE" else None,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    if namespace:
        request["namespace"] = namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def path_of(kind: Kind) -> str:
    return f"/{HANDLER_IDS[kind]}"


class HostileReviews:
    """An endless, seeded supply of hostile requests (see the module docstring)."""

    def __init__(self, seed: int = 12) -> None:
        self._random = random.Random(seed)

    def __iter__(self) -> HostileReviews:
        return self

    def __next__(self) -> Hostile:
        maker = self._random.choices(
            [
                self._garbage,
                self._not_an_object,
                self._field_missing,
                self._field_of_another_type,
                self._invalid_utf8,
                self._deep,
                self._too_many_values,
                self._too_large,
                self._fresh_kind,
                self._unknown_path,
                self._valid,
            ],
            weights=[6, 4, 10, 14, 4, 4, 1, 0.2, 10, 3, 30],
        )[0]
        return maker()

    # --- makers ---------------------------------------------------------------------------------------------

    def _kind(self) -> Kind:
        return self._random.choice(list(Kind))

    def _string(self) -> str:
        if self._random.random() < 0.5:
            return self._random.choice(HOSTILE_STRINGS)
        alphabet = string.printable + "\u00e9\u4e2d\U0001f600\x7f\x85"
        return "".join(self._random.choice(alphabet) for _ in range(self._random.randint(0, 40)))

    def _short(self) -> str:
        """A string of at most 40 characters (many entries of long strings would make a body over 1 MiB)."""
        return self._string()[:40]

    def _value(self, depth: int = 0) -> Any:
        choice = self._random.randint(0, 7 if depth < 3 else 4)
        if choice == 0:
            return None
        if choice == 1:
            return self._random.choice([True, False])
        if choice == 2:
            return self._random.choice([0, -1, 2**63, 1.5, 1e308])
        if choice in (3, 4):
            return self._string()
        if choice in (5, 6):
            return [self._value(depth + 1) for _ in range(self._random.randint(0, 4))]
        return {self._string()[:20]: self._value(depth + 1) for _ in range(self._random.randint(0, 4))}

    def _garbage(self) -> Hostile:
        size = self._random.randint(0, 300)
        body = bytes(self._random.getrandbits(8) for _ in range(size))
        return Hostile("garbage", path_of(self._kind()), body, False)

    def _not_an_object(self) -> Hostile:
        value: Any = self._random.choice([[], [1, 2], "AdmissionReview", 7, None, True, [{"request": {}}]])
        return Hostile("not an object", path_of(self._kind()), json.dumps(value).encode(), False)

    def _set(self, document: dict[str, Any], path: str, value: Any) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[part]
        if value is _REMOVE:
            node.pop(last, None)
        else:
            node[last] = value

    def _field_missing(self) -> Hostile:
        kind = self._kind()
        document = review(kind)
        field = self._random.choice([f for f in ENVELOPE_FIELDS if f not in ("request.oldObject",)])
        self._set(document, field, _REMOVE)
        return Hostile(f"{field} missing", path_of(kind), json.dumps(document).encode(), False)

    def _field_of_another_type(self) -> Hostile:
        kind = self._kind()
        document = review(kind)
        field = self._random.choice(ENVELOPE_FIELDS)
        value = self._random.choice([[], {}, 7, True, "x", [self._string()], {"a": {"b": []}}])
        self._set(document, field, value)
        # Some replacements are still well-formed (e.g. an object for request.object): the server decides.
        return Hostile(f"{field} of another type", path_of(kind), json.dumps(document).encode(), False)

    def _invalid_utf8(self) -> Hostile:
        kind = self._kind()
        body = json.dumps(review(kind)).encode()
        cut = self._random.randint(0, len(body))
        bad = self._random.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"])
        return Hostile("invalid UTF-8", path_of(kind), body[:cut] + bad + body[cut:], False)

    def _deep(self) -> Hostile:
        kind = self._kind()
        levels = self._random.choice([101, 150, 1000, 5000, 50_000])
        opener, closer = self._random.choice([(b"[", b"]"), (b'{"a":', b"}")])
        deep = opener * levels + b"1" + closer * levels
        document = json.dumps(review(kind)).encode()
        body = document.replace(b'"dryRun": false', b'"dryRun": false, "deep": ' + deep, 1)
        return Hostile("deep nesting", path_of(kind), body, False)

    def _too_many_values(self) -> Hostile:
        kind = self._kind()
        document = review(kind)
        document["request"]["object"]["spec"] = {"x": [0] * 30_000}
        return Hostile("too many values", path_of(kind), json.dumps(document).encode(), False)

    def _too_large(self) -> Hostile:
        kind = self._kind()
        document = review(kind)
        document["request"]["object"]["spec"] = {"x": "y" * (1024 * 1024)}
        return Hostile("over 1 MiB", path_of(kind), json.dumps(document).encode(), False)

    def _fresh_kind(self) -> Hostile:
        kind = self._kind()
        document = review(kind)
        fresh = uuid.uuid4().hex * self._random.choice([1, 1, 1, 100, 1000])
        self._set(document, self._random.choice(["request.kind.kind", "request.resource.resource"]), fresh)
        return Hostile("fresh kind", path_of(kind), json.dumps(document).encode(), False)

    def _unknown_path(self) -> Hostile:
        body = json.dumps(review(self._kind())).encode()
        path = "/" + urllib.parse.quote(self._string()[:30] or "x", safe="")
        return Hostile("unknown path", path, body, False)

    def _valid(self) -> Hostile:
        kind = self._kind()
        operation = self._random.choice(["CREATE", "UPDATE"])
        return Hostile(
            f"valid {kind.value}",
            path_of(kind),
            json.dumps(review(kind, operation=operation, obj=self._object(kind))).encode(),
            True,
        )

    def _object(self, kind: Kind) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": "fuzzed", "uid": str(uuid.uuid4())}
        if kind.namespaced:
            metadata["namespace"] = "fuzz"
        if self._random.random() < 0.3:
            metadata["annotations"] = {"ome.io/accelerator-class": self._string()}
        spec: dict[str, Any]
        if kind.is_model:
            spec = {"modelFormat": {"name": self._string()}, "modelParameterSize": self._string()}
        elif kind.is_runtime:
            entries = [
                {
                    "modelFormat": {
                        "name": self._short(),
                        "operator": self._short(),
                        "version": self._short(),
                    },
                    "autoSelect": self._random.choice([True, False]),
                }
                for _ in range(self._random.choice([0, 1, 3, 20, 1500]))
            ]
            spec = {
                "supportedModelFormats": entries,
                "modelSizeRange": {"min": self._string(), "max": self._string()},
            }
        else:
            spec = {"model": {"name": self._string() or "m"}, "engine": {"minReplicas": 1}}
            if self._random.random() < 0.5:
                spec["runtime"] = {"name": self._string() or "rt"}
        if self._random.random() < 0.3:
            spec["unknown"] = self._value()
        return {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": kind.value,
            "metadata": metadata,
            "spec": spec,
        }


_REMOVE = object()


class WebhookClient:
    """POSTs to the webhook at ``url`` over one kept-alive TLS connection (re-opened when the server closes
    it), verifying the server against ``ca_pem``."""

    def __init__(self, url: str, ca_pem: bytes) -> None:
        parsed = urllib.parse.urlsplit(url)
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 443
        with tempfile.NamedTemporaryFile(suffix=".crt") as ca_file:
            Path(ca_file.name).write_bytes(ca_pem)
            self._context = ssl.create_default_context(cafile=ca_file.name)
        self._connection: http.client.HTTPSConnection | None = None

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        for attempt in range(2):
            if self._connection is None:
                self._connection = http.client.HTTPSConnection(
                    self._host, self._port, context=self._context, timeout=30
                )
            try:
                self._connection.request("POST", path, body, {"Content-Type": "application/json"})
                response = self._connection.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                self._connection.close()
                self._connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()

    def raw(self, data: bytes, *, wait: float = 5.0) -> bytes:
        """Send ``data`` as is over a TLS connection of its own (no HTTP framing) and return what comes back
        before the server closes it or ``wait`` seconds pass."""
        with (
            socket.create_connection((self._host, self._port), timeout=wait) as plain,
            self._context.wrap_socket(plain, server_hostname=self._host) as tls,
        ):
            tls.sendall(data)
            try:
                return tls.recv(65536)
            except TimeoutError:
                return b""


def webhook_address(configuration: Any) -> tuple[str, bytes]:
    """The base URL and CA bundle (PEM) of the webhook a ValidatingWebhookConfiguration (official client
    model) points at: what a :class:`WebhookClient` is made of, also in another process."""
    hook = configuration.webhooks[0]
    url = hook.client_config.url
    return url[: url.rindex("/")], base64.b64decode(hook.client_config.ca_bundle)


def client_for(configuration: Any) -> WebhookClient:
    """A client for the webhook a ValidatingWebhookConfiguration (official client model) points at."""
    return WebhookClient(*webhook_address(configuration))


def rss_bytes(pid: int) -> int:
    """The resident set size of process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def metrics_size(port: int, excluding: tuple[str, ...] = ()) -> int:
    """The size in bytes of an operator's /metrics page, less its lines that name a family ``excluding``
    begins."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        page = response.read().decode()
    kept = [line for line in page.splitlines(keepends=True) if not _names_family(line, excluding)]
    return len("".join(kept).encode())


def _names_family(line: str, prefixes: tuple[str, ...]) -> bool:
    name = line.split(" ", 3)[2] if line.startswith("# ") and line.count(" ") >= 2 else line
    return name.startswith(prefixes) if prefixes else False
