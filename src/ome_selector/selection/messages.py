"""Every user-facing text of runtime selection: reasons (SPEC §3, §9), condition and event messages (SPEC §5),
the capped no-runtime message, and the admission warnings about size values and operators (SPEC §7).

Only text is built here; the decisions are made by :mod:`.matcher`, :mod:`.explain` and :mod:`.outcome`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = [
    "ADMISSION_WARNING_LIMIT",
    "MESSAGE_LIMIT",
    "REASON_ACCELERATOR",
    "REASON_DISABLED",
    "advisory",
    "autoselect_disabled_reason",
    "format_label",
    "format_not_supported_reason",
    "min_above_max_warning",
    "model_disabled",
    "model_not_found",
    "model_pending",
    "model_pending_reason",
    "no_runtime_message",
    "not_a_parameter_count_warning",
    "runtime_disabled",
    "runtime_not_found",
    "runtime_selected",
    "runtime_specified",
    "runtime_specified_unsupported",
    "score_reason",
    "size_outside_reason",
    "truncate",
    "unknown_operator_warning",
]

#: Condition messages, events and admission denials carry at most this many characters (SPEC §5).
MESSAGE_LIMIT = 1024
#: Admission warnings are cut to this many characters, ending in "…" (SPEC §7).
ADMISSION_WARNING_LIMIT = 256
ELLIPSIS = "…"

# --- §3 reasons
# -----------------------------------------------------------------------------------------------

REASON_DISABLED = "runtime is disabled"
REASON_ACCELERATOR = "runtime does not support the required accelerator class"
NO_SUPPORTED_FORMATS = "no supported formats defined"


def model_pending_reason(model: str) -> str:
    return f"model {model} has no modelFormat yet"


def format_label(
    format_name: str,
    *,
    format_version: str | None,
    architecture: str | None,
    quantization: str | None,
    framework_name: str | None,
    framework_version: str | None,
) -> str:
    """``mt:<format>[:<version>][:<arch>][:<quant>][:<framework>[:<frameworkVersion>]]`` (SPEC §3.3)."""
    parts = ["mt:" + format_name]
    if format_version is not None:
        parts.append(format_version)
    if architecture is not None:
        parts.append(architecture)
    if quantization is not None:
        parts.append(quantization)
    if framework_name is not None:
        parts.append(framework_name)
        if framework_version is not None:
            parts.append(framework_version)
    return ":".join(parts)


def format_not_supported_reason(label: str, entry_reasons: Sequence[str]) -> str:
    tail = "; ".join(entry_reasons) if entry_reasons else NO_SUPPORTED_FORMATS
    return f"model format '{label}' not in supported formats: {tail}"


def size_outside_reason(size: str, interval: str) -> str:
    return f"model size {size} is outside supported range {interval}"


def interval_text(minimum: str | None, maximum: str | None) -> str | None:
    """``[<min>, <max>]``, ``[<min>, inf)`` or ``(-inf, <max>]`` with the values as written; None without
    bounds."""
    if minimum is None and maximum is None:
        return None
    lower = f"[{minimum}" if minimum is not None else "(-inf"
    upper = f"{maximum}]" if maximum is not None else "inf)"
    return f"{lower}, {upper}"


def autoselect_disabled_reason(format_name: str) -> str:
    return f"autoSelect is not enabled for the matching format {format_name}"


def score_reason(score: int) -> str:
    return f"auto-select score is {score}"


# --- §5 condition messages
# --------------------------------------------------------------------------------------


def runtime_selected(kind: str, name: str, score: int) -> str:
    return f"selected {kind} {name} (score {score})"


def runtime_specified(kind: str, name: str) -> str:
    return f"using specified {kind} {name}"


def runtime_specified_unsupported(kind: str, name: str, model: str, reason: str) -> str:
    return truncate(f"using specified {kind} {name}; it does not declare support for model {model}: {reason}")


def advisory(runtime: str, model: str, reason: str) -> str:
    """The ``RuntimeCompatibilityAdvisory`` event text, also the admission warning for a named runtime."""
    return truncate(f"runtime {runtime} does not declare support for model {model}: {reason}")


def runtime_disabled(is_cluster: bool, name: str) -> str:
    scope = "cluster-scoped" if is_cluster else "namespace-scoped"
    return f"{scope} runtime {name} is disabled"


def runtime_not_found(name: str, namespace: str) -> str:
    return f"runtime {name} not found in namespace {namespace} or at cluster scope"


def model_not_found(name: str, namespace: str) -> str:
    return f"model {name} not found: no BaseModel in namespace {namespace} and no ClusterBaseModel"


def model_disabled(name: str) -> str:
    return f"model {name} is disabled"


def model_pending(name: str) -> str:
    return f"model {name} has no modelFormat yet; runtime selection waits for it"


def no_runtime_message(
    *,
    model: str,
    namespaced_count: int,
    cluster_count: int,
    entries: Iterable[str],
    other_formats: int,
    isvc: str,
    namespace: str,
    limit: int = MESSAGE_LIMIT,
) -> str:
    """The SPEC §5 no-runtime message, cut to ``limit`` characters.

    ``entries`` are the runtimes with an entry for the model's format, already written as ``ns/name (reason)``
    or ``name (reason)`` and in order; it is consumed lazily, only as far as the text can hold, so reasons can
    be computed on demand. ``other_formats`` counts the other runtimes checked. When the text is
    too long, the entries that do not fit (and the other-formats clause, which comes last) are replaced by ``;
    … <m> more (kubectl ome runtime explain --isvc <isvc> -n <ns>)``, where ``m`` counts the checked runtimes
    the text no longer names (``checked - shown``).
    """
    total = namespaced_count + cluster_count
    head = (
        f"no runtime supports model {model} "
        f"(checked {total} runtimes: {namespaced_count} namespace-scoped, {cluster_count} cluster-scoped): "
    )
    taken: list[str] = []
    length = len(head)
    for entry in entries:
        taken.append(entry)
        length += len(entry) + (len("; ") if len(taken) > 1 else 0)
        if length > limit:
            break
    else:
        items = list(taken)
        if other_formats:
            items.append(f"{other_formats} runtimes serve other formats")
        if total == 0:
            items = ["no runtimes are installed"]
        full = head + "; ".join(items)
        if len(full) <= limit:
            return full

    def marker(shown: int) -> str:
        return f"{ELLIPSIS} {total - shown} more (kubectl ome runtime explain --isvc {isvc} -n {namespace})"

    shown = 0
    text = head
    for entry in taken:
        candidate = text + ("; " if shown else "") + entry
        if len(candidate) + len("; ") + len(marker(shown + 1)) > limit:
            break
        text = candidate
        shown += 1
    result = text + ("; " if shown else "") + marker(shown)
    return truncate(result, limit)


def truncate(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + ELLIPSIS


def admission_warning(text: str) -> str:
    """An admission warning cut to 256 characters, ending in "…" (SPEC §7)."""
    return truncate(text, ADMISSION_WARNING_LIMIT)


# --- §7 admission warnings about values
# ----------------------------------------------------------------------


def not_a_parameter_count_warning(path: str, value: str, suggestion: str) -> str:
    return (
        f'{path} "{value}" is not a parameter count and reads as 0; '
        f"write a number with an optional M, B or T suffix, such as {suggestion}"
    )


def min_above_max_warning(minimum: str, maximum: str) -> str:
    return (
        f'spec.modelSizeRange.min "{minimum}" is above max "{maximum}", '
        "so every model with a size is rejected"
    )


def unknown_operator_warning(path: str, value: str) -> str:
    return f'{path} "{value}" is not a known operator, so this entry matches no versioned model'
