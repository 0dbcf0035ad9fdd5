"""``hf://`` models through the real ``huggingface_hub`` client, against a local stand-in for the Hub.

The stand-in (hub_standin.py) serves model folders in the Hub's URL shapes with Range support; the client
finds it through ``HF_ENDPOINT``. Every test checks what was fetched: the JSON files and the safetensors
headers, never the weights.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest
from hub_standin import COMMIT, HubStandIn, Repo, hub_standin

from harness.model_folders import (
    BERT_MINILM_CONFIG,
    LLAMA_3_2_3B,
    bert_minilm_tensors,
    decoder_tensors,
    write_json,
    write_safetensors,
    write_sharded,
)
from ome_selector.modelfiles import ModelFileError, NameVersion, WeightFile, inspect_model
from ome_selector.modelfiles.hub import HubModelRef, _status_reason, parse_hub_uri

TOKEN = "hf_test_token_123"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    """A stand-in Hub that ``HF_ENDPOINT`` points at; no token unless a test sets ``HF_TOKEN``."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no saved login
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    with hub_standin() as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        yield standin


def _bert(folder: Path) -> int:
    """A MiniLM folder; returns the header bytes of its safetensors file."""
    write_json(folder / "config.json", BERT_MINILM_CONFIG)
    return write_safetensors(folder / "model.safetensors", bert_minilm_tensors(), {"format": "pt"})


def _json_bytes(*paths: Path) -> int:
    return sum(path.stat().st_size for path in paths)


def test_single_file_model(hub: HubStandIn, tmp_path: Path) -> None:
    header_bytes = _bert(tmp_path / "minilm")
    hub.repos["sentence-transformers/all-MiniLM-L6-v2"] = Repo(tmp_path / "minilm")
    inspection = inspect_model("hf://sentence-transformers/all-MiniLM-L6-v2")
    metadata = inspection.metadata
    assert metadata.source == "hf://sentence-transformers/all-MiniLM-L6-v2"
    assert (metadata.parameter_count, metadata.model_parameter_size) == (22_713_728, "22.71M")
    assert metadata.model_format == NameVersion("safetensors", "1.0.0")
    assert metadata.framework == NameVersion("transformers", "4.8.2")
    assert metadata.files == (WeightFile("model.safetensors", 104, 22_713_728),)

    repo = "/sentence-transformers/all-MiniLM-L6-v2"
    assert [(request.path, request.range) for request in hub.requests] == [
        ("/api/models/sentence-transformers/all-MiniLM-L6-v2/revision/main", None),
        (f"{repo}/resolve/{COMMIT}/config.json", None),
        (f"{repo}/resolve/{COMMIT}/model.safetensors", "bytes=0-7"),
        (f"{repo}/resolve/{COMMIT}/model.safetensors", f"bytes=8-{header_bytes - 1}"),
    ]
    info_bytes = hub.requests[0].body_bytes
    assert hub.bytes_served == info_bytes + _json_bytes(tmp_path / "minilm" / "config.json") + header_bytes
    assert inspection.bytes_read == hub.bytes_served
    assert inspection.reads == 4
    assert hub.bytes_served < 32_000  # of a 91 MB model


@pytest.mark.parametrize("revision", ["", "@main", f"@{COMMIT}"])
def test_sharded_model_reads_every_file_at_one_commit(hub: HubStandIn, tmp_path: Path, revision: str) -> None:
    folder = tmp_path / "llama"
    header_bytes = write_sharded(folder, decoder_tensors(LLAMA_3_2_3B), 4, {"format": "pt"})
    write_json(folder / "config.json", LLAMA_3_2_3B)
    hub.repos["meta-llama/Llama-3.2-3B"] = Repo(folder)
    inspection = inspect_model(f"hf://meta-llama/Llama-3.2-3B{revision}")
    metadata = inspection.metadata
    assert (metadata.parameter_count, metadata.model_parameter_size) == (3_212_749_824, "3.21B")
    assert metadata.architecture == "LlamaForCausalLM"
    assert len(metadata.files) == 4
    assert metadata.source == f"hf://meta-llama/Llama-3.2-3B{revision}"

    info, *files = hub.requests
    assert info.path == f"/api/models/meta-llama/Llama-3.2-3B/revision/{revision.lstrip('@') or 'main'}"
    assert all(request.path.startswith(f"/meta-llama/Llama-3.2-3B/resolve/{COMMIT}/") for request in files)
    expected = (
        info.body_bytes
        + _json_bytes(folder / "config.json", folder / "model.safetensors.index.json")
        + sum(header_bytes.values())
    )
    assert hub.bytes_served == expected == inspection.bytes_read
    assert inspection.reads == 1 + 2 + 2 * 4  # info, config and index, two ranges per shard


def test_the_token_comes_from_hf_token(
    hub: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bert(tmp_path / "private")
    hub.repos["acme/private"] = Repo(tmp_path / "private", token=TOKEN)
    with pytest.raises(ModelFileError) as error:
        inspect_model("hf://acme/private")
    assert str(error.value) == (
        "hf://acme/private: repository not found, or private and HF_TOKEN is missing or has no access "
        "(HTTP 401)"
    )
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert inspect_model("hf://acme/private").metadata.parameter_count == 22_713_728
    assert hub.requests[-1].authorization == f"Bearer {TOKEN}"


def test_without_the_token_private_gated_and_missing_repositories_read_alike(
    hub: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``token=False`` (the operator, for a BaseModel of a namespace that may not use the token): no
    Authorization header even with HF_TOKEN set, and one text whether the repository is private, gated or
    missing, so an event tells a tenant nothing about what the token could see."""
    _bert(tmp_path / "model")
    hub.repos["acme/private"] = Repo(tmp_path / "model", token=TOKEN)
    hub.repos["acme/gated"] = Repo(tmp_path / "model", gated=True)
    hub.repos["acme/public"] = Repo(tmp_path / "model")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    texts = []
    for uri in ("hf://acme/private", "hf://acme/absent", "hf://acme/gated", "hf://acme/public@v9"):
        with pytest.raises(ModelFileError) as error:
            inspect_model(uri, token=False)
        texts.append(error.value.reason)
    assert texts == ["not found or not public (read without the Hub token)"] * 4
    assert inspect_model("hf://acme/public", token=False).metadata.parameter_count == 22_713_728
    assert {request.authorization for request in hub.requests} == {None}
    # With the token the same private repository reads, and the answers differ (what the rule hides).
    assert inspect_model("hf://acme/private").metadata.parameter_count == 22_713_728


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("hf://acme/absent", "hf://acme/absent: repository not found, or private and HF_TOKEN is missing or "
         "has no access (HTTP 404)"),
        ("hf://acme/model@v9", "hf://acme/model@v9: revision not found (HTTP 404)"),
        ("hf://acme/gated", "hf://acme/gated/config.json: gated repository: HF_TOKEN must be a token of an "
         "account that accepted its terms"),
        ("hf://acme", "hf://acme: not a Hugging Face model URI: expected hf://ORG/NAME[@REVISION]"),
    ],
)  # fmt: skip
def test_hub_errors_are_one_line(hub: HubStandIn, tmp_path: Path, uri: str, message: str) -> None:
    _bert(tmp_path / "model")
    hub.repos["acme/model"] = Repo(tmp_path / "model")
    hub.repos["acme/gated"] = Repo(tmp_path / "model", gated=True)
    with pytest.raises(ModelFileError) as error:
        inspect_model(uri)
    assert str(error.value) == message


def test_a_server_that_ignores_range_is_read_only_as_far_as_the_header(
    hub: HubStandIn, tmp_path: Path
) -> None:
    header_bytes = _bert(tmp_path / "minilm")
    hub.repos["acme/minilm"] = Repo(tmp_path / "minilm")
    hub.ignore_range = True
    inspection = inspect_model("hf://acme/minilm")
    assert inspection.metadata.parameter_count == 22_713_728
    weights = (tmp_path / "minilm" / "model.safetensors").stat().st_size
    assert weights > 90_000_000
    # Each of the two reads stops within one network chunk past what it needs.
    assert inspection.bytes_read < 2 * (header_bytes + 1_048_576)


_HEADER = b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}} '  # 56 bytes, padded


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda m: (m / "model.safetensors").write_bytes((10_485_761).to_bytes(8, "little")),
         "hf://acme/bad/model.safetensors: safetensors header length 10485761 bytes exceeds the limit of "
         "10485760 bytes"),
        (lambda m: (m / "model.safetensors").write_bytes(b"\x05\x00\x00"),
         "hf://acme/bad/model.safetensors: truncated: wanted 8 bytes at offset 0, the server sent 3"),
        (lambda m: (m / "model.safetensors").write_bytes(b""),
         "hf://acme/bad/model.safetensors: truncated: the file ends before the bytes asked for (HTTP 416)"),
        (lambda m: (m / "model.safetensors").write_bytes((64).to_bytes(8, "little") + b"{}"),
         "hf://acme/bad/model.safetensors: truncated: the safetensors header is 64 bytes, the file has 2 of "
         "them"),
        (lambda m: (m / "model.safetensors").write_bytes((5).to_bytes(8, "little") + b"{nope"),
         "hf://acme/bad/model.safetensors: invalid safetensors header: not JSON (Expecting property name "
         "enclosed in double quotes)"),
        (lambda m: (m / "model.safetensors").write_bytes((56).to_bytes(8, "little") + _HEADER + b"\0" * 15),
         "hf://acme/bad/model.safetensors: truncated: the safetensors header describes 80 bytes, the file "
         "has 79"),
        (lambda m: (m / "config.json").write_text("{"),
         "hf://acme/bad/config.json: invalid JSON: Expecting property name enclosed in double quotes at "
         "line 1"),
        (lambda m: write_json(m / "model.safetensors.index.json", {"weight_map": {"w": "s1.safetensors"}}),
         "hf://acme/bad/s1.safetensors: missing (a shard named in model.safetensors.index.json)"),
    ],
)  # fmt: skip
def test_bad_files_on_the_hub_name_the_file(
    hub: HubStandIn, tmp_path: Path, make: Callable[[Path], object], message: str
) -> None:
    folder = tmp_path / "bad"
    write_json(folder / "config.json", BERT_MINILM_CONFIG)
    make(folder)
    hub.repos["acme/bad"] = Repo(folder)
    with pytest.raises(ModelFileError) as error:
        inspect_model("hf://acme/bad")
    assert str(error.value) == message
    assert hub.bytes_served < 10_000


def test_an_unreachable_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(ModelFileError) as error:
        inspect_model("hf://acme/model")
    assert str(error.value).startswith(f"hf://acme/model: cannot reach http://127.0.0.1:{port}: ")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("uri", "ref"),
    [
        ("hf://meta-llama/Llama-3.2-1B", HubModelRef("meta-llama/Llama-3.2-1B", None)),
        ("hf://Qwen/Qwen2.5-0.5B@main", HubModelRef("Qwen/Qwen2.5-0.5B", "main")),
        (f"hf://org/name@{COMMIT}", HubModelRef("org/name", COMMIT)),
        ("hf://org/name@refs/pr/1", HubModelRef("org/name", "refs/pr/1")),
    ],
)
def test_hub_uris(uri: str, ref: HubModelRef) -> None:
    assert parse_hub_uri(uri) == ref


@pytest.mark.parametrize(
    "uri",
    ["hf://", "hf://name", "hf://org/", "hf://org/name/extra", "hf://org/name@", "hf://org/na me",
     "hf:/org/name", "s3://org/name", "hf://org/name@a@b", "hf://-org/name"],
)  # fmt: skip
def test_bad_hub_uris(uri: str) -> None:
    with pytest.raises(ModelFileError) as error:
        parse_hub_uri(uri)
    assert str(error.value) == f"{uri}: not a Hugging Face model URI: expected hf://ORG/NAME[@REVISION]"


@pytest.mark.parametrize(
    ("status", "headers", "reason"),
    [
        (500, {"X-Error-Message": "Internal error\n  try later"}, "HTTP 500: Internal error\n  try later"),
        (503, {"X-Error-Message": "x" * 300}, "HTTP 503: " + "x" * 200),
        (429, {}, "HTTP 429"),
        (403, {}, "forbidden (HTTP 403): HF_TOKEN has no access"),
        (404, {}, "missing (HTTP 404)"),
        (416, {}, "truncated: the file ends before the bytes asked for (HTTP 416)"),
        (401, {"X-Error-Code": "RepoNotFound"}, "repository not found, or private and HF_TOKEN is missing or "
         "has no access (HTTP 401)"),
    ],
)  # fmt: skip
def test_other_server_answers(status: int, headers: dict[str, str], reason: str) -> None:
    assert _status_reason(httpx2.Response(status, headers=headers)) == reason
    assert str(ModelFileError("hf://a/b/f", reason)).count("\n") == 0  # the message is flattened to one line


def test_an_invalid_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_ENDPOINT", "http://[::1")
    with pytest.raises(ModelFileError, match=r"^hf://a/b: invalid Hub endpoint 'http://\[::1': "):
        inspect_model("hf://a/b")
