"""`forge-launch`: verify a job's JobSpec, launch plan and recipe identity, run its entrypoint and report the outcome.

On a several-node job every node runs it; the first (`NODE_RANK` 0) speaks for the job: it reports the lifecycle,
registers the artifacts and writes the exit record, while the others run their share and exit with its status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from starforge.contract import JobSpec, Problem, loads, parse
from starforge.wire import (
    CONTROL_POLL_SECONDS,
    EVENT_FAILED,
    EVENT_RUNNING,
    EVENT_STARTING,
    EVENT_SUCCEEDED,
    EXIT_FILE_VARIABLE,
    IDENTITY_VARIABLES,
    JOBSPEC_FILE,
    PLAN_FILE,
    PREEMPT_FILE_VARIABLE,
    PREEMPT_SIGNAL,
    SPLITS_DIR,
    ExitRecord,
    LaunchPlan,
    read_plan,
    write_exit_record,
)

from ._argv import build_command
from ._artifacts import scan
from ._catchers import send_to_catchers
from ._channel import ChannelUnavailable, open_channel
from ._control import ControlWatch
from ._identity import check_identity
from ._ingest import INGEST_ENABLED, IngestClient, IngestError, IngestRefused, client_from_environ
from ._process import Child, ChildExit, StopSignals, binary_stream
from ._world import node_rank

__all__ = ["JOBSPEC_FILE", "PLAN_FILE", "Launcher", "main"]

_DEFAULT_GRACE = 10.0
_PREFIX = "[forge-launch]"
PREEMPT_FILE = ".starforge/preempt"  # in the work folder: created when the console asks for a checkpoint


def main(argv: Sequence[str] | None = None) -> int:
    """Run `forge-launch [--workdir DIR]` and return the exit status (the child's, or 1 when the job never started)."""
    parser = argparse.ArgumentParser(
        prog="forge-launch",
        description=f"Verify {JOBSPEC_FILE} and {PLAN_FILE}, run the job, report its lifecycle.",
    )
    parser.add_argument(
        "--workdir", default=None, help="the unpacked bundle root (default: the current directory)"
    )
    args = parser.parse_args(argv)
    launcher = Launcher(
        Path(os.path.abspath(args.workdir or os.getcwd())),
        environ=os.environ,
        stdout=binary_stream(sys.stdout),
        stderr=binary_stream(sys.stderr),
    )
    code = launcher.run()
    target = os.environ.get(EXIT_FILE_VARIABLE, "")
    if target and not launcher.follower:
        with contextlib.suppress(OSError):  # nowhere to report it: the executor then sees a lost job
            write_exit_record(target, ExitRecord.of_status(code, time.time()))
    return code


def _inside(workdir: Path, relative: str) -> Path:
    """Return `workdir/relative`, refusing (OSError) a path that leaves it or passes through a link.

    The job's own code ran in this folder before a later start, and may have planted links where forge-launch writes.
    """
    target = workdir / relative
    current = workdir
    for part in Path(relative).parts[:-1]:
        if part in ("..", "/") or part.startswith("/"):
            raise OSError(f"{relative} leaves the work folder")
        current = current / part
        if current.is_symlink():
            raise OSError(f"{current.relative_to(workdir)} is a link; forge-launch never writes through one")
    return target


class Launcher:
    """One launch: the five steps of `forge-launch`, with lifecycle reports and `[forge-launch]` status lines."""

    def __init__(
        self,
        workdir: Path,
        *,
        environ: Mapping[str, str],
        stdout: BinaryIO,
        stderr: BinaryIO,
        control_interval: float = CONTROL_POLL_SECONDS,
    ) -> None:
        self.workdir = workdir
        self._stdout = stdout
        self._stderr = stderr
        self._control_interval = control_interval
        self._child: Child | None = None
        self.rank = node_rank(environ)
        self.follower = self.rank > 0  # a node after the first: the first speaks for the job
        self.environ = self._channel(environ)
        self.client = self._client()

    def run(self) -> int:
        """Launch the job and return the exit status; never raises for a bad job, only reports it."""
        try:
            with StopSignals(self._grace()) as stop:
                return self._run(stop)
        except Exception:
            self.say("internal error:\n" + traceback.format_exc().rstrip())
            self._lifecycle(EVENT_FAILED, reason="launcher_error", exit_code=1, message="forge-launch crashed")
            return 1

    def say(self, message: str) -> None:
        """Print one status line to stderr."""
        prefix = f"{_PREFIX} (node {self.rank})" if self.rank else _PREFIX
        try:
            self._stderr.write(f"{prefix} {message}\n".encode("utf-8", errors="replace"))
            self._stderr.flush()
        except (OSError, ValueError):
            pass

    # -- the five steps --------------------------------------------------------------------------------------

    def _run(self, stop: StopSignals) -> int:
        # 1. the JobSpec, re-parsed
        spec, problems = self._read_spec()
        if spec is None:
            return self._refuse("jobspec_invalid", f"{JOBSPEC_FILE} was rejected", problems)
        # 2. the launch plan and the recipe identity
        plan, problems = read_plan(self.workdir / PLAN_FILE)
        if plan is None:
            return self._refuse("launch_plan_invalid", f"{PLAN_FILE} was rejected", problems)
        mismatches = check_identity(self.environ, spec, plan)
        if mismatches:
            self.say("refusing to start: the recipe identity differs")
            for mismatch in mismatches:
                self.say(f"  - {mismatch}")
            message = "recipe identity mismatch\n" + "\n".join(f"- {m}" for m in mismatches)
            self._lifecycle(EVENT_FAILED, reason="identity_mismatch", exit_code=1, message=message)
            return 1
        self.say(
            f"run {plan.run_id}: {plan.recipe.name}@{plan.recipe.version} on "
            f"{plan.framework.kind} {plan.framework.version}"
        )
        # 3. starting, the child, running
        try:
            self._lifecycle(EVENT_STARTING, strict=True)
        except IngestError as exc:
            self.say(f"the console did not accept lifecycle '{EVENT_STARTING}' ({exc}); the job is not started")
            return 1
        if stop.received is not None:
            name = signal.Signals(stop.received).name
            self.say(f"received {name} before the job started; not starting it")
            self._lifecycle(EVENT_FAILED, reason="stopped", signal=name, exit_code=128 + stop.received)
            return 128 + stop.received
        child = self._start(plan)
        if child is None:
            return 1
        stop.attach(child)
        self._lifecycle(EVENT_RUNNING)
        watch = self._watch_control()
        try:
            result = child.wait(stop, on_stop=self.say)
        finally:
            if watch is not None:
                watch.stop()
        # 4. artifacts, then the outcome
        self._register_artifacts(plan)
        return self._finish(result, checkpointed=watch is not None and watch.requested)

    def _read_spec(self) -> tuple[JobSpec | None, list[Problem]]:
        path = self.workdir / JOBSPEC_FILE
        try:
            doc = loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None, [
                Problem(
                    "<root>",
                    "missing_field",
                    f"{path} does not exist",
                    f"the console writes {JOBSPEC_FILE} into the run's work folder when it prepares the run",
                )
            ]
        except (OSError, ValueError) as exc:
            return None, [Problem("<root>", "invalid_json", f"cannot read {path}: {exc}")]
        parsed = parse(doc)
        return parsed.spec, parsed.problems

    def _start(self, plan: LaunchPlan) -> Child | None:
        argv, adapted = build_command(plan, sys.executable, self.environ)
        try:
            for relative, text in adapted.files.items():
                target = _inside(self.workdir, relative)
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_symlink():
                    target.unlink()
                target.write_text(text, encoding="utf-8")
                self.say(f"wrote {relative} ({plan.config.mode})")
            splits = _inside(self.workdir, SPLITS_DIR)
            if splits.exists() or splits.is_symlink():  # an earlier start's links must not add stale splits
                splits.unlink() if splits.is_symlink() else shutil.rmtree(splits)
            for relative, location in adapted.links.items():
                link = _inside(self.workdir, relative)
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(location)
            if adapted.links:
                count = len(adapted.links)
                self.say(f"linked {count} data file{'' if count == 1 else 's'} under {SPLITS_DIR}")
        except OSError as exc:
            self.say(f"cannot prepare the framework config: {exc}")
            self._lifecycle(EVENT_FAILED, reason="start_failed", exit_code=1,
                            message=f"cannot prepare the framework config: {exc}")
            return None
        env = dict(self.environ)
        for key, value in plan.env.items():
            if key in IDENTITY_VARIABLES:
                self.say(f"warning: the launch plan may not change {key}; its value was ignored")
                continue
            env[key] = value
        env.setdefault("PYTHONUNBUFFERED", "1")  # live logs: a Python child would block-buffer into our pipe
        try:
            env[PREEMPT_FILE_VARIABLE] = str(self._clear_preempt_file())
        except OSError as exc:
            self.say(f"warning: cannot prepare {PREEMPT_FILE} ({exc}); a checkpoint request only signals the job")
            env.pop(PREEMPT_FILE_VARIABLE, None)
        self.say(f"starting in {self.workdir}: {shlex.join(argv)}")
        try:
            child = Child.start(argv, env=env, cwd=self.workdir, stdout=self._stdout, stderr=self._stderr)
        except (OSError, ValueError) as exc:
            self.say(f"cannot start the job: {exc}")
            self._lifecycle(
                EVENT_FAILED, reason="start_failed", exit_code=1, message=f"cannot start {argv[0]}: {exc}"
            )
            return None
        self.say(f"job started (pid {child.pid})")
        self._child = child
        return child

    # -- the console's requests while the job runs ---------------------------------------------------------------

    def _watch_control(self) -> ControlWatch | None:
        if self.client is None:
            return None
        return ControlWatch(
            self.client, self._checkpoint_requested, say=self.say, interval=self._control_interval
        ).start()

    def _clear_preempt_file(self) -> Path:
        """Return the preempt file's path, removing one an earlier start left behind; raise OSError."""
        target = _inside(self.workdir, PREEMPT_FILE)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        return target

    def _checkpoint_requested(self, reason: str) -> None:
        """Tell the job to checkpoint and stop: create the preempt file, signal the processes that handle SIGUSR1."""
        self.say(f"the console asks the job to checkpoint and stop: {reason}")
        try:
            target = _inside(self.workdir, PREEMPT_FILE)
            target.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(target, flags, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(reason + "\n")
        except OSError as exc:
            self.say(f"warning: cannot create {PREEMPT_FILE}: {exc}")
        if self._child is None:
            return
        name = signal.Signals(PREEMPT_SIGNAL).name
        sent = send_to_catchers(self._child.pid, PREEMPT_SIGNAL)
        if sent:
            self.say(f"sent {name} to {len(sent)} process{'' if len(sent) == 1 else 'es'} of the job "
                     f"(pid {', '.join(map(str, sent))})")
        else:
            self.say(f"no process of the job handles {name}; it learns of the request from {PREEMPT_FILE} "
                     "or is stopped after the grace period")

    def _register_artifacts(self, plan: LaunchPlan) -> None:
        if self.follower:
            return  # the first node registers what the job wrote (the run's folders are shared)
        out_dir = self.environ.get("FORGE_OUT_DIR", "")
        if not out_dir:
            self.say("FORGE_OUT_DIR is not set; no artifacts to register")
            return
        found = scan(out_dir, plan.artifacts.groups(), plan.artifacts.formats)
        for artifact in found:
            where = f" (step {artifact.step})" if artifact.step is not None else ""
            if self.client is None:
                self.say(f"found {artifact.kind} {artifact.path}{where}")
                continue
            try:
                self.client.artifact(artifact.kind, artifact.path, **artifact.fields())
            except IngestError as exc:
                self.say(f"warning: could not register {artifact.kind} {artifact.path}: {exc}")
                if isinstance(exc, IngestRefused) and exc.status in (401, 403):
                    return
                continue
            self.say(f"registered {artifact.kind} {artifact.path}{where}")

    def _finish(self, result: ChildExit, *, checkpointed: bool = False) -> int:
        if result.ok and checkpointed:
            self.say("job checkpointed and stopped at the console's request")
            self._lifecycle(EVENT_SUCCEEDED, exit_code=0, reason="checkpointed")
            return 0
        if result.ok:
            self.say("job succeeded")
            self._lifecycle(EVENT_SUCCEEDED, exit_code=0)
            return 0
        extra: dict[str, Any] = {}
        if result.exit_code is not None:
            extra["exit_code"] = result.exit_code
        killed = result.killed_by or result.stop_signal
        if killed is not None:
            extra["signal"] = signal.Signals(killed).name
        if result.stop_signal is not None:
            extra["reason"] = "stopped"
        described = f"signal {extra['signal']}" if "signal" in extra else f"exit code {result.exit_code}"
        self.say(f"job failed ({described}); exiting with {result.status}")
        self._lifecycle(EVENT_FAILED, **extra)
        return result.status

    # -- helpers ---------------------------------------------------------------------------------------------

    def _refuse(self, reason: str, title: str, problems: list[Problem]) -> int:
        self.say(f"refusing to start: {title}")
        for problem in problems:
            hint = f" (hint: {problem.hint})" if problem.hint else ""
            self.say(f"  - {problem.field}: {problem.message} [{problem.code}]{hint}")
        message = "\n".join([title] + [f"- {p.field}: {p.message}" for p in problems])
        self._lifecycle(
            EVENT_FAILED, reason=reason, exit_code=1, message=message, problems=[p.to_dict() for p in problems]
        )
        return 1

    def _lifecycle(self, event: str, *, strict: bool = False, **extra: Any) -> None:
        """Report a lifecycle event; errors are printed, and raised only when `strict`. A follower reports nothing."""
        if self.client is None or self.follower:
            return
        try:
            self.client.lifecycle(event, **extra)
        except IngestError as exc:
            if strict:
                raise
            self.say(f"warning: could not report lifecycle '{event}': {exc}")

    def _channel(self, environ: Mapping[str, str]) -> dict[str, str]:
        try:
            return open_channel(environ)
        except ChannelUnavailable as exc:
            self.say(f"warning: {exc}; nothing is reported")
            return {**environ, INGEST_ENABLED: "0"}

    def _client(self) -> IngestClient | None:
        client, missing = client_from_environ(self.environ)
        if missing:
            self.say(f"warning: {INGEST_ENABLED}=1 but {', '.join(missing)} unset; nothing is reported")
        elif client is None:
            self.say(f"ingest disabled ({INGEST_ENABLED} is not 1): lifecycle and artifacts are not reported")
        return client

    def _grace(self) -> float:
        raw = self.environ.get("FORGE_STOP_GRACE", "")
        if not raw:
            return _DEFAULT_GRACE
        try:
            grace = float(raw)
        except ValueError:
            grace = -1.0
        if grace >= 0 and grace != float("inf"):
            return grace
        self.say(f"warning: FORGE_STOP_GRACE={raw!r} is not a number of seconds; using {_DEFAULT_GRACE:g}")
        return _DEFAULT_GRACE


if __name__ == "__main__":
    sys.exit(main())
