"""The `sf` root: a small dispatcher that imports a command's module only when that command runs.

`sf --help` and `sf --version` never import Typer, Rich or httpx; a command group is a Typer app in its own
module, loaded on first use. This keeps the common path fast (see bench/startup.py).
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.util import find_spec

from starforge import __version__

__all__ = ["COMMANDS", "main", "run"]

# name -> (module holding a Typer `app`, one-line summary, section)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("starforge.cli.cmd_init", "Create a lab: starforge.yaml, experiments/, common/, configs/, git", "Lab"),
    "new": ("starforge.cli.cmd_new", "Create an experiment from a recipe template, with its recipe.lock.json", "Lab"),
    "validate": ("starforge.cli.cmd_validate", "Check an experiment locally (lock, config, hyperparameters)", "Lab"),
    "ls": ("starforge.cli.cmd_ls", "List the lab's experiments and their lock states", "Lab"),
    "methods": ("starforge.cli.cmd_methods", "List the recipe catalog or show one recipe with its parameters", "Lab"),
    "recipe": ("starforge.cli.cmd_recipe", "Inspect and upgrade recipe locks (status, upgrade)", "Lab"),
    "spec": ("starforge.cli.cmd_spec", "Check, explain and describe forge/v2 JobSpecs (check, explain, schema)", "Lab"),
    "login": ("starforge.cli.cmd_login", "Log in to a console (token or device flow); approve a device code", "Account"),
    "logout": ("starforge.cli.cmd_logout", "Forget the credentials of the current console", "Account"),
    "whoami": ("starforge.cli.cmd_whoami", "Show the account you are logged in as", "Account"),
    "status": ("starforge.cli.cmd_status", "Identity, quota and usage, active jobs, cluster capacity, profiles", "Account"),
    "submit": ("starforge.cli.cmd_submit", "Build the JobSpec and bundle of an experiment and submit it", "Jobs"),
    "job": ("starforge.cli.cmd_job", "Follow and control jobs (ls, status, logs, metrics, artifacts, stop)", "Jobs"),
    "sweep": ("starforge.cli.cmd_sweep", "Submit a hyperparameter sweep as one decision; show its runs ranked", "Jobs"),
    "export": ("starforge.cli.cmd_export", "Export a finished run's checkpoint as a follow-up job", "Jobs"),
    "eval": ("starforge.cli.cmd_eval", "Evaluate a finished run's checkpoint as a follow-up job", "Jobs"),
    "serve": ("starforge.cli.cmd_serve", "Serve a model behind the console's OpenAI proxy; chat with it; its keys",
              "Jobs"),
    "bench": ("starforge.cli.cmd_bench", "Run benchmark suites on a model (lm-eval), list suites, compare runs", "Jobs"),
    "notify": ("starforge.cli.cmd_notify", "Webhooks on your jobs' state changes (add, ls, rm) and their log", "Jobs"),
    "clean": ("starforge.cli.cmd_clean", "Delete an experiment's checkpoints and logs on the console", "Jobs"),
    "dataset": ("starforge.cli.cmd_dataset", "Push a file or folder as a dataset version; list datasets", "Data"),
    "corpus": ("starforge.cli.cmd_corpus", "Push a folder as a corpus version; list corpora", "Data"),
    "model": ("starforge.cli.cmd_model", "Push a model folder as a version; list models", "Data"),
    "plugin": ("starforge.cli.cmd_plugin", "Publish, list, enable and disable plugins", "Data"),
    "volume": ("starforge.cli.cmd_volume", "List the volumes you can mount", "Data"),
    "console": ("starforge.cli.cmd_console", "Run and administer a console (up, token, user, corpus)", "Operate"),
    "mcp": ("starforge.cli.cmd_mcp", "Serve the StarForge MCP tools over stdio for a local agent", "Operate"),
    "admin": ("starforge.cli.cmd_admin", "Administer users, quotas and tokens over the API (admin token)", "Operate"),
}

_SECTIONS = ("Lab", "Account", "Jobs", "Data", "Operate")


def _available() -> dict[str, tuple[str, str, str]]:
    return {name: entry for name, entry in COMMANDS.items() if find_spec(entry[0]) is not None}


def root_help() -> str:
    """Return the text of `sf --help`."""
    commands = _available()
    width = max(len(name) for name in commands)
    lines = [
        f"sf {__version__} — StarForge: turn an experiment into a post-training job.",
        "",
        "Usage: sf COMMAND [ARGS]...    (sf COMMAND --help for the command's options)",
        "",
    ]
    for section in _SECTIONS:
        names = [n for n, e in commands.items() if e[2] == section]
        if not names:
            continue
        lines.append(f"{section}:")
        lines.extend(f"  {name.ljust(width)}  {commands[name][1]}" for name in names)
        lines.append("")
    lines.append("Options:")
    lines.append("  --version                     Print the version and exit.")
    lines.append("  --install-completion [SHELL]  Install tab completion for bash, zsh or fish (default: $SHELL).")
    lines.append("  --show-completion [SHELL]     Print the completion script.")
    lines.append("  --help                        Show this message and exit.")
    lines.append("")
    lines.append("Start with `sf init my-lab`; the README walks through the whole path.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch `argv` to its command and return the exit code (0 ok, 1 refused or failed, 2 usage)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(root_help())
        return 0 if args else 2
    if args[0] in ("--version", "-V", "version"):
        print(f"sf {__version__}")
        return 0
    if args[0] in ("__complete", "--install-completion", "--show-completion"):
        return _completion(args)
    name = args[0]
    entry = COMMANDS.get(name)
    if entry is None or find_spec(entry[0]) is None:
        import difflib

        close = difflib.get_close_matches(name, list(_available()), n=1)
        suggestion = f" Did you mean `sf {close[0]}`?" if close else ""
        print(f"error: unknown command {name!r}.{suggestion} Run `sf --help` for the list.", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(entry[0])
        module.app(args=args[1:], prog_name=f"sf {name}", standalone_mode=True)
    except ModuleNotFoundError as exc:  # an optional extra that is not installed is named, never a traceback
        from starforge.extras import missing_extra

        missing = missing_extra(exc)
        if missing is None:
            raise
        print(f"error: {missing}", file=sys.stderr)
        print(f"→ install it {missing.hint}", file=sys.stderr)
        return 1
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


def _completion(args: list[str]) -> int:
    from starforge.cli import _completion as completion

    if args[0] == "__complete":  # what the shell scripts ask: the words typed so far, the last being completed
        print("\n".join(completion.candidates(args[1:], _available())))
        return 0
    shell = args[1] if len(args) > 1 else os.path.basename(os.environ.get("SHELL", "bash"))
    if shell not in completion.SHELLS:
        print(f"error: no completion for the shell {shell!r}; choose one of {', '.join(completion.SHELLS)}",
              file=sys.stderr)
        return 2
    if args[0] == "--show-completion":
        print(completion.script(shell), end="")
        return 0
    for line in completion.install(shell):
        print(line, file=sys.stderr)
    print("completion installed: open a new shell (or source the file) to use it", file=sys.stderr)
    return 0


def run() -> None:
    """Console-script entry point for `sf`."""
    if os.environ.get("SF_PROFILE_IMPORTS"):
        import time

        start = time.perf_counter()
        code = main()
        print(f"[sf] {time.perf_counter() - start:.3f}s", file=sys.stderr)
        sys.exit(code)
    sys.exit(main())
