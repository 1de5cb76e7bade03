"""The gang launcher of a multi-node Ray job: `python -I -m starforge.engines.ray.gang <run>/ray-gang.json`.

It is the job's entrypoint (the driver, on an interpreter with ray, as Ray's user). It reserves a STRICT_SPREAD
placement group of one bundle per node, all or nothing: while Ray cannot place every bundle at once it waits, says
so in the job's log and in `<run>/ray-gang-status.json` (which the executor reads: the job is pending with that
reason until every rank runs), and never starts part of the job. Then it runs one rank per bundle (`rank.Rank`, an
actor pinned to its bundle) with its rank environment: `NODE_RANK`, `NNODES`, `NPROC_PER_NODE`, `MASTER_ADDR`,
`MASTER_PORT`; sandboxed, each rank runs through its node's helper and bubblewrap and the ranks meet only on the job
fabric (`--fabric <run>/fabric --rank R --ranks N`; `MASTER_ADDR` is rank 0's fabric address, `GLOO_SOCKET_IFNAME`
and `NCCL_SOCKET_IFNAME` name it); unsandboxed, on rank 0's node address. Rank 0's exit record is the job's (its
`forge-launch` alone writes one; another rank's goes to `exit-rank<R>.json` beside it when it writes any).

When a rank fails, the others are stopped (SIGTERM, SIGKILL after the grace) and the job's exit record becomes the
first failure's (its record, or its exit status). SIGTERM (Ray's stop) stops every rank the same way, or gives up waiting. The placement group is
removed on every way out. Exit status: the first failing rank's, 143 when stopped, else 0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...wire import EXIT_FILE_VARIABLE, ExitRecord, read_exit_record, write_exit_record
from ..fabric import FABRIC_IFNAME, address_of
from ..node_sandbox import node_command
from . import rank as rank_module

__all__ = ["GANG_FILE", "GANG_STATUS_FILE", "main", "rank_environment", "rank_exit_file"]

GANG_FILE = "ray-gang.json"  # in the run folder, mode 0600: what the launcher runs (written by the executor)
GANG_STATUS_FILE = "ray-gang-status.json"  # in the run folder: {"state": waiting|running|ended, "message"}
_POLL = 0.5  # seconds between two looks at the ranks (and at a stop request)
_REPEAT = 60.0  # seconds between two reminders in the log that the job still waits


def rank_exit_file(exit_file: str, rank: int) -> str:
    """Return the exit record a rank writes: the job's own for rank 0, `<stem>-rank<R>.json` beside it otherwise."""
    return exit_file if rank == 0 else f"{exit_file.removesuffix('.json')}-rank{rank}.json"


def rank_environment(base: Mapping[str, str], *, rank: int, ranks: int, per_node: int, master_addr: str,
                     master_port: int, fabric: bool) -> dict[str, str]:
    """Return the environment of `rank`: the job's, its place in the gang and the rendezvous address."""
    env = {**base, "NODE_RANK": str(rank), "NNODES": str(ranks), "NPROC_PER_NODE": str(per_node),
           "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port)}
    if fabric:
        env |= {"GLOO_SOCKET_IFNAME": FABRIC_IFNAME, "NCCL_SOCKET_IFNAME": FABRIC_IFNAME}
    if EXIT_FILE_VARIABLE in base:
        env[EXIT_FILE_VARIABLE] = rank_exit_file(base[EXIT_FILE_VARIABLE], rank)
    return env


def _say(text: str) -> None:
    print(f"starforge: {text}", file=sys.stderr, flush=True)


def _status(path: str, state: str, message: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump({"state": state, "message": message, "at": time.time()}, handle)
    os.replace(tmp, path)


class _Gang:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.bundles: list[dict[str, float]] = spec["bundles"]
        self.ranks = len(self.bundles)
        self.stop = threading.Event()
        self.actors: list[Any] = []

    def run(self) -> int:
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group

        ray.init(logging_level=logging.ERROR, log_to_driver=False)  # the cluster of this job (RAY_ADDRESS)
        for signum in (signal.SIGTERM, signal.SIGINT):  # after ray.init, whose own handler would end the driver
            signal.signal(signum, lambda _signum, _frame: self.stop.set())
        group = placement_group(self.bundles, strategy="STRICT_SPREAD", name=f"starforge-{self.spec['run_id']}")
        try:
            if not self._placed(ray, group):
                _status(self.spec["status_file"], "ended", "stopped while waiting for its nodes")
                _say("stopped while waiting for its nodes: no rank was started")
                return 143
            return self._ranks(ray, group)
        finally:
            for actor in self.actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)
            with contextlib.suppress(Exception):
                remove_placement_group(group)

    def _why(self, ray: Any) -> str:
        alive = sum(1 for node in ray.nodes() if node.get("Alive"))
        shape = json.dumps(self.bundles[0], sort_keys=True) if len({json.dumps(b, sort_keys=True) for b in
                                                                    self.bundles}) == 1 else "its bundle"
        text = (f"waiting for {self.ranks} nodes at once, each with {shape} free (STRICT_SPREAD placement group, "
                "all or nothing: no rank starts before every node is free)")
        return text + (f"; the cluster has {alive} alive node{'s' if alive != 1 else ''}" if alive < self.ranks else "")

    def _placed(self, ray: Any, group: Any) -> bool:
        ready = group.ready()
        said, last = "", 0.0
        while not self.stop.is_set():
            done, _ = ray.wait([ready], timeout=_POLL)
            if done:
                return True
            why = self._why(ray)
            if why != said or time.monotonic() - last > _REPEAT:
                _say(why)
                _status(self.spec["status_file"], "waiting", why)
                said, last = why, time.monotonic()
        return False

    def _ranks(self, ray: Any, group: Any) -> int:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        spec = self.spec
        remote = ray.remote(rank_module.Rank)
        for index, bundle in enumerate(self.bundles):
            extra = {k: v for k, v in bundle.items() if k not in ("CPU", "GPU")}
            strategy = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=index)
            self.actors.append(remote.options(num_cpus=bundle.get("CPU", 0), num_gpus=bundle.get("GPU", 0),
                                              resources=extra or None, max_concurrency=4, max_restarts=0,
                                              scheduling_strategy=strategy).remote())
        places = ray.get([actor.where.remote() for actor in self.actors])
        fabric = bool(spec["fabric"])
        if fabric:
            master, port = address_of(0), int(spec["master_port"])
        else:
            master, port = places[0]["ip"], int(ray.get(self.actors[0].free_port.remote()))
        base = {k: v for k, v in os.environ.items() if k != spec["token_variable"]}
        waits = {}
        for index, actor in enumerate(self.actors):
            env = rank_environment(base, rank=index, ranks=self.ranks, per_node=int(spec["per_node"]),
                                   master_addr=master, master_port=port, fabric=fabric)
            if spec["sandboxed"]:
                helper = (*spec["helper"], *(("--fabric", spec["fabric"], "--rank", str(index), "--ranks",
                                              str(self.ranks)) if fabric else ()))
                argv = node_command(tuple(helper), spec["bwrap"], spec["inside"])
            else:
                argv = list(spec["argv"])
            ray.get(actor.start.remote(argv, env, cwd=spec["cwd"], log_file=spec["log_file"],
                                       token_file=spec["token_file"], token_variable=spec["token_variable"],
                                       args_file=spec["args_file"] if spec["sandboxed"] else ""))
            waits[actor.wait.remote()] = index
        where = ", ".join(f"rank {i} on node {p['node_id'][:12]} ({p['host']})" for i, p in enumerate(places))
        _say(f"{self.ranks} ranks started: {where}")
        _status(spec["status_file"], "running", f"{self.ranks} ranks running: {where}")
        return self._watch(ray, waits)

    def _watch(self, ray: Any, waits: dict[Any, int]) -> int:
        codes: dict[int, int] = {}
        first_failed: int | None = None
        stopping_since: float | None = None
        stopped = False
        while waits:
            done, _ = ray.wait(list(waits), timeout=_POLL, num_returns=1)
            for ref in done:
                index = waits.pop(ref)
                codes[index] = int(ray.get(ref))
                if codes[index] != 0 and first_failed is None and not stopped:
                    first_failed = index
                    _say(f"rank {index} failed (exit status {codes[index]}): stopping the other ranks")
            if (self.stop.is_set() or first_failed is not None) and stopping_since is None and waits:
                stopped = self.stop.is_set() and first_failed is None
                stopping_since = time.monotonic()
                if stopped:
                    _say("stopping every rank")
                for index in waits.values():
                    self.actors[index].signal.remote(int(signal.SIGTERM))
            if stopping_since is not None and waits and time.monotonic() - stopping_since > float(self.spec["grace"]):
                for index in waits.values():
                    self.actors[index].signal.remote(int(signal.SIGKILL))
                stopping_since = float("inf")  # once
        _status(self.spec["status_file"], "ended", f"ranks ended: {json.dumps(codes, sort_keys=True)}")
        if stopped or (self.stop.is_set() and first_failed is None):
            return 143
        if first_failed is None:
            return 0
        self._failure_record(first_failed, codes[first_failed])
        return codes[first_failed]

    def _failure_record(self, index: int, code: int) -> None:
        """Make the job's exit record the failing rank's (rank 0's may say it succeeded, or be missing)."""
        job_record = Path(self.spec["exit_record"])
        if index == 0 and job_record.exists():
            return
        record, _problems = read_exit_record(Path(rank_exit_file(str(job_record), index)))
        with contextlib.suppress(OSError):
            write_exit_record(job_record, record or ExitRecord.of_status(code, time.time()))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gang described by the file `argv[0]`; return its exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    if len(words) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    spec = json.loads(Path(words[0]).read_text(encoding="utf-8"))
    gang = _Gang(spec)
    for signum in (signal.SIGTERM, signal.SIGINT):  # a stop before ray.init: give up at once, cleanly
        signal.signal(signum, lambda _signum, _frame: gang.stop.set())
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(rank_module)  # type: ignore[no-untyped-call]  # a node needs ray only
    return gang.run()


if __name__ == "__main__":
    sys.exit(main())
