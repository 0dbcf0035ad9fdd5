"""`kubectl ome-selector model inspect`: what a model's files say about it (SPEC §10).

It reads a local Hugging Face-layout folder or ``hf://ORG/NAME[@REVISION]`` (JSON files and safetensors
headers only, never weights) and prints the learned metadata as a summary, or the §10 JSON/YAML document.
With ``--apply KIND/NAME`` it writes the learned fields that BaseModel or ClusterBaseModel lacks instead
(:mod:`.model_apply`) and prints what it set.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ome_selector.api.resources import Kind
from ome_selector.cli.arguments import add_cluster_arguments, add_output_argument, add_subcommand, kind_names
from ome_selector.cli.model_against_arguments import add_against_arguments, against_complaint
from ome_selector.cli.output import NAME, JsonPathError, is_generic, object_name, render_generic
from ome_selector.cli.render import escaped_json, escaped_yaml, render_table
from ome_selector.modelfiles import (
    Inspection,
    ModelFileError,
    ModelMetadata,
    describe_fill,
    inspect_model,
    metadata_document,
)
from ome_selector.modelfiles.estimate import ESTIMATED_MODEL_TYPES
from ome_selector.selection.messages import escape_controls

if TYPE_CHECKING:
    from ome_selector.cli.model_apply import Applied

__all__ = [
    "OUTPUT_FORMATS",
    "QUANT_AWARE_RULE",
    "add_model_command",
    "apply_target",
    "render_applied",
    "render_inspection",
    "run_model_command",
]

OUTPUT_FORMATS = ("table", "json", "yaml", "manifest")
EXIT_OK = 0
EXIT_ERROR = 1

_DESCRIPTION = f"""\
Learn a model's size, format, architecture, framework, quantization and context length from its files, as
OME's model agent does: config.json (or model_index.json for a diffusers pipeline), ModelOpt's
hf_quant_config.json beside it, and the safetensors headers (model.safetensors, or the shards of
model.safetensors.index.json). Of each safetensors file only the 8-byte length and the JSON header are read,
never the weights. For a quantized checkpoint the count is OME's: a tensor packing 4-bit values counts each
value (unless the quantization config's exclusions name it), scales and zero points are not parameters;
"quantAware" in -o json (and the table's QUANTAWARE column) says which rule counted each file.

SOURCE is a local folder or hf://ORG/NAME[@REVISION] on the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN honoured;
only range requests for the headers). Without safetensors weights the size is estimated from config.json for
these model types: {", ".join(ESTIMATED_MODEL_TYPES)}.

With --apply KIND/NAME (KIND basemodel or clusterbasemodel, any case) it patches that model in the cluster
with the learned fields it does not set (a merge patch under field manager ome-selector, guarded by the
resourceVersion read: nothing anyone set is ever overwritten) and prints what it set. The cluster is the
current kubeconfig context's (or --kubeconfig/--context); a BaseModel's namespace is -n, else the context's,
else "default".

With --against CATALOG_DIR (manifests) or --against cluster (the live cluster) it writes nothing and shows,
for the catalog's model of these files (--model NAME, else the models whose storageUri is SOURCE), every
runtime's verdict today and once the learned fields are written, and the InferenceServices that would lose
their runtime."""

_EPILOG = """\
examples:
  kubectl ome-selector model inspect ./models/llama-3.2-1b
  kubectl ome-selector model inspect hf://Qwen/Qwen2.5-0.5B -o json
  kubectl ome-selector model inspect hf://meta-llama/Llama-3.2-3B@main -v
  kubectl ome-selector model inspect hf://Qwen/Qwen3-8B --apply clusterbasemodel/qwen3-8b
  kubectl ome-selector model inspect ./models/llama --apply basemodel/llama -n team-a
  kubectl ome-selector model inspect hf://openai/gpt-oss-20b --against cluster
  kubectl ome-selector model inspect ./gpt-oss-20b --against ./catalog --model gpt-oss-20b -o json

exit status: 0 when the model could be read (and, with --apply, patched or already complete); 1 on a usage
error, a missing, unreadable or malformed file, or a model that cannot be read or patched."""

EMPTY = "-"


def add_model_command(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add `model inspect` to the `kubectl ome-selector` subcommands ``commands`` (an argparse subparsers
    action)."""
    model = commands.add_parser("model", help="inspect model files", description="Inspect model files.")
    model_commands = model.add_subparsers(
        dest="model_command", metavar="COMMAND", required=True, parser_class=parser_class
    )
    inspect_parser = add_subcommand(
        model_commands,
        "inspect",
        usage=(
            "%(prog)s (DIR | hf://ORG/NAME[@REVISION]) [-o table|json|yaml|name|jsonpath=TEMPLATE] [-v]\n"
            "       [-o manifest [--kind basemodel|clusterbasemodel] [--name NAME] [-n NAMESPACE]]\n"
            "       [--apply KIND/NAME [-n NAMESPACE] [--kubeconfig PATH] [--context NAME]]\n"
            "       [--against (CATALOG_DIR | cluster) [--model NAME] [-n NAMESPACE]] [-h]"
        ),
        summary="learn a model's size and format from its files",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    inspect_parser.add_argument("source", metavar="SOURCE", help="model folder or hf://ORG/NAME[@REVISION]")
    add_output_argument(inspect_parser, OUTPUT_FORMATS)
    inspect_parser.add_argument(
        "-v", "--verbose", action="store_true", help="report on stderr how many bytes were read"
    )
    manifest = inspect_parser.add_argument_group("-o manifest")
    manifest.add_argument(
        "--kind",
        metavar="KIND",
        type=_manifest_kind,
        default=Kind.CLUSTER_BASE_MODEL,
        help="the manifest's kind: clusterbasemodel (cbm, the default) or basemodel (bm; its namespace -n)",
    )
    manifest.add_argument(
        "--name", metavar="NAME", help="the manifest's name (default: from SOURCE's last segment)"
    )
    cluster = inspect_parser.add_argument_group("writing to the cluster")
    cluster.add_argument(
        "--apply",
        metavar="KIND/NAME",
        type=apply_target,
        help="set the learned fields this BaseModel or ClusterBaseModel lacks (basemodel/NAME, "
        "clusterbasemodel/NAME)",
    )
    cluster.add_argument(
        "-n", "--namespace", metavar="NAMESPACE", help="namespace of a BaseModel (with --apply)"
    )
    add_cluster_arguments(cluster, when="with --apply or --against cluster")
    add_against_arguments(inspect_parser)


_APPLY_KINDS = kind_names((Kind.BASE_MODEL, Kind.CLUSTER_BASE_MODEL))


def _manifest_kind(text: str) -> Kind:
    kind = _APPLY_KINDS.get(text.lower())
    if kind is None:
        raise argparse.ArgumentTypeError(f"expected basemodel or clusterbasemodel, got {text!r}")
    return kind


def apply_target(text: str) -> tuple[Kind, str]:
    """``KIND/NAME`` of ``--apply``: KIND basemodel or clusterbasemodel in any case (also plural, ``bm``,
    ``cbm``), NAME not empty."""
    kind_text, slash, name = text.partition("/")
    kind = _APPLY_KINDS.get(kind_text.lower())
    if not slash or kind is None or not name or "/" in name:
        raise argparse.ArgumentTypeError(
            f"expected KIND/NAME with KIND basemodel or clusterbasemodel, got {text!r}"
        )
    return kind, name


def _name_version(name: str | None, version: str | None) -> str:
    if name is None:
        return EMPTY
    return f"{name} {version}" if version else name


#: How the count was made, for the table (SPEC §10: the quantization-aware rule, or every stored element).
QUANT_AWARE_RULE = (
    "exact, quantization-aware: packed 4-bit elements count every value they hold, scales and zero points "
    "not counted"
)


def _counted_by(metadata: ModelMetadata) -> str:
    if metadata.estimated:
        return "estimated from config.json"
    return QUANT_AWARE_RULE if metadata.quant_aware else "exact"


def _summary(metadata: ModelMetadata) -> str:
    count = metadata.parameter_count
    parameters = EMPTY if count is None else f"{count} ({_counted_by(metadata)})"
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
    # Every value with SPEC §7's escapes (SPEC §10.4): the source as given, and learned strings too, whatever
    # their grammars (SPEC §10.3) already keep out.
    text = "".join(f"{label.ljust(width)}{escape_controls(value)}\n" for label, value in rows)
    if metadata.files:
        files = [
            (escape_controls(file.name), str(file.tensors), str(file.parameters), _flag(file.quant_aware))
            for file in metadata.files
        ]
        text += "\n" + render_table(("FILE", "TENSORS", "PARAMETERS", "QUANTAWARE"), files)
    text += "".join(f"\nNote: {note}\n" for note in metadata.notes)
    return text


def _flag(value: bool) -> str:
    return "true" if value else "false"


def render_inspection(metadata: ModelMetadata, output: str) -> str:
    """The text `model inspect` prints on stdout for ``-o <output>``."""
    if output == "table":
        return _summary(metadata)
    document = metadata_document(metadata)
    if is_generic(output):
        if output == NAME:
            raise JsonPathError(
                "-o name names the model --apply KIND/NAME writes; without --apply there is none"
            )
        return render_generic(output, document, ())
    return escaped_json(document) if output == "json" else escaped_yaml(document)


def render_applied(applied: Applied, metadata: ModelMetadata, output: str) -> str:
    """What `model inspect --apply` prints on stdout: the fields it set, or that the model lacked none."""
    key = applied.key
    if output != "table":
        document = {
            "kind": key.kind.value,
            "namespace": key.namespace,
            "name": key.name,
            "set": applied.fields,
        }
        if is_generic(output):
            return render_generic(output, document, [object_name(key.kind.value, key.name)])
        return escaped_json(document) if output == "json" else escaped_yaml(document)
    if not applied.fields:
        return f"{key}: nothing to set (it already sets every field its files give)\n"
    return f"{key}: set " + ", ".join(describe_fill(applied.fields, metadata)) + "\n"


def _cost(inspection: Inspection) -> str:
    unit = "HTTP request" if inspection.metadata.source.startswith("hf://") else "file"
    plural = "" if inspection.reads == 1 else "s"
    return (
        f"read {inspection.bytes_read} bytes in {inspection.reads} {unit}{plural} "
        "(JSON files and safetensors headers only)\n"
    )


def _cluster_options_without_apply(args: argparse.Namespace) -> str | None:
    """The complaint about -n, --kubeconfig or --context given without --apply, if they are."""
    complaint = against_complaint(args)
    if complaint is not None:  # "" when --against takes the options given
        return complaint or None
    if args.apply is not None:
        return (
            "-o manifest writes no model: it cannot be combined with --apply"
            if args.output == "manifest"
            else None
        )
    manifest = args.output == "manifest"
    options = (
        ("-n", None if manifest else args.namespace),  # -o manifest: a BaseModel's namespace
        ("--kubeconfig", args.kubeconfig),
        ("--context", args.context),
    )
    given = [option for option, value in options if value is not None]
    if not given:
        return None
    return f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} only used with --apply"


def run_model_command(args: argparse.Namespace) -> int:
    """Run the parsed `kubectl ome-selector model ...` command line; returns the exit status."""
    if (complaint := _cluster_options_without_apply(args)) is not None:
        sys.stderr.write(f"error: {complaint}\n")
        return EXIT_ERROR
    try:
        inspection = inspect_model(args.source)
    except ModelFileError as error:
        sys.stderr.write(f"error: {escape_controls(str(error))}\n")
        return EXIT_ERROR
    if args.verbose:
        sys.stderr.write(_cost(inspection))
    if args.against is not None:
        from ome_selector.cli.model_against import AgainstError, inspect_against, render_against  # noqa: PLC0415

        try:
            answers = inspect_against(args, inspection.metadata)
            text = render_against(answers, inspection.metadata, args.output)
        except AgainstError as error:
            sys.stderr.write(f"error: {escape_controls(str(error))}\n")
            return EXIT_ERROR
    elif args.output == "manifest":
        from ome_selector.cli.model_manifest import ManifestError, render_manifest  # noqa: PLC0415

        try:
            text = render_manifest(inspection.metadata, args.kind, args.name, args.namespace)
        except ManifestError as error:
            sys.stderr.write(f"error: {escape_controls(str(error))}\n")
            return EXIT_ERROR
    elif args.apply is None:
        try:
            text = render_inspection(inspection.metadata, args.output)
        except JsonPathError as error:
            sys.stderr.write(f"error: {error}\n")
            return EXIT_ERROR
    else:
        # Only --apply pays for loading the Kubernetes client.
        from ome_selector.cli.model_apply import ApplyError, apply_metadata  # noqa: PLC0415

        kind, name = args.apply
        try:
            applied = apply_metadata(
                kind,
                name,
                inspection.metadata,
                namespace=args.namespace,
                kubeconfig=args.kubeconfig,
                context=args.context,
            )
        except ApplyError as error:
            sys.stderr.write(f"error: {escape_controls(str(error))}\n")
            return EXIT_ERROR
        text = render_applied(applied, inspection.metadata, args.output)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK
