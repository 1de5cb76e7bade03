"""`sf validate`: check an experiment locally (lock gate, config, hyperparameters); no network.

This command parses its three options with argparse instead of Typer: it is the check researchers run on every
edit, and Typer's parameter coercion imports pydantic, which alone costs more than the whole check (startup
budget: bench/startup.py). `app(args=…, prog_name=…)` has the call shape `sf`'s dispatcher uses for Typer apps.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from starforge.cli._lab import lab_root, load_catalog_or_abort
from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output

if TYPE_CHECKING:
    from starforge.lab import SubmitOptions, Validation

__all__ = ["app", "validate"]

_HELP = ("Check the lock, config.yaml, hyperparameters and the recipe gates submit runs (model, data, image); "
         "exit 0 ready, 1 problems found, 2 usage (unknown exp).")


def _summary(result: Validation) -> str:
    state = result.state + (f" ({result.label})" if result.label and result.label != result.state else "")
    line = f"{'✓' if result.ok else '✗'} {result.exp}  {result.recipe}@{result.framework_version}  lock {state}"
    if result.hyperparams:
        sent = ", ".join(f"{k}={v}" for k, v in result.hyperparams.items())
        line += f"\n  hyperparameters sent without --set: {sent}"
    return line


def validate(exp: str, *, catalog: str | None = None, as_json: bool = False, options: SubmitOptions | None = None) -> int:
    """Check one experiment (with the spec flags submit would get) and print the verdict; return the exit code
    (0 ready, 1 problems; 2 is raised)."""
    from starforge.lab import validate_experiment

    out = Output(as_json=as_json)
    lab = lab_root(out)
    cat = load_catalog_or_abort(out, catalog)
    result = validate_experiment(lab, exp, cat, options)
    if not result.state:  # the experiment does not exist
        out.abort(result.problems[0].message, hint=result.problems[0].hint, code=EXIT_USAGE)
    if as_json:
        out.emit(result.to_dict())
    elif result.ok:
        out.line(_summary(result))
        out.problems("", [], result.warnings)
    else:
        out.problems(f"{result.exp} is not ready to submit", result.problems, result.warnings)
        out.info(_summary(result))
    return 0 if result.ok else EXIT_REFUSED


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=_HELP)
    parser.add_argument("exp", help="experiment name or path (experiments/<name>, smoke/<name>)")
    parser.add_argument("--catalog", default=None, help="recipe tree to use instead of the built-in catalog")
    parser.add_argument("--json", dest="as_json", action="store_true", help="print one JSON object")
    spec = parser.add_argument_group("the spec flags of `sf submit`, checked by the same recipe gates")
    spec.add_argument("--model", default="", help="base model: an HF id or a folder under the console's model_roots")
    spec.add_argument("--train-dataset", default="", metavar="REF[:PATH]", help="<owner>/<name>@<version>[:FILE]")
    spec.add_argument("--val-dataset", default="", metavar="REF[:PATH]", help="<owner>/<name>@<version>[:FILE]")
    spec.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                      help="hyperparameter value, typed (repeatable)")
    spec.add_argument("--image", default="", help="container image override")
    spec.add_argument("--observability-url", default="", help="tracker URL")
    spec.add_argument("--init-from", default="", help="run/<run_id>/<kind>[@step=N]")
    spec.add_argument("--corpus", default="", help="reference corpus <owner>/<name>[@version]")
    return parser


def app(args: Sequence[str] | None = None, prog_name: str = "sf validate", standalone_mode: bool = True) -> None:
    """Run `sf validate` on `args`; always ends with SystemExit carrying the exit code (argparse: 2 on misuse)."""
    options = _parser(prog_name).parse_args(list(args) if args is not None else None)
    from starforge.lab import SubmitOptions

    flags = SubmitOptions(profiles=(), sets=tuple(options.sets), image=options.image,
                          observability_url=options.observability_url, init_from=options.init_from,
                          corpus=options.corpus, train_dataset=options.train_dataset,
                          val_dataset=options.val_dataset, model=options.model)
    raise SystemExit(validate(options.exp, catalog=options.catalog, as_json=options.as_json, options=flags))
