"""Learning a 70B-class model's metadata from its safetensors headers alone (SPEC §10).

The model: Meta-Llama-3-70B's real tensor shapes (723 tensors, 70,553,706,496 parameters, bf16) in 30
shards, written as sparse files: every header is real and every file is as long as its weights (141 GB in
all) but holds no data. Measured, for a local folder and for ``hf://`` through the real ``huggingface_hub``
client against the tests' local Hub stand-in (HTTP range requests on localhost): the time to learn the
metadata and the bytes read (JSON files and headers) against the weights' size. Nothing here asserts a time.

    python -m bench.modelfiles [--shards 30] [--repeat 5]
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
from ome_selector.modelfiles import Inspection, inspect_model

# The Hub stand-in is the tests' own (tests/unit).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
from hub_standin import Repo, hub_standin

EXPECTED_PARAMETERS = 70_553_706_496


def _best(call: Callable[[], Inspection], repeat: int) -> tuple[float, Inspection]:
    """The fastest of ``repeat`` calls, and what the last one returned."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def _report(label: str, seconds: float, inspection: Inspection, weights: int, unit: str) -> None:
    metadata = inspection.metadata
    if metadata.parameter_count != EXPECTED_PARAMETERS:
        raise SystemExit(f"{label}: counted {metadata.parameter_count}, expected {EXPECTED_PARAMETERS}")
    read = f"{inspection.bytes_read:>9,} bytes in {inspection.reads:>3} {unit}"
    print(
        f"  {label:<8} {seconds * 1e3:8.1f} ms   {read:<36} ({inspection.bytes_read / weights:.1e} of the "
        f"weights) -> {metadata.model_parameter_size}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.modelfiles", description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=30, help="safetensors shards (default 30)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement, best kept (default 5)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-modelfiles-") as directory:
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
        seconds, inspection = _best(lambda: inspect_model(str(folder)), args.repeat)
        _report("folder", seconds, inspection, weights, "files")

        previous = {name: os.environ.get(name) for name in ("HF_ENDPOINT", "HF_TOKEN", "HF_HOME")}
        with hub_standin() as hub:
            hub.repos["meta-llama/Meta-Llama-3-70B"] = Repo(folder)
            os.environ.update({"HF_ENDPOINT": hub.url, "HF_HOME": str(Path(directory) / "hf-home")})
            os.environ.pop("HF_TOKEN", None)
            try:
                seconds, inspection = _best(
                    lambda: inspect_model("hf://meta-llama/Meta-Llama-3-70B"), args.repeat
                )
            finally:
                for name, value in previous.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
        _report("hf://", seconds, inspection, weights, "HTTP requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
