"""`kubectl ome-selector model inspect DIR --against (CATALOG_DIR | cluster) [--model NAME]` (SPEC §10).

What the learned values would do before anyone writes them: for each catalog model the files are of, every
runtime's verdict for the model today and once its missing fields are learned, with the reasons, and the
InferenceServices whose verdict would move (:mod:`ome_selector.review.learned`).

``--against cluster`` reads the live cluster of the kubeconfig context (its namespace's BaseModels, runtimes
and InferenceServices, and every cluster-scoped model and runtime, as explain does); anything else is a file
or directory of manifests (a directory named ``cluster`` is written ``./cluster``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from ome_selector.api.resources import Kind, Model, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.render import escaped_json, escaped_yaml, render_table
from ome_selector.cli.sources import DEFAULT_NAMESPACE, FileSource, ObjectSource, SourceError, load_catalog
from ome_selector.modelfiles import ModelMetadata, describe_fill, fill_patch
from ome_selector.review.learned import LearnedVerdicts, compare, learned_model
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.messages import escape_controls

__all__ = ["CLUSTER", "AgainstError", "against_document", "inspect_against", "render_against"]

#: The value of ``--against`` that means the live cluster.
CLUSTER = "cluster"
_MODEL_KINDS = (Kind.BASE_MODEL.value, Kind.CLUSTER_BASE_MODEL.value)


class AgainstError(Exception):
    """A catalog that cannot be read, or no model to judge; ``str()`` is the one-line message."""


def _source(args: argparse.Namespace) -> ObjectSource:
    if args.against == CLUSTER:
        from ome_selector.cli.cluster_source import ClusterSource  # noqa: PLC0415 - only live mode loads it

        return ClusterSource(args.namespace, args.kubeconfig, args.context)
    return FileSource((args.against,), args.namespace or DEFAULT_NAMESPACE)


def _model_bodies(raw: Sequence[Any], namespace: str) -> dict[ObjectKey, tuple[Mapping[str, Any], bool]]:
    """Each model's body as read (and whether it came from a file), by key."""
    bodies: dict[ObjectKey, tuple[Mapping[str, Any], bool]] = {}
    for item in raw:
        body = item.body
        kind, metadata = body.get("kind"), body.get("metadata")
        if kind not in _MODEL_KINDS or not isinstance(metadata, Mapping):
            continue
        model_kind = Kind(kind)
        where = (metadata.get("namespace") or namespace) if model_kind.namespaced else None
        bodies[ObjectKey(model_kind, where, str(metadata.get("name")))] = (body, item.from_file)
    return bodies


def _storage_uri(body: Mapping[str, Any]) -> object:
    spec = body.get("spec")
    storage = spec.get("storage") if isinstance(spec, Mapping) else None
    return storage.get("storageUri") if isinstance(storage, Mapping) else None


def _targets(
    catalog: Catalog,
    bodies: Mapping[ObjectKey, tuple[Mapping[str, Any], bool]],
    source: str,
    model_name: str | None,
    namespace: str,
) -> list[Model]:
    """``--model``'s models (the BaseModel of the namespace, the ClusterBaseModel), else the models of the
    namespace and the cluster whose ``storageUri`` is the source as given."""
    models = [
        model
        for model in catalog.models()
        if model.namespace == namespace or not model.kind.namespaced
        if model.key in bodies
    ]
    if model_name is not None:
        return [model for model in models if model.name == model_name]
    return [model for model in models if _storage_uri(bodies[model.key][0]) == source]


def inspect_against(args: argparse.Namespace, metadata: ModelMetadata) -> list[LearnedVerdicts]:
    """The verdicts for every catalog model the files are of; AgainstError when there is none or the catalog
    cannot be read."""
    source = _source(args)
    try:
        raw = source.read()
        catalog = load_catalog(raw, source.namespace)
    except SourceError as error:
        raise AgainstError(str(error)) from error
    namespace = source.namespace
    where = "the cluster" if args.against == CLUSTER else args.against
    bodies = _model_bodies(raw, namespace)
    targets = _targets(catalog, bodies, metadata.source, args.model, namespace)
    if not targets:
        if args.model is not None:
            raise AgainstError(
                f"no BaseModel {namespace}/{args.model} nor ClusterBaseModel {args.model} in {where}"
            )
        raise AgainstError(
            f"no BaseModel of namespace {namespace} nor ClusterBaseModel in {where} has storageUri "
            f"{metadata.source}; name one with --model"
        )
    answers = []
    for model in sorted(targets, key=lambda found: (found.kind.namespaced, found.name)):
        body, from_file = bodies[model.key]
        fields = fill_patch(body.get("spec"), metadata)
        learned = learned_model(body, fields, from_file=from_file) if fields else model
        answers.append(
            compare(catalog, model, learned, fields, namespace, lookup=RuntimeLookup(args.runtime_lookup))
        )
    return answers


def against_document(answers: Sequence[LearnedVerdicts], metadata: ModelMetadata) -> dict[str, Any]:
    """The ``-o json``/``-o yaml`` document (SPEC §10)."""
    models = []
    for answer in answers:
        lost = {(item.namespace, item.name) for item in answer.lost}
        models.append(
            {
                "kind": answer.model.kind.value,
                "namespace": answer.model.namespace,
                "name": answer.model.name,
                "set": dict(answer.fields),
                "selected": {"today": answer.selected_today, "learned": answer.selected_learned},
                "runtimes": [row.document() for row in answer.rows],
                "inferenceServices": [
                    {
                        "namespace": change.namespace,
                        "name": change.name,
                        "today": change.before.document() if change.before is not None else None,
                        "learned": change.after.document() if change.after is not None else None,
                        "losesRuntime": (change.namespace, change.name) in lost,
                    }
                    for change in answer.changes
                ],
            }
        )
    return {"source": metadata.source, "models": models}


def render_against(answers: Sequence[LearnedVerdicts], metadata: ModelMetadata, output: str) -> str:
    """What `model inspect --against` prints for ``-o <output>``."""
    if output != "table":
        document = against_document(answers, metadata)
        return escaped_json(document) if output == "json" else escaped_yaml(document)
    parts = []
    for answer in answers:
        model = answer.model
        title = f"{model.kind.value} {model.namespace + '/' if model.namespace else ''}{model.name}"
        fields = answer.fields
        learned = ", ".join(describe_fill(fields, metadata)) if fields else "nothing (it sets every field)"
        today, once = answer.selected_today or "-", answer.selected_learned or "-"
        text = f"{escape_controls(title)}: once learned it sets {learned}\n"
        text += f"Selected today: {today}; once learned: {once}\n"
        rows = [
            (
                escape_controls(f"{row.kind}/{row.name}"),
                row.today,
                row.learned,
                escape_controls(row.learned_reason or row.today_reason or "-"),
            )
            for row in answer.rows
        ]
        text += "\n" + render_table(("RUNTIME", "TODAY", "ONCE LEARNED", "REASON (ONCE LEARNED)"), rows)
        for item in answer.lost:
            where = escape_controls(f"{item.namespace}/{item.name}")
            text += f"\nInferenceService {where} loses {item.runtime}: {escape_controls(item.reason)}\n"
        parts.append(text)
    return "\n".join(parts)
