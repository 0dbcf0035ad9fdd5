"""Hostile model folders: the worst inputs for the model-file reader (SPEC §10.1), for tests and benchmarks.

Each is what anyone who can create a BaseModel could point the operator at: headers and metadata files
built to cost the reader the most time or memory, either just over a limit (refused before parsing) or just
under it (the most a parse may cost). ``write_hostile(folder, name)`` writes one; :data:`HOSTILE` lists them
with what the v3 reader did with each.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.model_folders import LLAMA_3_2_1B, write_json

__all__ = ["HOSTILE", "write_hostile"]


def _safetensors(path: Path, header: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        stream.write(len(header).to_bytes(8, "little") + header)


def _huge_shape(folder: Path) -> None:
    # A 2 MB header: one tensor whose shape is 100,000 integers of 20 digits (v3: 40 s of CPU, GIL held).
    shape = b",".join([b"98765432109876543210"] * 100_000)
    _safetensors(
        folder / "model.safetensors", b'{"w":{"dtype":"U8","shape":[' + shape + b'],"data_offsets":[0,0]}}'
    )


def _big_metadata(folder: Path) -> None:
    # A header just under 10 MiB, nearly all of it __metadata__ strings (v3 read a 90 MB one: 7 s).
    pairs = b",".join(b'"k%06d":"%s"' % (index, b"v" * 90) for index in range(100_000))
    _safetensors(
        folder / "model.safetensors",
        b'{"__metadata__":{' + pairs + b'},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,0]}}',
    )


def _most_tensors(folder: Path) -> None:
    # 100,000 tensors (900,000 JSON values): the largest header that parses and is counted.
    entry = b'"model.layers.%06d.mlp.experts.weight":{"dtype":"BF16","shape":[1,1,2],"data_offsets":[0,0]}'
    _safetensors(
        folder / "model.safetensors", b"{" + b",".join(entry % index for index in range(100_000)) + b"}"
    )


def _deep_header(folder: Path) -> None:
    # Nesting 100,000 deep (v3: a traceback).
    _safetensors(folder / "model.safetensors", b'{"w":' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def _long_numbers(folder: Path) -> None:
    # config.json under 4 MB holding 900 numbers of 4,300 digits: the longest Python converts (quadratic).
    numbers = ",".join(["7" * 4300] * 900)
    (folder / "config.json").write_text('{"architectures":["LlamaForCausalLM"],"x":[' + numbers + "]}")


def _big_config(folder: Path) -> None:
    # A 20 MB config.json (v3: +508 MiB of peak memory, the leader OOM-killed).
    document = {"architectures": ["LlamaForCausalLM"], "x": [{"a": index} for index in range(1_800_000)]}
    write_json(folder / "config.json", document)


def _big_index(folder: Path) -> None:
    # An index just under 32 MB: the largest that parses (v3 read 1,000,000 entries: +434 MiB).
    shards = [f"model-{index:05d}-of-01024.safetensors" for index in range(1, 1025)]
    weight_map = {
        f"model.layers.{index}.mlp.experts.{index % 256}.w": shards[index % 1024] for index in range(420_000)
    }
    text = json.dumps({"metadata": {}, "weight_map": weight_map}, separators=(",", ":"))
    (folder / "model.safetensors.index.json").write_text(text)


def _quant_exclusions(folder: Path) -> None:
    # An MXFP4 config.json under 4 MB whose exclusion list holds 200,000 substring patterns, and a header of
    # 49 U8 tensors with names under 64 characters: 9,800,000 steps of matching (one a pattern and name),
    # just under SPEC §10's bound of 10,000,000 (the most one header's quantized count may cost). Nothing
    # matches: 98 parameters.
    modules = [".".join(["a"] * (index % 8) + [f"m{index}"]) for index in range(200_000)]
    config = {**LLAMA_3_2_1B, "quantization_config": {"quant_method": "mxfp4", "ignore": modules}}
    (folder / "config.json").write_text(json.dumps(config, separators=(",", ":")))
    name = ".".join(["a"] * 20)
    entries = b",".join(
        b'"%s.%d":{"dtype":"U8","shape":[1],"data_offsets":[0,0]}' % (name.encode(), index)
        for index in range(49)
    )
    _safetensors(folder / "model.safetensors", b"{" + entries + b"}")


#: name -> (writer, what v3 did with it).
HOSTILE = {
    "huge-shape": (_huge_shape, "2 MB header, a shape of 100,000 huge integers: 40 s of CPU"),
    "big-metadata": (_big_metadata, "a 10 MiB header of __metadata__ (v3: 90 MB, 7 s)"),
    "most-tensors": (_most_tensors, "100,000 tensors, 900,000 JSON values: the largest header parse allowed"),
    "deep-header": (_deep_header, "nesting 100,000 deep: a traceback"),
    "long-numbers": (_long_numbers, "900 numbers of 4,300 digits in config.json"),
    "big-config": (_big_config, "a 20 MB config.json: +508 MiB"),
    "big-index": (_big_index, "an index of 420,000 entries under 32 MB (v3: 1,000,000 entries, +434 MiB)"),
    "quant-exclusions": (
        _quant_exclusions,
        "v6: 200,000 exclusion patterns, 49 U8 names: the costliest quantized count allowed",
    ),
}


def write_hostile(folder: Path, name: str) -> Path:
    """Write the hostile model ``name`` into ``folder`` (a config.json too unless it is the hostile file)."""
    folder.mkdir(parents=True, exist_ok=True)
    if name not in ("long-numbers", "big-config", "quant-exclusions"):
        write_json(folder / "config.json", LLAMA_3_2_1B)
    HOSTILE[name][0](folder)
    return folder
