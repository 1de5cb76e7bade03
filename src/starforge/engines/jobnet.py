"""Job networks: every sandboxed job in its own network namespace, with no network (`none`) or egress (`egress`).

bubblewrap gives the job a new network namespace holding only its own loopback (`--unshare-net`) and waits before
the job starts (`--block-fd`). `NetworkStart.attach` then, for `egress`, plugs slirp4netns (a user-mode TCP/IP stack
running as the console's user, in its own sandbox and seccomp filter) into that namespace, and adds `prohibit` routes
inside it for every destination this machine delivers locally (its own addresses, whatever interface holds them),
link-local space (cloud metadata), the stack's own host alias and any address the caller adds (the console's host,
seen from a cluster node), so a connection to any of them fails at once; only then does the job start. No port is
forwarded, so nothing the job listens on is reachable from the machine. The job reaches its console only through
the channel folder mounted at `wire.CHANNEL_DIR`.

A job cannot undo any of it: it holds no capability in the namespace's owning user namespace. Standard library only:
Slurm nodes run this module as `python -m` (see `jobnet_node`).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "EGRESS",
    "NETWORK_MODES",
    "NONE",
    "JobNetwork",
    "NetworkStart",
    "NetworkUnavailable",
    "bind_unix",
    "describe",
    "host_addresses",
    "local_destinations",
    "network_mode",
]

NONE = "none"
EGRESS = "egress"
NETWORK_MODES = (NONE, EGRESS)

LINK_LOCAL = "169.254.0.0/16"  # cloud metadata services answer here
SLIRP_HOST = "10.0.2.2/32"  # slirp4netns's alias of the machine's own loopback (also refused by the stack itself)
SLIRP_DNS = "10.0.2.3"  # slirp4netns's DNS forwarder: the machine's resolver, for a machine whose resolver is loopback
TAP, TAP_ADDRESS, MTU = "tap0", "10.0.2.100/24", 65520  # the job's side of slirp4netns (its usual addresses)
_NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace
_WAIT = 20.0  # seconds to wait for bubblewrap's child and for slirp4netns
_SUN_PATH = 100  # a Unix socket's address holds 108 bytes; longer paths are bound through their folder


def network_mode(value: object, where: str) -> str:
    """Return a configured job network (`none` or `egress`); raise ValueError naming `where` otherwise."""
    if value not in NETWORK_MODES:
        raise ValueError(f"{where}: must be none (no network: the job reaches only its console) or egress (the "
                         f"internet, never this machine's own ports); got {value!r}")
    return str(value)


class NetworkUnavailable(RuntimeError):
    """Raised when a job's network cannot be set up as the policy says; `fix` says what the operator can do."""

    def __init__(self, message: str, fix: str = "") -> None:
        self.fix = fix
        super().__init__(message)


@dataclass(frozen=True)
class JobNetwork:
    """How jobs reach the network: `mode` (none | egress), the tools, and further destinations they must not reach."""

    mode: str = EGRESS
    slirp: str = ""
    nsenter: str = ""
    ip: str = ""
    denied: tuple[str, ...] = ()

    @classmethod
    def find(cls, mode: str, denied: Iterable[str] = ()) -> JobNetwork:
        """Return the policy `mode` with its tools found on PATH; raise NetworkUnavailable naming what is missing."""
        if mode not in NETWORK_MODES:
            raise NetworkUnavailable(f"unknown job network {mode!r}", f"use one of {', '.join(NETWORK_MODES)}")
        if mode == NONE:
            return cls(mode, denied=tuple(denied))
        tools = {name: shutil.which(name) or "" for name in ("slirp4netns", "nsenter", "ip")}
        missing = [name for name, path in tools.items() if not path]
        if missing:
            raise NetworkUnavailable(
                f"jobs cannot get egress-only networking: {', '.join(missing)} not found",
                "install slirp4netns, util-linux (nsenter) and iproute2 (Debian/Ubuntu: apt-get install slirp4netns "
                "util-linux iproute2), or set `network: none` to give jobs no network at all")
        return cls(mode, tools["slirp4netns"], tools["nsenter"], tools["ip"], tuple(denied))

    def prepare(self, *, job_holds_exit: bool) -> NetworkStart:
        """Return the pipes of one start; bubblewrap must inherit `NetworkStart.child_fds`.

        With `job_holds_exit`, the job itself holds the pipe that keeps its network stack alive (a job that outlives
        the process starting it: the local executor's); otherwise the starting process does (a node's helper).
        """
        return NetworkStart(self, job_holds_exit)

    def configuration(self) -> list[str]:
        """Return the `ip -batch` lines of a job's network: every forbidden destination closed, then the stack's
        tap device up with its address and the default route (slirp4netns's own defaults)."""
        return [*self.routes(), f"link set {TAP} mtu {MTU} up", f"addr add {TAP_ADDRESS} dev {TAP}",
                f"route add default via {SLIRP_HOST.split('/')[0]} dev {TAP}"]

    def routes(self) -> list[str]:
        """Return the `ip -batch` lines that make every forbidden destination unreachable inside a job."""
        wanted = [*local_destinations(), LINK_LOCAL, SLIRP_HOST, *self.denied]
        seen: list[str] = []
        for net in wanted:
            try:
                network = ipaddress.ip_network(net, strict=False)
            except ValueError:
                continue
            if network.version == 4 and not network.is_loopback and str(network) not in seen:
                seen.append(str(network))
        return [f"route add prohibit {net}" for net in seen]


def local_destinations() -> list[str]:
    """Return every IPv4 destination this machine delivers to itself (its local routing table), loopback aside."""
    ip = shutil.which("ip")
    found: list[str] = []
    if ip:
        with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
            out = subprocess.run([ip, "-4", "-j", "route", "show", "table", "local", "type", "local"],
                                 capture_output=True, text=True, timeout=10, check=True).stdout
            for route in json.loads(out or "[]"):
                destination = str(route.get("dst", ""))
                if destination and not destination.startswith("127."):
                    found.append(destination)
    if not found:  # no iproute2 JSON: the kernel's own list of local addresses
        with contextlib.suppress(OSError):
            found = _fib_locals(Path("/proc/net/fib_trie").read_text(encoding="ascii"))
    return found


def _fib_locals(text: str) -> list[str]:
    """Return the /32 LOCAL entries of /proc/net/fib_trie (the machine's own IPv4 addresses)."""
    out: list[str] = []
    last = ""
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("|--", "+--"):
            last = words[1].split("/")[0]
        elif "/32 host LOCAL" in line and last and not last.startswith("127.") and last not in out:
            out.append(last)
    return out


def host_addresses(host: str) -> list[str]:
    """Return the IPv4 addresses `host` resolves to (for `JobNetwork.denied`), or [] when it does not resolve."""
    with contextlib.suppress(OSError, UnicodeError):
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, socket.AF_INET)})
    return []


@dataclass
class NetworkStart:
    """The pipes of one sandboxed start: bubblewrap reports its child, waits, and learns when to let it run."""

    network: JobNetwork
    job_holds_exit: bool
    _fds: dict[str, int] = field(default_factory=dict)
    _netns: tuple[int | None, ...] = ()

    def __post_init__(self) -> None:
        self._fds["info_r"], self._fds["info_w"] = os.pipe()
        self._fds["block_r"], self._fds["block_w"] = os.pipe()
        if self.network.mode == EGRESS:
            self._fds["exit_r"], self._fds["exit_w"] = os.pipe()
        for fd in self._fds.values():
            os.set_inheritable(fd, False)

    def options(self, *, image: bool = False) -> list[str]:
        """Return bubblewrap's options for this start: where it reports, where it waits, and the job's resolver.

        They go after the view's own options (a resolver is bound over the system's /etc/resolv.conf; in an
        `image`, over the image's own, which the image cache keeps a plain file, with this machine's resolver).
        """
        options = ["--info-fd", str(self._fds["info_w"]), "--block-fd", str(self._fds["block_r"])]
        override = resolver_override() if self.network.mode == EGRESS else None
        if image and self.network.mode == EGRESS and override is None:
            with contextlib.suppress(OSError):
                override = Path("/etc/resolv.conf").read_text(encoding="utf-8", errors="replace")
        if override is not None:
            fd = os.memfd_create("resolv.conf", 0)
            os.write(fd, override.encode())
            os.lseek(fd, 0, os.SEEK_SET)
            self._fds["resolv"] = fd
            options += ["--perms", "0644", "--ro-bind-data", str(fd),
                        "/etc/resolv.conf" if image else os.path.realpath("/etc/resolv.conf")]
        return options

    @property
    def child_fds(self) -> tuple[int, ...]:
        """Return the descriptors bubblewrap must inherit."""
        keep = ["info_w", "block_r", "resolv", *(["exit_w"] if self.job_holds_exit else [])]
        return tuple(self._fds[name] for name in keep if name in self._fds)

    def started(self) -> None:
        """Close this process's copies of bubblewrap's ends, once bubblewrap runs."""
        for name in ("info_w", "block_r", "resolv", *(("exit_w",) if self.job_holds_exit else ())):
            self._close(name)

    def attach(self, ready: Callable[[int], None] | None = None) -> subprocess.Popen[bytes] | None:
        """Give bubblewrap's child its network, then let the job start; return the network stack's process.

        `ready` is called with the child's pid once its network is set up, before the job starts (the fabric).
        Raises NetworkUnavailable after killing the waiting child, so the job never starts.
        """
        pid = self._child_pid()
        stack = None
        try:
            if self.network.mode == EGRESS:
                stack = self._slirp(pid)
                self._configure()
            if ready is not None:
                ready(pid)
            os.write(self._fds["block_w"], b"1")
        except BaseException:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # still waiting before the job's command: nothing of the job ran
            if stack is not None:
                stack.kill()
                stack.wait()
            raise
        self._close("block_w")
        return stack

    def close(self) -> None:
        """Close every descriptor still open (on success and on failure)."""
        for name in list(self._fds):
            self._close(name)

    def release_stack(self) -> None:
        """Let the network stack end: the starting process's end of its exit pipe (a node helper, at the job's end)."""
        self._close("exit_w")

    # -- steps -------------------------------------------------------------------------------------------------
    def _close(self, name: str) -> None:
        fd = self._fds.pop(name, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _child_pid(self) -> int:
        raw = b""
        deadline = time.monotonic() + _WAIT
        fd = self._fds["info_r"]
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise NetworkUnavailable("bubblewrap did not report its sandbox in time")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise NetworkUnavailable("bubblewrap ended before its sandbox was ready (see the job's log)")
            raw += chunk
            with contextlib.suppress(ValueError):
                info = json.loads(raw)
                return int(info["child-pid"])

    def _slirp(self, pid: int) -> subprocess.Popen[bytes]:
        net = self.network
        netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        owner = _foreign_owner(netns)
        self._netns = (netns, owner)
        if owner is not None:
            _wait_for_uid_map(pid)
        ready_r, ready_w = os.pipe()
        passed = [netns, ready_w, self._fds["exit_r"], *([owner] if owner is not None else [])]
        # a root console's stack drops its capabilities into an empty mount namespace; an ordinary user's cannot (its
        # sandbox needs gid 0 in the job's user namespace) and runs as that user; both filter their system calls
        sandbox = ["--enable-sandbox"] if owner is None and os.geteuid() == 0 else []
        # not `--configure`: that brings the namespace's loopback up while bubblewrap may still be setting it up
        # itself (it then fails); `_configure` sets the tap device up, after closing what the job must not reach
        argv = [net.slirp, f"--mtu={MTU}", "--disable-host-loopback", *sandbox,
                "--enable-seccomp", f"--ready-fd={ready_w}", f"--exit-fd={self._fds['exit_r']}",
                *([f"--userns-path=/proc/self/fd/{owner}"] if owner is not None else []),
                "--netns-type=path", f"/proc/self/fd/{netns}", TAP]
        try:
            with tempfile.TemporaryFile() as errors:
                stack = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors,
                                         pass_fds=passed, start_new_session=True, close_fds=True)
                os.close(ready_w)
                ready_w = -1
                if select.select([ready_r], [], [], _WAIT)[0] and os.read(ready_r, 1) == b"1":
                    return stack
                stack.kill()
                stack.wait()
                errors.seek(0)
                said = errors.read().decode("utf-8", "replace").strip().splitlines()
            tun = any("/dev/net/tun" in line for line in said)
            raise NetworkUnavailable(
                f"slirp4netns could not give the job a network: {' / '.join(said[-3:]) or 'no answer'}",
                ("make /dev/net/tun usable by the console's user (chmod 0666 /dev/net/tun, its usual mode), "
                 if tun else "") + "or set `network: none` to give jobs no network at all")
        except BaseException:
            self._close_netns()
            raise
        finally:
            for fd in (ready_r, ready_w):
                if fd >= 0:
                    os.close(fd)
            self._close("exit_r")

    def _close_netns(self) -> None:
        for fd in getattr(self, "_netns", ()):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._netns = ()

    def _configure(self) -> None:
        netns, owner = self._netns
        try:
            argv = [self.network.nsenter, f"--net=/proc/self/fd/{netns}"]
            if owner is not None:
                argv += [f"--user=/proc/self/fd/{owner}", "--preserve-credentials"]
            argv += [self.network.ip, "-batch", "-"]
            lines = "\n".join(self.network.configuration()) + "\n"
            passed = (netns, *([owner] if owner is not None else []))
            done = subprocess.run(argv, input=lines.encode(), capture_output=True, timeout=_WAIT, pass_fds=passed,
                                  check=False)
            if done.returncode != 0:
                raise NetworkUnavailable("cannot configure the job's network: "
                                         + done.stderr.decode("utf-8", "replace").strip()[-300:])
        finally:
            self._close_netns()


def bind_unix(path: str, *, backlog: int = 512) -> socket.socket:
    """Return a listening Unix socket at `path` that any uid may connect to (a stale socket there is replaced).

    A path longer than a socket address holds is bound through its folder's descriptor.
    """
    folder, name = os.path.split(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if len(path.encode()) <= _SUN_PATH:
            sock.bind(path)
        else:
            handle = os.open(folder, os.O_PATH | os.O_DIRECTORY)
            try:
                sock.bind(f"/proc/self/fd/{handle}/{name}")
            finally:
                os.close(handle)
        os.chmod(path, 0o666)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


def _wait_for_uid_map(pid: int) -> None:
    """Wait until bubblewrap's child has mapped its user namespace (it does so after its loopback, late in its set-up);
    before that, a process entering the namespace holds no usable identity there and cannot change its network."""
    deadline = time.monotonic() + _WAIT
    while True:
        try:
            if Path(f"/proc/{pid}/uid_map").read_text(encoding="ascii").strip():
                return
        except OSError as exc:
            raise NetworkUnavailable(f"bubblewrap's sandbox ended during its set-up: {exc.strerror}") from exc
        if time.monotonic() > deadline:
            raise NetworkUnavailable("bubblewrap's sandbox did not map its user namespace in time")
        time.sleep(0.002)


def _foreign_owner(netns: int) -> int | None:
    """Return a descriptor of the user namespace owning `netns` when it is not this process's own, else None."""
    owner = fcntl.ioctl(netns, _NS_GET_USERNS)
    if os.stat(f"/proc/self/fd/{owner}").st_ino == os.stat("/proc/self/ns/user").st_ino:
        os.close(owner)
        return None
    os.set_inheritable(owner, False)
    return owner


def resolver_override(resolv_conf: str = "/etc/resolv.conf") -> str | None:
    """Return the resolv.conf a job with egress needs when this machine's resolver is on its own loopback, else None.

    Inside the job's namespace loopback is the job's own; slirp4netns forwards `SLIRP_DNS` to the machine's resolver.
    """
    try:
        text = Path(resolv_conf).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    servers = [line.split()[1] for line in text.splitlines() if line.strip().startswith("nameserver")
               and len(line.split()) > 1]
    local = [s for s in servers if _is_loopback(s)]
    if servers and len(local) < len(servers):
        return None
    kept = [line for line in text.splitlines() if line.strip().split()[:1] in (["search"], ["options"], ["domain"])]
    return "\n".join([f"nameserver {SLIRP_DNS}", *kept]) + "\n"


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def describe(network: JobNetwork | None) -> str:
    """Return the job network in a few words for the console's start banner."""
    if network is None:
        return "network: the machine's (not isolated)"
    if network.mode == NONE:
        return "network: none (own namespace)"
    return "network: egress only (own namespace, slirp4netns; the machine's addresses closed)"

