"""The largest published layouts still read under SPEC §10.1's limits: Llama-3.1-405B (191 shards),
DeepSeek-V3 (163 shards, 91,991 tensors, block-FP8 with scale tensors), Kimi-K2 (139,644 tensors) and
Qwen3-235B-A22B, from a folder; DeepSeek-V3 also through the Hub stand-in (329 requests)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hub_standin import Repo, hub_standin

from harness.large_models import LARGE_MODELS, deepseek_v3_tensors
from harness.model_folders import write_sharded
from ome_selector.modelfiles import inspect_model

TENSORS = {"Llama-3.1-405B": 1137, "DeepSeek-V3": 91_991, "Kimi-K2": 139_644, "Qwen3-235B-A22B": 36_945}


@pytest.mark.parametrize("name", list(LARGE_MODELS))
def test_the_largest_layouts_read_exactly(tmp_path: Path, name: str) -> None:
    make, shards, published = LARGE_MODELS[name]
    tensors = make()
    expected = sum(math.prod(shape) for _, shape in tensors.values() if shape)
    if published is not None:
        assert expected == published
    write_sharded(tmp_path, tensors, shards, {"format": "pt"})
    metadata = inspect_model(str(tmp_path)).metadata
    assert metadata.parameter_count == expected
    assert len(metadata.files) == shards
    assert sum(file.tensors for file in metadata.files) == len(tensors) == TENSORS[name]


def test_deepseek_v3_reads_through_the_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    tensors = deepseek_v3_tensors()
    write_sharded(tmp_path / "model", tensors, 163, {"format": "pt"})
    with hub_standin() as hub:
        hub.repos["deepseek-ai/DeepSeek-V3"] = Repo(tmp_path / "model")
        inspection = inspect_model("hf://deepseek-ai/DeepSeek-V3", endpoint=hub.url)
    assert inspection.metadata.parameter_count == 684_531_386_000
    assert inspection.metadata.model_parameter_size == "684.53B"
    assert inspection.reads == 1 + 1 + 2 * 163  # info, index, two ranges per shard (no config.json here)
    assert inspection.bytes_read < 32_000_000
