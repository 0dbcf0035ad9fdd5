"""Learning a 70B-class model's metadata from its safetensors headers alone (SPEC §10).

The model: Meta-Llama-3-70B's real tensor shapes (723 tensors, 70,553,706,496 parameters, bf16) in 30
shards, written as sparse files: every header is real and every file is as long as its weights (141 GB in
all) but holds no data. Then (SPEC §10 v5) the quantized layouts: the same model as a ModelOpt NVFP4 export
(``hf_quant_config.json``, a packed ``U8`` weight, ``weight_scale``, ``weight_scale_2`` and ``input_scale``
per linear: 2,123 tensors, counted quantization-aware), and the layouts of :mod:`harness.quantized_models`
(gpt-oss-120b MXFP4, compressed-tensors FP8, FBGEMM FP8). Measured, for a local folder and for ``hf://``
through the real ``huggingface_hub`` client against the tests' local Hub stand-in (HTTP range requests on
localhost): the time to learn the metadata, per tensor too (the layouts differ in tensors), and the bytes
read (JSON files and headers) against the weights' size. Nothing here asserts a time; a count other than
the expected one is printed as such (``--before`` code counts 4-bit layouts the v4 way).

    python -m bench.modelfiles [--shards 30] [--repeat 5] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.model_folders import LLAMA_3_70B, decoder_tensors, write_json, write_sharded
from harness.quantized_models import (
    NVFP4_HF_QUANT_CONFIG,
    QUANTIZED_MODELS,
    QuantizedModel,
    modelopt_nvfp4_tensors,
    write_quantized,
)
from ome_selector.modelfiles import Inspection, inspect_model

# The Hub stand-in is the tests' own (tests/unit).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
from hub_standin import Repo, hub_standin

EXPECTED_PARAMETERS = 70_553_706_496
#: The quantized layouts measured, with the parameters SPEC §10 (v6) counts (worked out by hand in
#: tests/unit/modelfiles/test_quantized.py).
LAYOUTS: dict[str, tuple[QuantizedModel, int]] = {
    "Llama-3-70B-NVFP4": (
        QuantizedModel(
            "nvidia/Llama-3-70B-FP4",
            LLAMA_3_70B,
            lambda: modelopt_nvfp4_tensors(LLAMA_3_70B),
            30,
            hf_quant_config=NVFP4_HF_QUANT_CONFIG,
        ),
        EXPECTED_PARAMETERS,
    ),
    "gpt-oss-120b": (QUANTIZED_MODELS["gpt-oss-120b"], 116_829_156_672),
    # (v6) Their per-channel scales are not parameters: the BF16 models' counts.
    "Llama-3.3-70B-FP8-ct": (QUANTIZED_MODELS["Llama-3.3-70B-Instruct-FP8-dynamic"], 70_553_706_496),
    "Llama-3.1-405B-FP8": (QUANTIZED_MODELS["Llama-3.1-405B-Instruct-FP8"], 405_853_388_800),
}


def _best(call: Callable[[], Inspection], repeat: int) -> tuple[float, Inspection]:
    """The fastest of ``repeat`` calls, and what the last one returned."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def _report(
    label: str,
    seconds: float,
    inspection: Inspection,
    weights: int,
    unit: str,
    *,
    tensors: int,
    expected: int,
) -> None:
    metadata = inspection.metadata
    read = f"{inspection.bytes_read:>9,} bytes in {inspection.reads:>3} {unit}"
    count = metadata.parameter_count
    mismatch = "" if count == expected else f"   COUNTED {count}, not {expected}"
    print(
        f"  {label:<8} {seconds * 1e3:8.1f} ms ({seconds * 1e6 / tensors:5.1f} µs/tensor)   {read:<36} "
        f"({inspection.bytes_read / weights:.1e} of the weights) -> {metadata.model_parameter_size} "
        f"{metadata.quantization or ''}{mismatch}"
    )


def _measure(folder: Path, repo: str, directory: str, *, repeat: int, tensors: int, expected: int) -> None:
    weights = sum(path.stat().st_size for path in folder.iterdir() if path.suffix == ".safetensors")
    seconds, inspection = _best(lambda: inspect_model(str(folder)), repeat)
    _report("folder", seconds, inspection, weights, "files", tensors=tensors, expected=expected)
    previous = {name: os.environ.get(name) for name in ("HF_ENDPOINT", "HF_TOKEN", "HF_HOME")}
    with hub_standin() as hub:
        hub.repos[repo] = Repo(folder)
        os.environ.update({"HF_ENDPOINT": hub.url, "HF_HOME": str(Path(directory) / "hf-home")})
        os.environ.pop("HF_TOKEN", None)
        try:
            seconds, inspection = _best(lambda: inspect_model(f"hf://{repo}"), repeat)
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    _report("hf://", seconds, inspection, weights, "HTTP requests", tensors=tensors, expected=expected)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.modelfiles", description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=30, help="safetensors shards (default 30)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement, best kept (default 5)")
    parser.add_argument(
        "--only", choices=["Meta-Llama-3-70B", *LAYOUTS], help="measure this layout only (default: all)"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-modelfiles-") as directory:
        if args.only in (None, "Meta-Llama-3-70B"):
            folder = Path(directory) / "Meta-Llama-3-70B"
            tensors = decoder_tensors(LLAMA_3_70B)
            headers = write_sharded(folder, tensors, args.shards, {"format": "pt"})
            write_json(folder / "config.json", LLAMA_3_70B)
            files = list(folder.iterdir())
            weights = sum(path.stat().st_size for path in files if path.suffix == ".safetensors")
            on_disk = sum(path.stat().st_blocks * 512 for path in files)
            print(
                f"bench.modelfiles: Llama-3-70B shapes, {len(tensors)} tensors in {args.shards} shards: "
                f"{weights / 1e9:.1f} GB of weights (sparse: {on_disk / 1e3:.0f} kB on disk), "
                f"{sum(headers.values()):,} bytes of headers; best of {args.repeat}"
            )
            _measure(
                folder,
                "meta-llama/Meta-Llama-3-70B",
                directory,
                repeat=args.repeat,
                tensors=len(tensors),
                expected=EXPECTED_PARAMETERS,
            )
        for name, (model, expected) in LAYOUTS.items():
            if args.only not in (None, name):
                continue
            folder = Path(directory) / name
            tensors = write_quantized(folder, model)
            print(f"{name} ({model.repo}'s layout): {len(tensors)} tensors in {model.shards} shards")
            _measure(
                folder, model.repo, directory, repeat=args.repeat, tensors=len(tensors), expected=expected
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
