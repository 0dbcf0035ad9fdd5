"""Hostile model files (SPEC §10.1, §10.7): the worst inputs' time, the reader's peak RSS, the loop's lag.

For each model of :data:`harness.hostile_models.HOSTILE`, plus DeepSeek-V3's real layout (163 shards, 91,991
tensors), measured two ways:

- ``cli``: ``kubectl ome-selector model inspect`` of the folder, in a fresh interpreter (its own process, as
the CLI
  runs): wall time, CPU time and peak RSS (``VmHWM``); with ``--before SRC`` the same for another checkout's
  ``src`` (e.g. the previous release), each cut at ``--cap`` seconds;
- ``operator``: the operator's reader (:class:`~ome_selector.operator.modelreader.ModelReaderProcess`) over
  ``hf://`` from the Hub stand-in in a process of its own, while a ticker on the event loop records the
  longest wake-up lag: wall time, the child's peak RSS, the lag.

Nothing here asserts a figure.

    python -m bench.hostile_models [--before /path/to/old/src] [--cap 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.hostile_models import HOSTILE, write_hostile
from harness.large_models import deepseek_v3_tensors
from harness.model_folders import write_sharded
from ome_selector.modelfiles import ModelFileError
from ome_selector.operator.modelreader import MIB, ModelReaderProcess

_STANDIN = Path(__file__).resolve().parents[1] / "tests" / "unit" / "hub_standin.py"
#: Reads one folder with whatever ome_selector is on the path; prints seconds, CPU seconds, VmHWM, outcome.
_READ = """
import json, sys, time, resource
from ome_selector.modelfiles import inspect_model
started = time.perf_counter()
try:
    outcome = "read %s" % inspect_model(sys.argv[1]).metadata.parameter_count
except Exception as error:
    outcome = "%s: %s" % (type(error).__name__, str(error).rsplit(": ", 1)[-1][:70])
seconds = time.perf_counter() - started
cpu = resource.getrusage(resource.RUSAGE_SELF)
peak = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps([seconds, cpu.ru_utime + cpu.ru_stime, peak, outcome]))
"""


def _cli(folder: Path, src: Path | None, cap: float) -> str:
    environment = dict(os.environ)
    if src is not None:
        environment["PYTHONPATH"] = str(src)
    try:
        result = subprocess.run(
            [sys.executable, "-c", _READ, str(folder)],
            capture_output=True,
            text=True,
            timeout=cap,
            env=environment,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"over {cap:g} s (stopped)"
    if result.returncode != 0 or not result.stdout:
        return f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1:]}"
    seconds, cpu, peak, outcome = json.loads(result.stdout)
    return f"{seconds:6.2f} s ({cpu:5.2f} s CPU), peak {peak / MIB:6.1f} MiB   {outcome}"


async def _operator(uri: str, endpoint: str) -> str:
    loop = asyncio.get_running_loop()
    longest = held = 0.0
    done = asyncio.Event()

    async def tick() -> None:
        # The lag, and the lag as far as this process computed meanwhile (a busy machine delays the wake-up
        # of an idle process too; a parse in one of its threads would burn this process's CPU).
        nonlocal longest, held
        while not done.is_set():
            due, cpu = loop.time() + 0.01, time.process_time()
            await asyncio.sleep(0.01)
            lag = max(0.0, loop.time() - due)
            longest, held = max(longest, lag), max(held, min(lag, time.process_time() - cpu))

    ticker = asyncio.create_task(tick())
    reader = ModelReaderProcess()
    started = time.perf_counter()
    try:
        outcome = f"read {(await reader.read(uri, endpoint=endpoint)).parameter_count}"
    except ModelFileError as error:
        outcome = f"refused: {error.reason[:70]}"
    seconds = time.perf_counter() - started
    done.set()
    await ticker
    return (
        f"{seconds:6.2f} s, child peak {reader.peak_rss / MIB:6.1f} MiB, loop lag {longest * 1e3:5.1f} ms "
        f"({held * 1e3:4.1f} ms computing)   {outcome}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hostile_models", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--before", type=Path, help="another checkout's src/ to measure the CLI path with too"
    )
    parser.add_argument("--cap", type=float, default=60.0, help="seconds before a CLI read is stopped")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-hostile-models-") as directory:
        folders = {name: write_hostile(Path(directory) / name, name) for name in HOSTILE}
        folders["DeepSeek-V3 (real)"] = Path(directory) / "deepseek"
        write_sharded(folders["DeepSeek-V3 (real)"], deepseek_v3_tensors(), 163, {"format": "pt"})
        print("bench.hostile_models: the worst model files, read by the CLI and by the operator's child")
        for name, folder in folders.items():
            what = HOSTILE[name][1] if name in HOSTILE else "163 shards, 91,991 tensors, an 8.8 MB index"
            print(f"{name}: {what}")
            if args.before is not None:
                print(f"  cli before  {_cli(folder, args.before, args.cap)}")
            print(f"  cli         {_cli(folder, None, args.cap)}")
        repos = [f"hostile/{index}={folder}" for index, folder in enumerate(folders.values())]
        with subprocess.Popen(
            [sys.executable, str(_STANDIN), *repos], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        ) as server:
            assert server.stdout is not None
            assert server.stdin is not None
            endpoint = server.stdout.readline().strip()
            for index, name in enumerate(folders):
                print(f"  operator    {name:<18} {asyncio.run(_operator(f'hf://hostile/{index}', endpoint))}")
            server.stdin.close()
            server.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
