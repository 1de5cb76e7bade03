"""`sf validate`: check an experiment locally (lock gate, config, hyperparameters); no network.

The check researchers run on every edit, so it stays cheap to start (bench/startup.py): the lab, the catalog and
the recipes are imported inside the command, HTTP, Rich, the bundle and git never. Its options are all text (or a
flag, or repeated text), which Click already parses; `_PlainTyper` hands them to the command as parsed instead of
letting Typer import pydantic to coerce text to text, which alone would double the command's start-up time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main

from starforge.cli._lab import lab_root, load_catalog_or_abort
from starforge.cli._output import EXIT_REFUSED, EXIT_USAGE, Output

if TYPE_CHECKING:
    from starforge.lab import Validation

__all__ = ["app", "validate"]


class _AsParsed:
    """A Typer parameter coercion that keeps Click's value: text, a tuple of texts, None or a flag's bool."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        return value


class _PlainTyper(typer.Typer):
    """A Typer app whose text options skip pydantic coercion; where Typer has no such seam, nothing changes."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        command = typer.main.get_command(self)
        for param in command.params:
            if getattr(param, "_runtime_param", False) is None:  # Typer builds it (with pydantic) on first use
                param._runtime_param = _AsParsed()  # type: ignore[attr-defined]
        return command(*args, **kwargs)


app = _PlainTyper(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": []},  # `--help` is a plain flag below: Click's own is coerced too
    help="Check an experiment locally (lock, config, hyperparameters); no network.",
)


def _show_help(ctx: typer.Context, value: bool) -> None:
    if value:
        typer.echo(ctx.get_help())
        raise typer.Exit()


def _summary(result: Validation) -> str:
    state = result.state + (f" ({result.label})" if result.label and result.label != result.state else "")
    line = f"{'✓' if result.ok else '✗'} {result.exp}  {result.recipe}@{result.framework_version}  lock {state}"
    if result.hyperparams:
        sent = ", ".join(f"{k}={v}" for k, v in result.hyperparams.items())
        line += f"\n  hyperparameters sent without --set: {sent}"
    if result.needs_gpu:
        fix = " ".join(f"--set {name}=false" for name in result.needs_gpu)
        line += (f"\n  needs a GPU: {', '.join(f'{name}=true' for name in result.needs_gpu)} "
                 f"(a CPU profile refuses {'it' if len(result.needs_gpu) == 1 else 'them'}: submit there with {fix})")
    return line


@app.command()
def validate(
    exp: Annotated[str, typer.Argument(help="experiment name or path (experiments/<name>, smoke/<name>)")],
    catalog: Annotated[str | None, typer.Option("--catalog", help="recipe tree to use instead of the built-in "
                                                                  "catalog")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    model: Annotated[str, typer.Option("--model",
                                       help="base model: an HF id or a folder under the console's model_roots")] = "",
    train_dataset: Annotated[str, typer.Option("--train-dataset", metavar="REF[:PATH]",
                                               help="<owner>/<name>@<version>[:FILE]")] = "",
    val_dataset: Annotated[str, typer.Option("--val-dataset", metavar="REF[:PATH]",
                                             help="<owner>/<name>@<version>[:FILE]")] = "",
    set_: Annotated[list[str] | None, typer.Option("--set", metavar="KEY=VALUE",
                                                   help="hyperparameter value, typed (repeatable)")] = None,
    image: Annotated[str, typer.Option("--image", help="container image override")] = "",
    observability_url: Annotated[str, typer.Option("--observability-url", help="tracker URL")] = "",
    init_from: Annotated[str, typer.Option("--init-from", help="run/<run_id>/<kind>[@step=N]")] = "",
    corpus: Annotated[str, typer.Option("--corpus", help="reference corpus <owner>/<name>[@version]")] = "",
    _help: Annotated[bool, typer.Option("--help", is_eager=True, expose_value=False, callback=_show_help,
                                        help="Show this message and exit.")] = False,
) -> None:
    """Check the lock, config.yaml, hyperparameters and the recipe gates submit runs (model, data, image; the spec
    flags are those of `sf submit`); exit 0 ready, 1 problems found, 2 usage (unknown experiment)."""
    from starforge.lab import SubmitOptions, validate_experiment

    out = Output(as_json=as_json)
    lab = lab_root(out)
    cat = load_catalog_or_abort(out, catalog)
    options = SubmitOptions(profiles=(), sets=tuple(set_ or ()), image=image, observability_url=observability_url,
                            init_from=init_from, corpus=corpus, train_dataset=train_dataset,
                            val_dataset=val_dataset, model=model)
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
    if not result.ok:
        raise typer.Exit(EXIT_REFUSED)
