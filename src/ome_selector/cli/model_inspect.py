"""`kubectl ome model inspect`: what a model's files say about it (SPEC §10).

It reads a local Hugging Face-layout folder or ``hf://ORG/NAME[@REVISION]`` (JSON files and safetensors
headers only, never weights) and prints the learned metadata as a summary, or the §10 JSON/YAML document.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from ome_selector.cli.render import render_table
from ome_selector.modelfiles import (
    Inspection,
    ModelFileError,
    ModelMetadata,
    inspect_model,
    metadata_document,
)
from ome_selector.modelfiles.estimate import ESTIMATED_MODEL_TYPES

__all__ = ["OUTPUT_FORMATS", "add_model_command", "render_inspection", "run_model_command"]

OUTPUT_FORMATS = ("table", "json", "yaml")
EXIT_OK = 0
EXIT_ERROR = 1

_DESCRIPTION = f"""\
Learn a model's size, format, architecture, framework, quantization and context length from its files, as
OME's model agent does: config.json (or model_index.json for a diffusers pipeline) and the safetensors
headers (model.safetensors, or the shards of model.safetensors.index.json). Of each safetensors file only the
8-byte length and the JSON header are read, never the weights.

SOURCE is a local folder or hf://ORG/NAME[@REVISION] on the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN honoured;
only range requests for the headers). Without safetensors weights the size is estimated from config.json for
these model types: {", ".join(ESTIMATED_MODEL_TYPES)}."""

_EPILOG = """\
examples:
  kubectl ome model inspect ./models/llama-3.2-1b
  kubectl ome model inspect hf://Qwen/Qwen2.5-0.5B -o json
  kubectl ome model inspect hf://meta-llama/Llama-3.2-3B@main -v

exit status: 0 when the model could be read; 1 on a usage error or a missing, unreadable or malformed file."""

EMPTY = "-"


def add_model_command(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add `model inspect` to the `kubectl ome` subcommands ``commands`` (an argparse subparsers action)."""
    model = commands.add_parser("model", help="inspect model files", description="Inspect model files.")
    model_commands = model.add_subparsers(
        dest="model_command", metavar="COMMAND", required=True, parser_class=parser_class
    )
    inspect_parser = model_commands.add_parser(
        "inspect",
        usage="%(prog)s (DIR | hf://ORG/NAME[@REVISION]) [-o table|json|yaml] [-v] [-h]",
        help="learn a model's size and format from its files",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inspect_parser.add_argument("source", metavar="SOURCE", help="model folder or hf://ORG/NAME[@REVISION]")
    inspect_parser.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS,
        default="table",
        metavar="FORMAT",
        help="output format: " + ", ".join(OUTPUT_FORMATS) + " (default table)",
    )
    inspect_parser.add_argument(
        "-v", "--verbose", action="store_true", help="report on stderr how many bytes were read"
    )


def _name_version(name: str | None, version: str | None) -> str:
    if name is None:
        return EMPTY
    return f"{name} {version}" if version else name


def _summary(metadata: ModelMetadata) -> str:
    count = metadata.parameter_count
    if count is None:
        parameters = EMPTY
    else:
        parameters = f"{count} ({'estimated from config.json' if metadata.estimated else 'exact'})"
    model_format, framework = metadata.model_format, metadata.framework
    rows = [
        ("Source:", metadata.source),
        ("Parameters:", parameters),
        ("modelParameterSize:", metadata.model_parameter_size or EMPTY),
        (
            "modelFormat:",
            _name_version(model_format.name, model_format.version) if model_format else EMPTY,
        ),
        ("modelArchitecture:", metadata.architecture or EMPTY),
        ("modelFramework:", _name_version(framework.name, framework.version) if framework else EMPTY),
        ("quantization:", metadata.quantization or EMPTY),
        ("maxTokens:", EMPTY if metadata.max_tokens is None else str(metadata.max_tokens)),
    ]
    width = max(len(label) for label, _ in rows) + 2
    text = "".join(f"{label.ljust(width)}{value}\n" for label, value in rows)
    if metadata.files:
        files = [(file.name, str(file.tensors), str(file.parameters)) for file in metadata.files]
        text += "\n" + render_table(("FILE", "TENSORS", "PARAMETERS"), files)
    return text


def render_inspection(metadata: ModelMetadata, output: str) -> str:
    """The text `model inspect` prints on stdout for ``-o <output>``."""
    if output == "table":
        return _summary(metadata)
    document = metadata_document(metadata)
    if output == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _cost(inspection: Inspection) -> str:
    unit = "HTTP request" if inspection.metadata.source.startswith("hf://") else "file"
    plural = "" if inspection.reads == 1 else "s"
    return (
        f"read {inspection.bytes_read} bytes in {inspection.reads} {unit}{plural} "
        "(JSON files and safetensors headers only)\n"
    )


def run_model_command(args: argparse.Namespace) -> int:
    """Run the parsed `kubectl ome model ...` command line; returns the exit status."""
    try:
        inspection = inspect_model(args.source)
    except ModelFileError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    if args.verbose:
        sys.stderr.write(_cost(inspection))
    sys.stdout.write(render_inspection(inspection.metadata, args.output))
    sys.stdout.flush()
    return EXIT_OK
