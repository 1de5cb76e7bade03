"""Shell completion for `sf`: the scripts for bash, zsh and fish, what they ask (`sf __complete WORD…`), and
`sf --install-completion` / `sf --show-completion`.

The scripts are thin: for every completion they run `sf __complete` with the words typed so far, which answers from
the command table and, past the command, from that command's own options and subcommands (it imports only that
command's module, like any `sf` run).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

__all__ = ["SHELLS", "candidates", "install", "script"]

SHELLS = ("bash", "zsh", "fish")

_BASH = """# sf completion (bash): source it, or let `sf --install-completion bash` do it
_sf_complete() {
    local IFS=$'\\n'
    COMPREPLY=($(sf __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _sf_complete sf
"""
_ZSH = """#compdef sf
# sf completion (zsh): source it, or let `sf --install-completion zsh` do it
_sf_complete() {
    local -a found
    found=("${(@f)$(sf __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    compadd -a found
}
compdef _sf_complete sf
"""
_FISH = """# sf completion (fish): `sf --install-completion fish` writes it to ~/.config/fish/completions/sf.fish
complete -c sf -f -a '(sf __complete (commandline -opc)[2..-1] (commandline -ct))'
"""


def script(shell: str) -> str:
    """Return the completion script for `shell` (bash, zsh or fish)."""
    return {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}[shell]


def candidates(words: list[str], commands: dict[str, tuple[str, str, str]]) -> list[str]:
    """Return what may come next after `sf`: `words` are the words typed so far, the last one being completed."""
    *done, current = words or [""]
    if not done:
        return sorted(n for n in [*commands, "--help", "--version"] if n.startswith(current))
    entry = commands.get(done[0])
    if entry is None:
        return []
    import typer.main

    command: Any = typer.main.get_command(importlib.import_module(entry[0]).app)
    for word in done[1:]:
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        command = sub
    names = [name for name, sub in getattr(command, "commands", {}).items() if not getattr(sub, "hidden", False)]
    if current.startswith("-") or not names:
        names = [opt for param in command.params for opt in getattr(param, "opts", ()) if opt.startswith("-")]
        names.append("--help")
    return sorted(n for n in set(names) if n.startswith(current))


def _rc_file(shell: str, home: Path) -> Path | None:
    return {"bash": home / ".bashrc", "zsh": home / ".zshrc"}.get(shell)


def install(shell: str, home: Path | None = None) -> list[str]:
    """Install the completion for `shell` for this user and return what was done, one line each; running it again
    changes nothing."""
    home = home or Path.home()
    if shell == "fish":
        target = home / ".config" / "fish" / "completions" / "sf.fish"
    else:
        data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
        target = data / "starforge" / f"completion.{shell}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(script(shell), encoding="utf-8")
    done = [f"wrote {target}"]
    rc = _rc_file(shell, home)
    if rc is not None:
        line = f"source {target}  # sf completion"
        text = rc.read_text(encoding="utf-8") if rc.is_file() else ""
        if line not in text.splitlines():
            with rc.open("a", encoding="utf-8") as handle:
                handle.write(("" if not text or text.endswith("\n") else "\n") + line + "\n")
            done.append(f"added `{line}` to {rc}")
        else:
            done.append(f"{rc} already sources it")
    return done
