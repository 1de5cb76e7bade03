"""How the local executor isolates jobs: the sandbox (checked at start), per-job uids, and resource limits.

`Isolation.prepare` is called once when the console starts. It refuses to return (raising SandboxUnavailable with
the fix) unless a real sandboxed probe shows that a job cannot see the state folder, runs as another identity, can
reach its runtime and its console's channel, and can reach no port of this machine (`executors.local.network`:
`none` or `egress`, see `jobnet`). `executors.local.sandbox: off` skips all of it, and `warning` then says so loudly.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..wire import CHANNEL_DIR, CHANNEL_SOCKET
from .base import JobPaths
from .identities import UidPool, check_range, chown_tree
from .jobnet import (
    EGRESS,
    JobNetwork,
    NetworkStart,
    NetworkUnavailable,
    bind_unix,
    describe,
    local_destinations,
)
from .limits import CgroupV2, JobLimits, detect_cgroup, machine_memory
from .sandbox import (
    SANDBOX_ROOT,
    SYSTEM_DIRS,
    SandboxUnavailable,
    View,
    bwrap_command,
    find_bwrap,
    runtime_paths,
    supports,
)

__all__ = ["Isolation", "IsolationConfig", "SandboxUnavailable", "SpawnPlan"]

_PROBE = r"""
import json, os, socket, sys
state = sys.argv[1]
out = {"uid": os.getuid(), "pid": os.getpid(), "state_visible": os.path.exists(state)}
targets = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
reached = []
for host, port in targets.get("tcp", []):
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.settimeout(3)
    try:
        probe.connect((host, port))
        reached.append(f"{host}:{port}")
    except OSError:
        pass
    finally:
        probe.close()
out["reached"] = reached
if targets.get("channel"):
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        channel.connect(targets["channel"])
        out["channel"] = True
    except OSError as exc:
        out["channel"] = str(exc)
    finally:
        channel.close()
out["interfaces"] = [name for _index, name in socket.if_nameindex()]
try:
    open(os.path.join(os.environ["PROBE_OUT"], "probe"), "w").write("ok")
    out["writable"] = True
except OSError as exc:
    out["writable"] = str(exc)
try:
    import starforge.runner  # the runtime jobs start with
    out["runtime"] = True
except Exception as exc:
    out["runtime"] = repr(exc)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class IsolationConfig:
    """`executors.local` of the console configuration."""

    sandbox: bool = True
    uid_range: tuple[int, int] = (61184, 65519)
    memory_per_slot: int = 0  # bytes; 0: the machine's memory divided by its slots
    cpus_per_slot: float = 0.0  # 0: the machine's CPUs divided by its slots
    cgroup: str = "auto"  # auto | off | a delegated cgroup v2 directory
    network: str = EGRESS  # none | egress: what a job's own network namespace reaches (`jobnet`)


@dataclass(frozen=True)
class SpawnPlan:
    """The command to spawn for a job and the file descriptor that carries bubblewrap's arguments, if any."""

    argv: list[str]
    args_fd: int | None = None
    input_fds: tuple[int, ...] = ()
    network: NetworkStart | None = None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """Return every descriptor bubblewrap must inherit."""
        return (*((self.args_fd,) if self.args_fd is not None else ()), *self.input_fds,
                *(self.network.child_fds if self.network is not None else ()))

    def attach_network(self, pid: int) -> subprocess.Popen[bytes] | None:
        """Once bubblewrap (`pid`) runs: give its job its network and let it start; return the network stack.

        On failure the sandbox is killed before it could start the job, and NetworkUnavailable is raised.
        """
        if self.network is None:
            return None
        self.network.started()
        try:
            return self.network.attach()
        except (NetworkUnavailable, OSError) as exc:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            if isinstance(exc, NetworkUnavailable):
                raise
            raise NetworkUnavailable(f"cannot set up the job's network: {exc}") from exc
        finally:
            self.network.close()

    def abandon(self) -> None:
        """Close what a plan that was never started holds."""
        if self.network is not None:
            self.network.close()


@dataclass
class Isolation:
    """The isolation of one console's jobs; `Isolation.none()` runs them unsandboxed (development only)."""

    storage_root: Path
    config: IsolationConfig = field(default_factory=IsolationConfig)
    bwrap: str = ""
    uids: UidPool | None = None
    cgroup: CgroupV2 | None = None
    limits_mode: str = "rlimits"
    runtime: tuple[Path, ...] = ()
    masked: tuple[str, ...] = ()
    disable_userns: bool = False
    memory_per_slot: int = 0
    cpus_per_slot: float = 0.0
    network: JobNetwork | None = None  # None: jobs share the machine's network (no sandbox)
    channel: Path | None = None  # the console's channel folder, shown to each job at CHANNEL_DIR

    @classmethod
    def none(cls, storage_root: Path | None = None) -> Isolation:
        """Return the absence of a sandbox: jobs run as this user with this process's view of the machine."""
        return cls(storage_root or Path("/"), IsolationConfig(sandbox=False))

    @property
    def sandboxed(self) -> bool:
        """Return True when jobs run inside the sandbox."""
        return self.config.sandbox

    @classmethod
    def prepare(cls, storage_root: Path, config: IsolationConfig, *, total_slots: int,
                masked: tuple[str, ...] = (), channel: Path | None = None) -> Isolation:
        """Check that jobs can be isolated as configured and return the isolation; raise SandboxUnavailable."""
        slots = max(1, total_slots)
        per_slot_memory = config.memory_per_slot or machine_memory() // slots
        per_slot_cpus = config.cpus_per_slot or max(0.1, (os.cpu_count() or 1) / slots)
        if not config.sandbox:
            return cls(storage_root, config, memory_per_slot=per_slot_memory, cpus_per_slot=per_slot_cpus)
        bwrap = find_bwrap()
        uids = None
        if os.getuid() == 0:
            problem = check_range(*config.uid_range)
            if problem:
                raise SandboxUnavailable(problem, "set executors.local.uid_range to a range of uids no account holds")
            if shutil.which("setpriv") is None:
                raise SandboxUnavailable("setpriv (util-linux) is missing, so jobs cannot drop to their own uid",
                                         "install util-linux (Debian/Ubuntu: apt-get install util-linux)")
            uids = UidPool(*config.uid_range)
        try:
            network = JobNetwork.find(config.network)
        except NetworkUnavailable as exc:
            raise SandboxUnavailable(str(exc), exc.fix) from exc
        cgroup, why_not = detect_cgroup(config.cgroup)
        runtime = tuple(runtime_paths())
        visible = (*runtime, *(Path("/") / name for name in SYSTEM_DIRS))
        hidden = tuple(m for m in masked if Path(m).is_file() and any(Path(m).is_relative_to(v) for v in visible))
        isolation = cls(
            storage_root, config, bwrap, uids, cgroup, "cgroup v2" if cgroup else f"rlimits ({why_not})",
            runtime, hidden, uids is None and supports(bwrap, "--disable-userns"), per_slot_memory, per_slot_cpus,
            network, channel,
        )
        isolation.probe()
        return isolation

    def job_paths(self, run_dir: Path) -> JobPaths:
        """Return where a run's folders appear to its job: under /forge in the sandbox, where they are without."""
        if not self.sandboxed:
            return JobPaths(str(self.storage_root), str(run_dir), None)
        try:
            relative = run_dir.relative_to(self.storage_root).as_posix()
        except ValueError:
            relative = f"runs/{run_dir.name}"
        return JobPaths(SANDBOX_ROOT, f"{SANDBOX_ROOT}/{relative}", f"{SANDBOX_ROOT}/inputs", home="/tmp", tmp="/tmp",
                        caches=f"{SANDBOX_ROOT}/cache")

    def limits_for(self, slots: int, cores: tuple[int, ...], wall_seconds: float | None) -> JobLimits:
        """Return the limits of a job holding `slots` slots (and pinned to `cores` without cgroups)."""
        slots = max(1, slots)
        return JobLimits(self.memory_per_slot * slots, round(self.cpus_per_slot * slots, 3),
                         () if self.cgroup else cores, wall_seconds)

    def view(self, run_dir: Path, paths: JobPaths, cwd: str, ro: tuple[tuple[Path, str], ...],
             devices: tuple[str, ...], ro_fds: tuple[tuple[int, str], ...] = (),
             job_runtime: tuple[Path, ...] = (), caches: tuple[tuple[Path, str], ...] = (),
             channel: Path | None = None, root: Path | None = None) -> View:
        """Return what the job of `run_dir` sees: runtimes and inputs read-only, its folders and caches read-write.

        With a network policy the job gets its own network namespace and sees `channel` (by default the console's
        channel folder) at CHANNEL_DIR, its only way to its console. With `root` (an unpacked image) the job sees
        that image instead of the machine's system folders. `job_runtime` adds the folders of the job's own runtime (a built venv) to the console's, where they are — never
        one that is or holds the state folder (a venv's `sys.path` can name any folder through a `.pth` file).
        """
        rw = tuple((run_dir / name, f"{paths.run_dir}/{name}") for name in ("work", "out", "logs")) + caches
        shown = {*self.runtime}
        state = self.storage_root
        extra = tuple(p for p in job_runtime if not any(p == o or p.is_relative_to(o) for o in shown)
                      and not (state.is_relative_to(p) or p.is_relative_to(state)))
        runtime = tuple((p, str(p)) for p in (*self.runtime, *extra))
        folder = channel or self.channel
        shown = ((folder, CHANNEL_DIR),) if self.network is not None and folder is not None else ()
        return View(cwd=cwd, rw=rw, ro=runtime + ro + shown, ro_fds=ro_fds, masked=self.masked, devices=devices,
                    tmp=run_dir / "tmp", own_network=self.network is not None, root=root)

    @classmethod
    def for_nodes(cls, storage_root: Path, uids: UidPool | None, network: str = EGRESS) -> Isolation:
        """Return the sandbox of jobs started on other machines (cluster nodes): this runtime, no local probe.

        The nodes must see the runtime, the run folders and bubblewrap where this machine does (a shared filesystem);
        each node's helper (`jobnet_node`) sets up the job's `network` and channel there.
        """
        return cls(storage_root, IsolationConfig(network=network), shutil.which("bwrap") or "bwrap", uids,
                   runtime=tuple(runtime_paths()), network=JobNetwork(network))

    def arguments(self, view: View, command: list[str], *, uid: int | None) -> tuple[list[str], list[str]]:
        """Return bubblewrap's options and the command to run inside, for a view that names paths only.

        For a job started elsewhere (the options travel in a file): a view with opened descriptors is refused.
        """
        if view.ro_fds:
            raise ValueError("a view started on another machine cannot carry open file descriptors")
        return bwrap_command(view, command, uid=uid, disable_userns=self.disable_userns)

    def spawn(self, view: View, command: list[str], *, uid: int | None, prefix: list[str]) -> SpawnPlan:
        """Return how to start `command` in `view`: bubblewrap reading its arguments from a memory file.

        With its own network, the plan's `attach_network` must be called once the returned command runs.
        """
        options, inside = bwrap_command(view, command, uid=uid, disable_userns=self.disable_userns)
        network = self.network.prepare(job_holds_exit=True) if view.own_network and self.network else None
        if network is not None:
            options += network.options(image=view.root is not None)
        fd = os.memfd_create("bwrap-args", 0)
        os.write(fd, b"".join(a.encode() + b"\0" for a in options))
        os.lseek(fd, 0, os.SEEK_SET)
        return SpawnPlan([*prefix, self.bwrap, "--args", str(fd), "--", *inside], fd,
                         tuple(fd for fd, _target in view.ro_fds), network)

    def probe(self) -> None:
        """Run a real sandboxed process and raise SandboxUnavailable unless it is isolated as promised."""
        check_root = self.storage_root / "sandbox-check"
        check_root.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix="probe-", dir=check_root))
        run_dir.chmod(0o755)
        uid = self.uids.take() if self.uids else None
        listeners: list[socket.socket] = []
        try:
            for name in ("work", "out", "logs", "tmp", "channel"):
                (run_dir / name).mkdir()
            if uid is not None:
                chown_tree(run_dir, uid, uid)
            targets = self._probe_targets(run_dir / "channel", listeners)
            paths = self.job_paths(run_dir)
            view = self.view(run_dir, paths, paths.work, (), (), channel=run_dir / "channel")
            command = [sys.executable, "-I", "-c", _PROBE, str(self.storage_root), json.dumps(targets)]
            plan = self.spawn(view, command, uid=uid, prefix=[])
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PROBE_OUT": paths.out}
            try:
                child = subprocess.Popen(plan.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, pass_fds=plan.pass_fds, start_new_session=True)
            except OSError:
                plan.abandon()
                raise
            finally:
                if plan.args_fd is not None:
                    os.close(plan.args_fd)
            stack = None
            try:
                stack = plan.attach_network(child.pid)
                out, err = child.communicate(timeout=60)
            except NetworkUnavailable as exc:
                _out, err = child.communicate(timeout=60)
                said = " / ".join(err.strip().splitlines()[-3:])
                raise SandboxUnavailable(f"{exc}{f' (bubblewrap: {said})' if said else ''}", exc.fix) from exc
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
                if stack is not None:
                    stack.wait(timeout=30)  # it ends with the job, whose end of its exit pipe closes
            self._judge(subprocess.CompletedProcess(plan.argv, child.returncode, out, err), uid)
        finally:
            for listener in listeners:
                listener.close()
            if self.uids and uid is not None:
                self.uids.release(uid)
            shutil.rmtree(run_dir, ignore_errors=True)

    def _probe_targets(self, channel: Path, listeners: list[socket.socket]) -> dict[str, object]:
        """Open what a job must not reach (a port on every address of this machine) and a channel it must reach."""
        if self.network is None:
            return {}
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("0.0.0.0", 0))
        tcp.listen(8)
        listeners.append(tcp)
        port = tcp.getsockname()[1]
        listeners.append(bind_unix(str(channel / CHANNEL_SOCKET), backlog=8))
        hosts = ["127.0.0.1", *(d.split("/")[0] for d in local_destinations())]
        return {"tcp": [[host, port] for host in dict.fromkeys(hosts)], "channel": f"{CHANNEL_DIR}/{CHANNEL_SOCKET}"}

    def _judge(self, done: subprocess.CompletedProcess[str], uid: int | None) -> None:
        fix = ("enable unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1 on Debian; "
               "user.max_user_namespaces > 0; on Ubuntu 24.04 allow bwrap in AppArmor), run the console as root "
               "for per-job uids, or set `executors: {local: {sandbox: off}}` on a single-user machine only")
        if done.returncode != 0 or not done.stdout.strip():
            detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise SandboxUnavailable(f"a sandboxed test process failed: {' / '.join(detail) or done.returncode}",
                                     fix)
        try:
            facts = json.loads(done.stdout.strip().splitlines()[-1])
        except ValueError as exc:
            raise SandboxUnavailable(f"the sandboxed test process answered {done.stdout!r}", fix) from exc
        if facts.get("state_visible"):
            raise SandboxUnavailable(
                f"the state directory {self.storage_root} is visible inside the sandbox (it lies inside a path jobs "
                "must read: the system folders or the Python runtime)",
                "move the state directory (--state-dir) outside /usr, /etc and the Python installation",
            )
        if facts.get("runtime") is not True:
            raise SandboxUnavailable(f"jobs cannot import StarForge's runner in the sandbox: {facts.get('runtime')}",
                                     "install StarForge in a Python environment readable by every user")
        if facts.get("writable") is not True:
            raise SandboxUnavailable(f"jobs cannot write their output folder: {facts.get('writable')}", fix)
        if uid is not None and facts.get("uid") != uid:
            raise SandboxUnavailable(f"the job ran as uid {facts.get('uid')} instead of {uid}", fix)
        if self.network is not None:
            self._judge_network(facts)

    def _judge_network(self, facts: dict[str, object]) -> None:
        assert self.network is not None
        off = "or set `executors: {local: {network: none}}`"
        if facts.get("reached"):
            raise SandboxUnavailable(f"a sandboxed job reached this machine's own port at {facts['reached']}",
                                     f"check that slirp4netns and iproute2 work here, {off}")
        if facts.get("channel") is not True:
            raise SandboxUnavailable(f"a sandboxed job cannot reach its console's channel: {facts.get('channel')}",
                                     "keep the state directory on a local filesystem that allows Unix sockets")
        interfaces = facts.get("interfaces")
        if self.network.mode == EGRESS and isinstance(interfaces, list) and "tap0" not in interfaces:
            raise SandboxUnavailable(f"a sandboxed job got no egress interface (it has {interfaces})",
                                     f"check that slirp4netns works here, {off}")

    def describe(self) -> str:
        """Return one line for the console's start banner."""
        if not self.sandboxed:
            return "job sandbox: OFF"
        who = f"per-job uids {self.config.uid_range[0]}-{self.config.uid_range[1]}" if self.uids else "user namespace"
        gib = self.memory_per_slot / 1024**3
        return (f"job sandbox: bubblewrap, {who}; {describe(self.network)}; limits: {self.limits_mode}, "
                f"{gib:.1f} GiB and {self.cpus_per_slot:g} CPU per slot")

    def warning(self) -> str:
        """Return the loud warning printed at every start when the sandbox is off ("" when it is on)."""
        if self.sandboxed:
            return ""
        return ("WARNING: the job sandbox is OFF (executors.local.sandbox: off). Jobs run as this console's user "
                "with its view of the machine: any job can read and change the console's state folder, its "
                "database and every user's runs, and can become an administrator. Use this only on a single-user "
                "machine; remove the setting to sandbox jobs.")
