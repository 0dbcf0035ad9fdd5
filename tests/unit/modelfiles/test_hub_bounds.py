"""``hf://`` reads under SPEC §10.6: redirects followed by the reader itself under a host policy, the token
only for the endpoint's own origin, sizes refused before buffering, per-request and per-model budgets.

Against the tests' Hub stand-in on 127.0.0.1 (the real ``huggingface_hub`` session underneath).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hub_standin import HubStandIn, Repo, hub_standin

from harness.model_folders import LLAMA_3_2_1B, decoder_tensors, write_json, write_safetensors, write_sharded
from ome_selector.modelfiles import ModelFileError, inspect_model
from ome_selector.modelfiles import hub as hub_module
from ome_selector.modelfiles.hub import HubModelRepo, RedirectPolicy
from ome_selector.modelfiles.limits import ReadBudget

TOKEN = "hf_bounds_token"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("OME_SELECTOR_REDIRECT_HOSTS", raising=False)
    folder = tmp_path / "llama"
    write_json(folder / "config.json", LLAMA_3_2_1B)
    write_safetensors(folder / "model.safetensors", decoder_tensors(LLAMA_3_2_1B), {"format": "pt"})
    with hub_standin() as standin:
        standin.repos["meta/llama"] = Repo(folder)
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        yield standin


def _weights_to(target: str) -> Callable[[str], str | None]:
    """A redirect of every safetensors file to ``target`` + its path (as the Hub sends weights to a CDN)."""
    return lambda path: target + path if path.endswith(".safetensors") else None


def test_weights_redirected_to_another_port_are_read_without_the_token(hub: HubStandIn) -> None:
    with hub_standin() as cdn:
        cdn.repos = hub.repos
        hub.redirect = _weights_to(cdn.url)
        metadata = inspect_model("hf://meta/llama", token=TOKEN).metadata
        assert metadata.parameter_count == 1_235_814_400
        assert {request.authorization for request in cdn.requests} == {None}
        assert len(cdn.requests) == 2  # the length, then the header
    assert {request.authorization for request in hub.requests} == {f"Bearer {TOKEN}"}


@pytest.mark.parametrize(
    ("target", "host"),
    [
        ("http://evil.example", "evil.example"),
        ("https://evil.example", "evil.example"),
        ("https://10.0.0.1", "10.0.0.1"),
        ("https://huggingface.co.evil.example", "huggingface.co.evil.example"),
        ("http://\x1bX.example", "\\x1bx.example"),
    ],
)
def test_a_redirect_to_another_host_is_refused(hub: HubStandIn, target: str, host: str) -> None:
    hub.redirect = _weights_to(target)
    with pytest.raises(ModelFileError) as error:
        inspect_model("hf://meta/llama")
    assert str(error.value) == (
        f"hf://meta/llama/model.safetensors: redirected to {host}, which is not an allowed Hub host"
    )


def test_more_than_three_redirects_are_refused(hub: HubStandIn) -> None:
    hub.redirect = lambda path: path if path.endswith(".safetensors") else None
    with pytest.raises(ModelFileError) as error:
        inspect_model("hf://meta/llama")
    assert str(error.value) == "hf://meta/llama/model.safetensors: more than 3 redirects"
    assert sum(1 for path in hub.served_paths() if path.endswith(".safetensors")) == 4  # each hop counted


@pytest.mark.parametrize(
    ("endpoint", "target", "extra", "allowed"),
    [
        ("https://huggingface.co", "https://cdn-lfs.hf.co/x", (), True),
        ("https://huggingface.co", "https://cdn-lfs-us-1.hf.co/x", (), True),
        ("https://huggingface.co", "https://cas-bridge.xethub.hf.co/x", (), True),
        ("https://huggingface.co", "https://huggingface.co:444/x", (), True),
        ("https://huggingface.co", "http://cdn-lfs.hf.co/x", (), False),
        ("https://huggingface.co", "https://evilhf.co/x", (), False),
        ("https://huggingface.co", "https://203.0.113.5/x", (), False),
        ("https://huggingface.co", "https://blobs.example/x", ("blobs.example",), True),
        ("https://mirror.example", "https://cdn-lfs.hf.co/x", (), False),
        ("https://mirror.example", "https://mirror.example:8443/x", (), True),
        ("https://mirror.example", "https://BLOBS.example/x", ("blobs.example",), True),
        ("http://127.0.0.1:8080", "http://127.0.0.1:9999/x", (), True),
        ("http://127.0.0.1:8080", "http://localhost:8080/x", (), False),
        ("http://127.0.0.1:8080", "https://127.0.0.2/x", (), False),
        ("http://127.0.0.1:8080", "ftp://127.0.0.1/x", (), False),
        ("http://127.0.0.1:8080", "http://127.0.0.1:notaport/x", (), False),
    ],
)
def test_the_redirect_policy(endpoint: str, target: str, extra: tuple[str, ...], allowed: bool) -> None:
    assert RedirectPolicy.for_endpoint(endpoint, extra).allows(urlsplit(target)) is allowed


def test_redirect_hosts_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OME_SELECTOR_REDIRECT_HOSTS", " blobs.example, ,other.example")
    policy = RedirectPolicy.for_endpoint("https://mirror.example")
    assert policy.extra_hosts == frozenset({"blobs.example", "other.example"})


def test_a_whole_file_over_its_limit_is_refused_unread(hub: HubStandIn, tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    with (folder / "config.json").open("wb") as stream:
        stream.truncate(4_000_001)
    hub.repos["meta/big"] = Repo(folder)
    repo = HubModelRepo("hf://meta/big")
    received = repo.bytes_read
    with pytest.raises(ModelFileError) as error:
        repo.read_json("config.json", 4_000_000)
    assert str(error.value) == "hf://meta/big/config.json: larger than 4000000 bytes: not model metadata"
    assert repo.bytes_read == received  # not one byte of it collected


def test_a_trickling_server_is_cut_at_the_request_deadline(
    hub: HubStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_module, "REQUEST_DEADLINE", 0.5)
    hub.trickle = 0.05  # the Llama header's ~25 kB would take 20 minutes
    with pytest.raises(ModelFileError) as error:
        inspect_model("hf://meta/llama")
    assert str(error.value) == (
        f"hf://meta/llama/model.safetensors: no complete answer from {hub.url} within 0.5 s"
    )


def test_the_requests_of_one_model_are_counted_with_their_redirects(hub: HubStandIn, tmp_path: Path) -> None:
    folder = tmp_path / "sharded"
    write_json(folder / "config.json", LLAMA_3_2_1B)
    write_sharded(folder, decoder_tensors(LLAMA_3_2_1B), 4)
    hub.repos["meta/sharded"] = Repo(folder)
    with pytest.raises(ModelFileError) as error:
        # info, config.json, the index, then 2 per shard: the 5th request is over a budget of 4.
        HubModelRepo(
            "hf://meta/sharded", budget=ReadBudget("hf://meta/sharded", max_requests=4)
        ).read_headers(["model-00001-of-00004.safetensors"] * 2)
    assert str(error.value) == "hf://meta/sharded: more than 4 HTTP requests for one model"


def test_the_bytes_of_one_model_are_counted(hub: HubStandIn) -> None:
    budget = ReadBudget("hf://meta/llama", max_bytes=1000)  # the header alone is larger
    repo = HubModelRepo("hf://meta/llama", budget=budget)
    with pytest.raises(ModelFileError) as error:
        repo.read_headers(["model.safetensors"])
    assert str(error.value) == "hf://meta/llama: more than 1000 bytes read for one model"
    assert repo.bytes_read <= 1000  # refused before or at the chunk that passed it


def test_every_request_asks_for_the_file_itself_not_an_encoding(
    hub: HubStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str | None] = []
    real_stream = HubModelRepo._stream

    def stream(
        self: HubModelRepo, location: str, url: str, headers: dict[str, str], timeout: object
    ) -> object:
        sent.append(headers.get("Accept-Encoding"))
        return real_stream(self, location, url, headers, timeout)  # type: ignore[arg-type]

    monkeypatch.setattr(HubModelRepo, "_stream", stream)
    inspect_model("hf://meta/llama")
    assert sent
    assert set(sent) == {"identity"}
