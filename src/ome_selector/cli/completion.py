"""Shell completion for `ome-selector` and `kubectl-ome_selector`, from their argparse parsers.

Both CLIs answer a hidden ``__complete WORD... PARTIAL`` in cobra's format, which kubectl (1.26 and later)
expects from a plugin's ``kubectl_complete-<plugin>`` executable: one candidate a line
(``candidate<TAB>description``), then ``:<directive>`` (0: the shell may also complete file names, 4: it may
not). ``completion bash|zsh|fish``
prints a script that asks the same question, so the CLIs complete the same way on their own and under kubectl.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SHELLS", "add_completion_command", "answer", "complete", "handled", "script"]

#: cobra's ShellCompDirective values.
DIRECTIVE_DEFAULT = 0  # file names may be completed too
DIRECTIVE_NO_FILES = 4
SHELLS = ("bash", "zsh", "fish")
COMPLETE = "__complete"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    found: dict[str, tuple[argparse.ArgumentParser, str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found[name] = (sub, helps.get(name, ""))
    return found


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {
        option: action
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for option in action.option_strings
    }


def _takes_file(action: argparse.Action) -> bool:
    metavar = action.metavar if isinstance(action.metavar, str) else ""
    return action.type is Path or metavar.upper() in {"FILE", "PATH", "DIR"}


#: Names of objects for an option (its dest), given the words typed before and the partial word; None when
#: the option takes no object names (SPEC §6: `kubectl ome-selector` completes them from the cluster).
LiveNames = Callable[[str, Sequence[str], str], list[str] | None]


def complete(
    parser: argparse.ArgumentParser, words: Sequence[str], live: LiveNames | None = None
) -> tuple[list[str], int]:
    """The candidates for the last of ``words`` (the word being typed, maybe empty) and the directive."""
    *done, partial = list(words) or [""]
    current = parser
    expecting: argparse.Action | None = None
    positionals = 0  # of the current (sub)command, so far
    for word in done:
        if expecting is not None:
            expecting = None
            continue
        option = _options(current).get(word.split("=", 1)[0])
        if option is not None:
            if option.nargs != 0 and "=" not in word:
                expecting = option
            continue
        sub = _subcommands(current).get(word)
        if sub is not None:
            current, positionals = sub[0], 0
        else:
            positionals += 1
    if expecting is not None:
        names = live(expecting.dest, done, partial) if live is not None else None
        if names is not None:
            return names, DIRECTIVE_NO_FILES
        if expecting.choices:
            return [str(c) for c in expecting.choices if str(c).startswith(partial)], DIRECTIVE_NO_FILES
        return [], DIRECTIVE_DEFAULT if _takes_file(expecting) else DIRECTIVE_NO_FILES
    if partial.startswith("-"):
        options = _options(current)
        return [
            f"{option}\t{(action.help or '').split(' (')[0]}" if action.help else option
            for option, action in sorted(options.items())
            if option.startswith(partial)
        ], DIRECTIVE_NO_FILES
    subcommands = _subcommands(current)
    if subcommands:
        return [
            f"{name}\t{help_}" if help_ else name
            for name, (_, help_) in sorted(subcommands.items())
            if name.startswith(partial)
        ], DIRECTIVE_NO_FILES
    arguments = [
        action
        for action in current._actions
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction)
    ]
    if positionals < len(arguments) and (allowed := arguments[positionals].choices):
        choices = [str(choice) for choice in allowed]
        return [choice for choice in choices if choice.startswith(partial)], DIRECTIVE_NO_FILES
    # Other positional arguments (files for lint and what-if -f are options): the shell offers file names.
    return [], DIRECTIVE_DEFAULT


def answer(parser: argparse.ArgumentParser, words: Sequence[str], live: LiveNames | None = None) -> str:
    candidates, directive = complete(parser, words, live)
    return "".join(f"{line}\n" for line in candidates) + f":{directive}\n"


_BASH = """\
# bash completion for {prog} (`source <({prog} completion bash)`)
_{func}() {{
  local out line directive
  out=$({prog} __complete "${{COMP_WORDS[@]:1:COMP_CWORD}}" 2>/dev/null) || return
  directive=${{out##*:}}
  COMPREPLY=()
  while IFS= read -r line; do
    [[ $line == :* || -z $line ]] && continue
    COMPREPLY+=("${{line%%$'\\t'*}}")
  done <<<"$out"
  if ((${{#COMPREPLY[@]}} == 0)) && [[ $directive == 0 ]]; then
    mapfile -t COMPREPLY < <(compgen -f -- "${{COMP_WORDS[COMP_CWORD]}}")
  fi
}}
complete -o default -F _{func} {prog}
"""

_ZSH = """\
#compdef {prog}
# zsh completion for {prog} (`source <({prog} completion zsh)`)
_{func}() {{
  local -a candidates
  local out directive line
  out=$({prog} __complete "${{(@)words[2,CURRENT]}}" 2>/dev/null) || return
  directive=${{out##*:}}
  for line in ${{(f)out}}; do
    [[ $line == :* ]] && continue
    candidates+=("${{line//$'\\t'/:}}")
  done
  if (( ${{#candidates}} )); then
    _describe '{prog}' candidates
  elif [[ $directive == 0 ]]; then
    _files
  fi
}}
compdef _{func} {prog}
"""

_FISH = """\
# fish completion for {prog} (`{prog} completion fish | source`)
function __{func}_complete
    set -l words (commandline -opc) (commandline -ct)
    {prog} __complete $words[2..-1] 2>/dev/null | string match -v -r '^:'
end
complete -c {prog} -f -a '(__{func}_complete)'
"""


def script(prog: str, shell: str) -> str:
    """The completion script of ``prog`` for ``shell``."""
    template = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}[shell]
    return template.format(prog=prog, func=prog.replace("-", "_"))


def add_completion_command(commands: argparse._SubParsersAction[Any]) -> None:
    completion = commands.add_parser("completion", help="print a shell completion script (bash, zsh or fish)")
    completion.add_argument("shell", choices=SHELLS)


def handled(
    prog: str,
    build: Callable[[], argparse.ArgumentParser],
    argv: Sequence[str],
    live: LiveNames | None = None,
) -> bool:
    """Answer ``__complete`` and ``completion SHELL`` (True), or leave ``argv`` to the CLI (False)."""
    if argv[:1] == [COMPLETE]:
        sys.stdout.write(answer(build(), argv[1:], live))
        return True
    if len(argv) == 2 and argv[0] == "completion" and argv[1] in SHELLS:
        sys.stdout.write(script(prog, argv[1]))
        return True
    return False
