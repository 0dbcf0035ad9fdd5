"""Every user-facing text of runtime selection: reasons (SPEC §3, §9), condition and event messages (SPEC §5),
the capped no-runtime message, and the admission warnings about size values and operators (SPEC §7).

Only text is built here; the decisions are made by :mod:`.matcher`, :mod:`.ranking` and :mod:`.outcome`.

Two rules hold for every builder (SPEC §7 v3, §8 "bounded resources"):

- no text carries a control character: a value that holds one is shown quoted, with its control characters
  escaped (``"4B\\n"``); a value already shown in quotes has them escaped in place;
- the work is bounded by what is shown: the condition messages are cut to :data:`MESSAGE_LIMIT` characters,
  and builders whose text is cut never copy more of a value than the cut keeps.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ome_selector.api.paths import field_path
from ome_selector.selection.values import ValueProblem, ValueRule, suggestion_for

__all__ = [
    "ADDITIONAL_COMPONENTS_MISSING",
    "ADMISSION_WARNING_LIMIT",
    "ANOTHER_WRITER",
    "MESSAGE_LIMIT",
    "NIL",
    "PIPELINE_MISSING",
    "REASON_ACCELERATOR",
    "REASON_DISABLED",
    "RUNTIME_NAME_LIMIT",
    "UNKNOWN_MISMATCH",
    "additional_component_missing_reason",
    "admission_warning",
    "advisory",
    "auto_selected_warning",
    "autoselect_disabled_reason",
    "component_mismatch_reason",
    "component_missing_reason",
    "condition_conflict",
    "control_escapes",
    "escape_controls",
    "format_label",
    "format_not_supported_reason",
    "inheritance_cycle",
    "interval_text",
    "lint_quoted",
    "max_depth_exceeded",
    "min_above_max_warning",
    "mismatch_reason",
    "missing_requirement_reason",
    "mode_conflict_warning",
    "mode_mismatch_reason",
    "model_disabled",
    "model_not_found",
    "model_pending",
    "model_pending_reason",
    "name_tie",
    "no_runtime_entries_held",
    "no_runtime_message",
    "not_a_parameter_count_warning",
    "parent_not_a_name",
    "parent_not_found",
    "runtime_disabled",
    "runtime_entry",
    "runtime_not_found",
    "runtime_selected",
    "runtime_selection_changed",
    "runtime_specified",
    "runtime_specified_unresolved",
    "runtime_specified_unsupported",
    "runtime_unresolved",
    "scope_tie",
    "score_reason",
    "selected_runtime",
    "serving_runtime_not_found",
    "shown",
    "size_outside_reason",
    "size_range_tie",
    "truncate",
    "unknown_operator_warning",
    "unknown_version_operator_reason",
    "unrequired_value_reason",
    "unrequired_version_reason",
    "value_finding",
    "value_warning",
]

#: Condition messages, events and admission denials carry at most this many characters (SPEC §5).
MESSAGE_LIMIT = 1024
#: Admission warnings are cut to this many characters, ending in "…" (SPEC §7).
ADMISSION_WARNING_LIMIT = 256
ELLIPSIS = "…"

# --- values in texts
# ------------------------------------------------------------------------------------------

_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
#: Characters a text never carries as they are: the control characters (Unicode category Cc: C0, DEL, C1),
#: the line and paragraph separators (a terminal or str.splitlines breaks the line there), and the
#: bidirectional formatting characters, which reorder what a reader sees ("Trojan Source", CVE-2021-42574).
_ESCAPED = [code for code in range(0x100) if unicodedata.category(chr(code)) == "Cc"] + [
    0x061C,  # arabic letter mark
    0x200E,  # left-to-right mark
    0x200F,  # right-to-left mark
    *range(0x202A, 0x202F),  # embeddings and overrides (LRE, RLE, PDF, LRO, RLO)
    *range(0x2066, 0x206A),  # isolates (LRI, RLI, FSI, PDI)
    0x2028,  # line separator
    0x2029,  # paragraph separator
]
#: How each is written: ``\n``, ``\x1b``, ``\u202e``.
_CONTROL_ESCAPES = {
    code: _NAMED_ESCAPES.get(chr(code), f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    for code in _ESCAPED
}


def control_escapes() -> dict[int, str]:
    """Each escaped character's code and how a text writes it (``\\x1b``, ``\\u202e``): for renderers
    that escape the same set their own way (SPEC §10.4)."""
    return dict(_CONTROL_ESCAPES)


def escape_controls(value: str) -> str:
    """``value`` with each control character written as an escape (``\\n``, ``\\x1b``, ``\\u202e`` ...)."""
    # isprintable() is false for every escaped character and true for most text: the fast path.
    if value.isprintable():
        return value
    return value.translate(_CONTROL_ESCAPES)


def _has_control(value: str) -> bool:
    # An escape is longer than the character it stands for: a longer translation means there was one.
    return not value.isprintable() and len(value.translate(_CONTROL_ESCAPES)) != len(value)


def shown(value: str, limit: int | None = None) -> str:
    """``value`` as a text shows it: as written, or quoted with its control characters escaped when it has
    any. With ``limit``, only the first ``limit`` characters are written (the caller cuts its text there);
    whether to quote still depends on the whole value (one scan at C speed), so the cut text starts exactly
    like the whole one."""
    if value.isprintable():  # the common case: no control character, nothing to escape
        return value if limit is None else value[:limit]
    quoted = _has_control(value)
    if limit is not None and len(value) > limit:
        value = value[:limit]
    escaped = escape_controls(value)
    return f'"{escaped}"' if quoted else escaped


def _quoted(value: str, limit: int | None = None) -> str:
    """``value`` in double quotes, control characters escaped (a warning quotes every value it names)."""
    if limit is not None and len(value) > limit:
        value = value[:limit]
    return f'"{escape_controls(value)}"'


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


# --- §3 reasons
# -----------------------------------------------------------------------------------------------

REASON_DISABLED = "runtime is disabled"
REASON_ACCELERATOR = "runtime does not support the required accelerator class"
NO_SUPPORTED_FORMATS = "no supported formats defined"
UNKNOWN_MISMATCH = "unknown mismatch"
ENTRY_REASON_SEPARATOR = "; "
MISMATCH_SEPARATOR = ", "


def model_pending_reason(model: str, limit: int | None = None) -> str:
    return f"model {shown(model, limit)} has no modelFormat yet"


def format_label(
    format_name: str,
    *,
    format_version: str | None,
    architecture: str | None,
    quantization: str | None,
    framework_name: str | None,
    framework_version: str | None,
) -> str:
    """``mt:<format>[:<version>][:<arch>][:<quant>][:<framework>[:<frameworkVersion>]]`` (SPEC §3.4), control
    characters escaped (the label is shown in quotes)."""
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
    return escape_controls(":".join(parts))


def format_not_supported_reason(label: str, entry_reasons: Iterable[str], limit: int | None = None) -> str:
    """``model format '<label>' not in supported formats: <entry reasons joined by "; ">``.

    ``entry_reasons`` is consumed lazily: with ``limit``, only until the text is longer than ``limit``
    characters, and the text is then cut after ``limit`` characters with "…" (a caller that cuts its own text
    at ``limit`` gets the same result as from the whole reason, without building it).
    """
    text = f"model format '{label}' not in supported formats: "
    if limit is None:
        return text + (ENTRY_REASON_SEPARATOR.join(entry_reasons) or NO_SUPPORTED_FORMATS)
    length = len(text)
    parts: list[str] = []
    for reason in entry_reasons:
        length += len(reason) + (len(ENTRY_REASON_SEPARATOR) if parts else 0)
        parts.append(reason)
        if limit is not None and length > limit:
            return (text + ENTRY_REASON_SEPARATOR.join(parts))[:limit] + ELLIPSIS
    return text + (ENTRY_REASON_SEPARATOR.join(parts) if parts else NO_SUPPORTED_FORMATS)


# The reason builders below take ``limit``: with it, no value is looked at beyond its first ``limit``
# characters (the caller cuts the reason there).


def mismatch_reason(what: str, model_value: str, runtime_value: str, limit: int | None = None) -> str:
    """``<what> mismatch (model=<m>, runtime=<r>)``, e.g. ``format version mismatch (model=1, runtime=2)``;
    ``what`` is already shown."""
    return f"{what} mismatch (model={shown(model_value, limit)}, runtime={shown(runtime_value, limit)})"


def missing_requirement_reason(what: str, required: str, limit: int | None = None) -> str:
    """``model has no <what> but runtime requires <required>``."""
    return f"model has no {what} but runtime requires {shown(required, limit)}"


def unrequired_value_reason(what: str, model_value: str, limit: int | None = None) -> str:
    """``model has <what> <value> but runtime has no <what> requirement``."""
    return f"model has {what} {shown(model_value, limit)} but runtime has no {what} requirement"


def unrequired_version_reason(kind: str) -> str:
    """``model has <kind> version but runtime has no version requirement`` (upstream names no value here)."""
    return f"model has {kind} version but runtime has no version requirement"


def unknown_version_operator_reason(operator: str, limit: int | None = None) -> str:
    """In place of a version clause when the entry's operator is not one of the three known (SPEC §9 v3)."""
    if limit is not None:
        operator = operator[:limit]
    return f"unknown version operator '{escape_controls(operator)}'"


PIPELINE_MISSING = "diffusion pipeline required by runtime but not specified in model"
ADDITIONAL_COMPONENTS_MISSING = "diffusion pipeline missing required additional components"
#: How an absent model pipeline class is printed (Go's nil pointer).
NIL = "<nil>"


def component_missing_reason(name: str, limit: int | None = None) -> str:
    return f"component {shown(name, limit)} required by runtime but not specified in model"


def component_mismatch_reason(
    name: str, part: str, model_value: str, runtime_value: str, limit: int | None = None
) -> str:
    """``<component> <library|type> mismatch (model=<m>, runtime=<r>)``."""
    return mismatch_reason(f"{shown(name, limit)} {part}", model_value, runtime_value, limit)


def additional_component_missing_reason(name: str, limit: int | None = None) -> str:
    return f"diffusion component {shown(name, limit)} missing in model"


def size_outside_reason(size: str, interval: str, limit: int | None = None) -> str:
    """``model size <size> is outside supported range <interval>``; ``interval`` is :func:`interval_text`'s.
    With ``limit``, at most that many characters of each are looked at."""
    if limit is not None:
        interval = interval[:limit]
    return f"model size {shown(size, limit)} is outside supported range {interval}"


def interval_text(minimum: str | None, maximum: str | None) -> str | None:
    """``[<min>, <max>]``, ``[<min>, inf)`` or ``(-inf, <max>]`` with the values as written; None without
    bounds."""
    if minimum is None and maximum is None:
        return None
    lower = f"[{shown(minimum)}" if minimum is not None else "(-inf"
    upper = f"{shown(maximum)}]" if maximum is not None else "inf)"
    return f"{lower}, {upper}"


def mode_mismatch_reason(component: str, runtime_mode: str, requested_mode: str) -> str:
    """SPEC §3.3: ``runtime <component> deployment mode <runtime mode> does not match requested <component>
    deployment mode <isvc mode>`` (the modes are among the four valid ones, so nothing needs escaping)."""
    return (
        f"runtime {component} deployment mode {runtime_mode} does not match requested {component} "
        f"deployment mode {requested_mode}"
    )


def autoselect_disabled_reason(format_name: str, limit: int | None = None) -> str:
    return f"autoSelect is not enabled for the matching format {shown(format_name, limit)}"


def score_reason(score: int) -> str:
    return f"auto-select score is {score}"


# --- §5 condition messages
# --------------------------------------------------------------------------------------
# Names and reasons reach these builders unbounded (a name from a file, a reason listing every entry): each
# looks at no more of a value than its cut text can hold.


def runtime_selected(kind: str, name: str, score: int, tie: str = "") -> str:
    """SPEC §5: ``selected <Kind> <name> (score <n>)``, with ``tie`` (one of the ``*_tie`` texts below) before
    the closing parenthesis when a step after the score decided between rank 1 and rank 2."""
    return truncate(f"selected {kind} {shown(name, MESSAGE_LIMIT)} (score {score}{tie})")


_SELECTED = re.compile(
    r"selected (ServingRuntime|ClusterServingRuntime) ([a-z0-9][a-z0-9.-]*) \(score \d+(?:; [^\n]*)?\)"
)


def selected_runtime(message: str) -> tuple[str, str] | None:
    """The kind and name of the runtime a :func:`runtime_selected` message names (with or without the step
    that decided), or None for any other text (e.g. a message another writer stored); the SPEC §12 switch
    event reads the product's own previous write with it."""
    found = _SELECTED.fullmatch(message)
    return (found.group(1), found.group(2)) if found else None


def scope_tie(runner_up_kind: str, runner_up: str, runner_up_score: int) -> str:
    """SPEC §5: ``; namespace-scoped before <Kind> <name> at score <m>`` (rank 2 is cluster-scoped and scores
    at least as high)."""
    runner_up = shown(runner_up, MESSAGE_LIMIT)
    return f"; namespace-scoped before {runner_up_kind} {runner_up} at score {runner_up_score}"


def size_range_tie(runner_up: str, score: int, own_range: str | None, runner_up_range: str | None) -> str:
    """SPEC §5: ``; closer size range than <name> at score <n>: <range> vs <range>`` (``none`` without
    one)."""
    ranges = f"{own_range or 'none'} vs {runner_up_range or 'none'}"
    return f"; closer size range than {shown(runner_up, MESSAGE_LIMIT)} at score {score}: {ranges}"


def name_tie(runner_up: str, *, sized: bool) -> str:
    """SPEC §5: ``; tied with <name> on score[ and size distance], first by name``."""
    on = "score and size distance" if sized else "score"
    return f"; tied with {shown(runner_up, MESSAGE_LIMIT)} on {on}, first by name"


def runtime_selection_changed(old_kind: str, old_name: str, new_kind: str, new_name: str, score: int) -> str:
    """The ``RuntimeSelectionChanged`` event (SPEC §12): the score is the new runtime's."""
    old_name, new_name = shown(old_name, MESSAGE_LIMIT), shown(new_name, MESSAGE_LIMIT)
    return truncate(
        f"selected runtime changed from {old_kind} {old_name} to {new_kind} {new_name} (score {score})"
    )


#: Who wrote a ``RuntimeReady`` when the managed fields name no field manager for the conditions (SPEC §5).
ANOTHER_WRITER = "another writer"


def condition_conflict(manager: str) -> str:
    """The ``RuntimeReadyConflict`` event (SPEC §5 "Another writer"); ``manager`` is a field manager's name as
    the managed fields give it, or :data:`ANOTHER_WRITER`."""
    return truncate(
        f"RuntimeReady is also written by {shown(manager, MESSAGE_LIMIT)}; "
        "beside OME v1.3 or later run ome-selector with --report-only"
    )


def runtime_specified(kind: str, name: str) -> str:
    return truncate(f"using specified {kind} {shown(name, MESSAGE_LIMIT)}")


def runtime_specified_unsupported(kind: str, name: str, model: str, reason: str) -> str:
    """``reason`` is already escaped (it is one of the §3 reasons)."""
    name, model = shown(name, MESSAGE_LIMIT), shown(model, MESSAGE_LIMIT)
    return truncate(f"using specified {kind} {name}; it does not declare support for model {model}: {reason}")


def advisory(runtime: str, model: str, reason: str) -> str:
    """The ``RuntimeCompatibilityAdvisory`` event text, also the admission warning for a named runtime."""
    runtime, model = shown(runtime, MESSAGE_LIMIT), shown(model, MESSAGE_LIMIT)
    return truncate(f"runtime {runtime} does not declare support for model {model}: {reason}")


def runtime_disabled(is_cluster: bool, name: str) -> str:
    scope = "cluster-scoped" if is_cluster else "namespace-scoped"
    return truncate(f"{scope} runtime {shown(name, MESSAGE_LIMIT)} is disabled")


def runtime_not_found(name: str, namespace: str) -> str:
    """The not-found message of SPEC §1 for every lookup but that of kind ``ServingRuntime``."""
    name, namespace = shown(name, MESSAGE_LIMIT), shown(namespace, MESSAGE_LIMIT)
    return truncate(f"runtime {name} not found in namespace {namespace} or at cluster scope")


def serving_runtime_not_found(name: str, namespace: str) -> str:
    """The not-found message of SPEC §1 for ``spec.runtime.kind: ServingRuntime`` (looked up in the
    namespace only)."""
    name, namespace = shown(name, MESSAGE_LIMIT), shown(namespace, MESSAGE_LIMIT)
    return truncate(f"ServingRuntime {name} not found in namespace {namespace}")


def runtime_unresolved(name: str, chain_error: str) -> str:
    """SPEC §5 ``RuntimeInheritanceError``: ``runtime <name> cannot be resolved: <chain error>``; the chain
    error is already escaped."""
    return truncate(f"runtime {shown(name, MESSAGE_LIMIT)} cannot be resolved: {chain_error}")


def runtime_specified_unresolved(kind: str, name: str, chain_error: str) -> str:
    """SPEC §5, a broken chain with ``autoSync: false``: ``using specified <Kind> <name>; live runtime cannot
    be resolved: <chain error>``."""
    return truncate(
        f"using specified {kind} {shown(name, MESSAGE_LIMIT)}; live runtime cannot be resolved: {chain_error}"
    )


# --- §1 chain errors
# ------------------------------------------------------------------------------------------

#: The longest runtime name (a DNS-1123 subdomain); a longer ``ome.io/inherit-from`` value is cut there.
RUNTIME_NAME_LIMIT = 253


def _names(names: Iterable[str]) -> str:
    return " ".join(shown(name, RUNTIME_NAME_LIMIT) for name in names)


def parent_not_found(parent: str, names: Iterable[str]) -> str:
    return f'inherit-from parent "{escape_controls(parent)}" not found (chain so far: [{_names(names)}])'


def parent_not_a_name(value: str, names: Iterable[str]) -> str:
    """The value cut to its first 253 characters followed by "…" when longer, control characters escaped."""
    cut = value[:RUNTIME_NAME_LIMIT] + (ELLIPSIS if len(value) > RUNTIME_NAME_LIMIT else "")
    return (
        f'inherit-from parent "{escape_controls(cut)}" is not a valid runtime name '
        f"(chain so far: [{_names(names)}])"
    )


def inheritance_cycle(names: Iterable[str], parent: str) -> str:
    return f"inheritance cycle detected: [{_names([*names, parent])}]"


def max_depth_exceeded(depth: int, names: Iterable[str]) -> str:
    return f"inheritance chain exceeds max depth {depth} (chain: [{_names(names)}])"


# --- §7 admission warnings of v4
# ---------------------------------------------------------------------------------------------


def auto_selected_warning(runtime: str, model: str) -> str:
    """SPEC §7: ``runtime <name> will be auto-selected for model <model>``."""
    runtime, model = shown(runtime, MESSAGE_LIMIT), shown(model, MESSAGE_LIMIT)
    return truncate(f"runtime {runtime} will be auto-selected for model {model}")


def mode_conflict_warning(engine_mode: str, decoder_mode: str) -> str:
    """SPEC §7: engine and decoder asking for different raw modes, one of them ``OMENative``. An empty mode
    is written ``""``, a value with control characters quoted and escaped; the admission warning's cut keeps
    at most :data:`ADMISSION_WARNING_LIMIT` characters, so no more of a value is copied."""
    engine, decoder = (
        shown(mode, ADMISSION_WARNING_LIMIT) if mode else '""' for mode in (engine_mode, decoder_mode)
    )
    return (
        f"spec.engine and spec.decoder ask for different deployment modes ({engine}, {decoder}); "
        "OME denies this: InvalidDeploymentModeCombination"
    )


def model_not_found(name: str, namespace: str) -> str:
    name, namespace = shown(name, MESSAGE_LIMIT), shown(namespace, MESSAGE_LIMIT)
    return truncate(f"model {name} not found: no BaseModel in namespace {namespace} and no ClusterBaseModel")


def model_disabled(name: str) -> str:
    return truncate(f"model {shown(name, MESSAGE_LIMIT)} is disabled")


def model_pending(name: str) -> str:
    return truncate(
        f"model {shown(name, MESSAGE_LIMIT)} has no modelFormat yet; runtime selection waits for it"
    )


def runtime_entry(namespace: str | None, name: str, reason: str) -> str:
    """One runtime as the no-runtime message lists it: ``<namespace>/<name> (<reason>)`` for a
    ServingRuntime (``namespace`` set), ``<name> (<reason>)`` for a ClusterServingRuntime."""
    where = f"{shown(namespace, MESSAGE_LIMIT)}/" if namespace is not None else ""
    return f"{where}{shown(name, MESSAGE_LIMIT)} ({reason})"


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

    ``entries`` are the runtimes with an entry for the model's format, already written by
    :func:`runtime_entry` and in order (nearest misses first); it is consumed lazily, only as far as the text
    can hold, so reasons can be computed on demand. ``other_formats`` counts the other runtimes checked. When
    the text is too long, the entries that do not fit (and the other-formats clause, which comes last) are
    replaced by ``; … <m> more (kubectl ome-selector runtime explain --isvc <isvc> -n <ns>)``, where ``m``
    counts the checked runtimes the text no longer names (``checked - shown``).
    """
    total = namespaced_count + cluster_count
    head = (
        f"no runtime supports model {shown(model, limit)} "
        f"(checked {_plural(total, 'runtime', 'runtimes')}: "
        f"{namespaced_count} namespace-scoped, {cluster_count} cluster-scoped): "
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
            items.append(_plural(other_formats, "runtime serves", "runtimes serve") + " other formats")
        if total == 0:
            items = ["no runtimes are installed"]
        full = head + "; ".join(items)
        if len(full) <= limit:
            return full

    isvc, namespace = shown(isvc, limit), shown(namespace, limit)

    def marker(shown_entries: int) -> str:
        more = total - shown_entries
        return f"{ELLIPSIS} {more} more (kubectl ome-selector runtime explain --isvc {isvc} -n {namespace})"

    count = 0
    text = head
    for entry in taken:
        candidate = text + ("; " if count else "") + entry
        if len(candidate) + len("; ") + len(marker(count + 1)) > limit:
            break
        text = candidate
        count += 1
    return truncate(text + ("; " if count else "") + marker(count), limit)


def no_runtime_entries_held(entries: Iterable[str], limit: int = MESSAGE_LIMIT) -> tuple[str, ...]:
    """The leading ``entries`` that :func:`no_runtime_message` can pull, whatever its head: pulled until their
    own text ("; "-joined) passes ``limit`` characters, the entry that passes it included.

    Given these in place of all the entries, :func:`no_runtime_message` writes the same text (with its head
    in front it stops pulling at that entry or sooner), so they can be kept and the message written for any
    InferenceService.
    """
    taken: list[str] = []
    length = -len("; ")
    for entry in entries:
        taken.append(entry)
        length += len("; ") + len(entry)
        if length > limit:
            break
    return tuple(taken)


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
# The webhook cuts these to 256 characters (or joins denials and cuts them to 1,024): a value is looked at
# only as far as that.


def not_a_parameter_count_warning(path: str, value: str, suggestion: str) -> str:
    return (
        f"{path} {_quoted(value, MESSAGE_LIMIT)} is not a parameter count and reads as 0; "
        f"write a number with an optional M, B or T suffix, such as {shown(suggestion, MESSAGE_LIMIT)}"
    )


def min_above_max_warning(minimum: str, maximum: str) -> str:
    return (
        f"spec.modelSizeRange.min {_quoted(minimum, MESSAGE_LIMIT)} is above max "
        f"{_quoted(maximum, MESSAGE_LIMIT)}, so every model with a size is rejected"
    )


def unknown_operator_warning(path: str, value: str) -> str:
    return (
        f"{path} {_quoted(value, MESSAGE_LIMIT)} is not a known operator, so this entry matches no versioned "
        "model"
    )


def value_warning(problem: ValueProblem) -> str:
    """The §7 admission warning of one value problem (the rules: :mod:`.values`)."""
    path = field_path(*problem.fields[0])
    if problem.rule is ValueRule.NOT_A_COUNT:
        (value,) = problem.values
        return not_a_parameter_count_warning(path, value, suggestion_for(value))
    if problem.rule is ValueRule.MIN_ABOVE_MAX:
        minimum, maximum = problem.values
        return min_above_max_warning(minimum, maximum)
    (operator,) = problem.values
    return unknown_operator_warning(path, operator)


# --- §11 lint findings about the same values
# ------------------------------------------------------------------------------------------
# A finding names its object first and says what to do; it shows at most this many characters of a value.
LINT_VALUE_LIMIT = 64


def lint_quoted(value: str) -> str:
    """A value as lint findings quote it: cut to :data:`LINT_VALUE_LIMIT` characters, ending in "…"."""
    cut = value if len(value) <= LINT_VALUE_LIMIT else value[:LINT_VALUE_LIMIT] + ELLIPSIS
    return f'"{cut}"'


def value_finding(subject: str, problem: ValueProblem) -> str:
    """The §11 finding (SIZE001, SIZE002, OPER001) of one value problem of ``subject`` (``Kind name``)."""
    path = field_path(*problem.fields[0])
    if problem.rule is ValueRule.NOT_A_COUNT:
        (value,) = problem.values
        return (
            f"{subject}: {path} {lint_quoted(value)} is not a parameter count and reads as 0; "
            f"write a number with an optional M, B or T suffix, such as {suggestion_for(value)}"
        )
    if problem.rule is ValueRule.MIN_ABOVE_MAX:
        minimum, maximum = problem.values
        return (
            f"{subject}: spec.modelSizeRange.min {lint_quoted(minimum)} is above max {lint_quoted(maximum)}, "
            "so every model with a size is rejected; swap the bounds or correct one of them"
        )
    (operator,) = problem.values
    return (
        f"{subject}: {path} {lint_quoted(operator)} is not a known operator, so the entry matches no "
        "versioned model; use Equal, GreaterThan or GreaterThanOrEqual"
    )
