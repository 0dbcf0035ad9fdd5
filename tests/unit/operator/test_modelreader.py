"""The operator's model reader in a child process (SPEC §10.7): a fresh interpreter per model, killed at its
deadline or over its memory cap, the token on stdin only, an answer checked value by value.

Stand-in children (``python -c``) play a hung, greedy, crashing or lying reader; the real child reads from the
Hub stand-in on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_standin import HubStandIn, Repo, hub_standin

from harness.model_folders import LLAMA_3_2_1B, decoder_tensors, write_json, write_safetensors
from ome_selector.modelfiles import ModelFileError, ModelMetadata, NameVersion
from ome_selector.modelfiles.child import CPU_SECONDS, MAX_ADDRESS_SPACE
from ome_selector.operator.modelreader import MIB, ChildLimits, ModelReaderProcess

URI = "hf://meta/llama"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    folder = tmp_path / "llama"
    write_json(folder / "config.json", LLAMA_3_2_1B)
    write_safetensors(folder / "model.safetensors", decoder_tensors(LLAMA_3_2_1B), {"format": "pt"})
    with hub_standin() as standin:
        standin.repos["meta/llama"] = Repo(folder)
        standin.repos["meta/private"] = Repo(folder, token="hf_secret")
        yield standin


def _read(reader: ModelReaderProcess, uri: str = URI, **kwargs: str | None) -> ModelMetadata:
    return asyncio.run(reader.read(uri, **kwargs))


def _failure(reader: ModelReaderProcess, uri: str = URI, **kwargs: str | None) -> str:
    with pytest.raises(ModelFileError) as error:
        _read(reader, uri, **kwargs)
    return str(error.value)


def _child(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def test_the_child_reads_a_model_and_reports_its_peak(hub: HubStandIn) -> None:
    reader = ModelReaderProcess()
    metadata = _read(reader, endpoint=hub.url)
    assert metadata == ModelMetadata(
        source=URI,
        parameter_count=1_235_814_400,
        estimated=False,
        model_format=NameVersion("safetensors", "1.0.0"),
        architecture="LlamaForCausalLM",
        framework=NameVersion("transformers", "4.45.0.dev0"),
        quantization=None,
        max_tokens=131072,
        files=(),
    )
    assert 5 * MIB < reader.peak_rss < 256 * MIB


def test_the_token_reaches_the_child_only_through_its_stdin(
    hub: HubStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_from_the_environment")  # never passed on
    assert _read(ModelReaderProcess(), "hf://meta/private", endpoint=hub.url, token="hf_secret").max_tokens
    # Without a token the child reads anonymously, and a private repository reads as missing (SPEC §10.6).
    assert _failure(ModelReaderProcess(), "hf://meta/private", endpoint=hub.url, token=None) == (
        "hf://meta/private: not found or not public (read without the Hub token)"
    )
    spy = _child(
        "import json, os, sys; request = json.load(sys.stdin); print(json.dumps({'error': {"
        "'location': 'spy', 'reason': json.dumps("
        "[sys.argv, sorted(k for k in os.environ if 'TOKEN' in k), request['token']])}}))"
    )
    reason = _failure(ModelReaderProcess(command=spy), token="hf_secret").removeprefix("spy: ")
    assert json.loads(reason) == [["-c"], [], "hf_secret"]


def test_a_failure_in_the_child_names_its_file(hub: HubStandIn) -> None:
    assert _failure(ModelReaderProcess(), "hf://meta/absent", endpoint=hub.url, token="hf_secret") == (
        "hf://meta/absent: repository not found, or private and HF_TOKEN is missing or has no access "
        "(HTTP 404)"
    )


def test_a_hung_child_is_killed_at_the_deadline() -> None:
    reader = ModelReaderProcess(ChildLimits(deadline=1.0), command=_child("import time; time.sleep(60)"))
    assert _failure(reader) == f"{URI}: not read within 1 s"


def test_a_child_over_its_memory_cap_is_killed() -> None:
    greedy = _child("import time; hoard = b'x' * (300 * 2**20); time.sleep(60)")
    reader = ModelReaderProcess(ChildLimits(max_rss=64 * MIB), command=greedy)
    assert _failure(reader) == f"{URI}: reading the model used more than 64 MiB"
    assert reader.peak_rss > 64 * MIB


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("import sys; sys.exit(3)", "the model reader ended without an answer (exit status 3)"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
         "the model reader ended without an answer (killed by SIGKILL)"),
        ("print('not json')", "the model reader answered something other than metadata"),
        ("print('[1]')", "the model reader answered something other than metadata"),
        ("print('[' * 50000)", "the model reader answered something other than metadata"),
        ("import json; print(json.dumps({'metadata': {'source': 'x', 'estimated': False, "
         "'parameterCount': 10, 'modelArchitecture': 'bad\\u001b[2J'}}))",
         "the model reader answered something other than metadata"),
        ("print('x' * 70000)", "the model reader answered more than 65536 bytes"),
        ("import sys, time; sys.stdout.write('x' * 200000); sys.stdout.flush(); time.sleep(60)",
         "the model reader answered more than 65536 bytes"),
    ],
)  # fmt: skip
def test_whatever_the_child_does_is_one_failure(code: str, reason: str) -> None:
    assert _failure(ModelReaderProcess(ChildLimits(deadline=30), command=_child(code))) == f"{URI}: {reason}"


def test_the_child_sets_its_own_backstops() -> None:
    code = (
        "import resource; from ome_selector.modelfiles.child import _limit_self; _limit_self(); "
        "print(resource.getrlimit(resource.RLIMIT_CPU)[0], resource.getrlimit(resource.RLIMIT_AS)[0])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == [str(CPU_SECONDS), str(MAX_ADDRESS_SPACE)]


def test_the_child_reads_only_the_hub() -> None:
    assert _failure(ModelReaderProcess(), "/etc") == "/etc: not an hf:// URI"
