"""The fabric: a job-private IPv4 network between the ranks of one multi-node job, provided by the nodes' helpers.

Each rank of a job runs sandboxed in a network namespace of its own (`jobnet`); its node's helper (`jobnet_node`,
outside the sandbox) adds a TUN interface `FABRIC_IFNAME` to that namespace, addressed `address_of(rank)` in
`FABRIC_NETWORK`, and relays its packets over one TCP link per rank to rank 0's helper, the hub, which forwards them
between ranks. The hub listens on an ephemeral port of its node and publishes `host port key` in `<dir>/rank0`
(0600, written atomically; `dir` is a folder of the run every node sees and the job never sees); every other rank's
helper waits for that file and connects, and both ends prove the per-job key (an HMAC challenge each way, fresh
nonces on both sides) before a packet passes: a connection without the key is dropped.

A packet passes only when its source is the sending rank's own fabric address and its destination another rank's;
anything else (another source, another destination, not IPv4) is dropped and counted. The namespace's other routes
and its prohibit rules are untouched, so the node stays unreachable. The prefix lies in 100.64.0.0/10 (RFC 6598,
shared address space): never an internet host's address, nor a cluster LAN's (RFC 1918), nor link-local space,
nor slirp4netns's 10.0.2.0/24; a node whose own addresses (which the job's prohibit routes close) fall inside it is
refused (`check_clear`) rather than silently shadowing a rank. Standard library only: nodes run it with
`python -I`.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import hmac
import ipaddress
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from .jobnet import NetworkUnavailable, _foreign_owner, _wait_for_uid_map

__all__ = ["FABRIC_IFNAME", "FABRIC_NETWORK", "FABRIC_PREFIX", "MAX_RANKS", "MTU", "RANK0_FILE", "Fabric",
           "FabricUnavailable", "address_of", "check_clear", "default_host", "route_of"]

FABRIC_IFNAME = "sf-fabric"
FABRIC_PREFIX = "100.64.213"
FABRIC_NETWORK = f"{FABRIC_PREFIX}.0/24"
MAX_RANKS = 254  # .1 … .254
MTU = 9000  # fewer, larger packets through the relay; the link is TCP, so nothing fragments on the node network
RANK0_FILE = "rank0"
WAIT_SECONDS = 120.0  # how long a rank's helper waits for rank 0's to publish its address
_SAY_EVERY = 10.0
_HANDSHAKE_SECONDS = 10.0
_MAGIC = b"SFF1"
_NONCE = 32
_FRAME = struct.Struct("!H")
_RANK = struct.Struct("!H")
# <linux/if_tun.h>, <linux/sockios.h>, <sched.h>
_TUNSETIFF, _IFF_TUN, _IFF_NO_PI = 0x400454CA, 0x0001, 0x1000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _SIOCSIFADDR, _SIOCSIFNETMASK, _SIOCSIFMTU = 0x8913, 0x8914, 0x8916, 0x891C, 0x8922
_IFF_UP, _IFF_RUNNING = 0x1, 0x40
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000


class FabricUnavailable(NetworkUnavailable):
    """Raised when a job's fabric cannot be set up (the job then never starts)."""


def address_of(rank: int) -> str:
    """Return the fabric address of `rank` (0-based): `FABRIC_PREFIX.(rank+1)`."""
    if not 0 <= rank < MAX_RANKS:
        raise ValueError(f"a fabric holds ranks 0 to {MAX_RANKS - 1}, not {rank}")
    return f"{FABRIC_PREFIX}.{rank + 1}"


def _rank_at(raw: bytes, ranks: int) -> int | None:
    """Return the rank whose fabric address is the 4 bytes `raw`, or None."""
    if raw[:3] != _PREFIX_BYTES:
        return None
    rank = raw[3] - 1
    return rank if 0 <= rank < ranks else None


_PREFIX_BYTES = socket.inet_aton(address_of(0))[:3]


def route_of(packet: bytes, ranks: int) -> tuple[int, int] | None:
    """Return (source rank, destination rank) of an IPv4 packet between two distinct ranks, or None to drop it."""
    if len(packet) < 20 or packet[0] >> 4 != 4 or (packet[0] & 0x0F) < 5:
        return None
    if int.from_bytes(packet[2:4], "big") != len(packet):
        return None
    source, destination = _rank_at(packet[12:16], ranks), _rank_at(packet[16:20], ranks)
    if source is None or destination is None or source == destination:
        return None
    return source, destination


def check_clear(prohibited: Iterable[str]) -> None:
    """Raise FabricUnavailable when a destination the job's namespace closes (its prohibit routes) overlaps the
    fabric: that rank's address would be unreachable, or the fabric would shadow a closed address."""
    fabric = ipaddress.ip_network(FABRIC_NETWORK)
    for item in prohibited:
        with contextlib.suppress(ValueError):
            network = ipaddress.ip_network(item.split()[-1], strict=False)
            if network.version == 4 and network.overlaps(fabric):
                raise FabricUnavailable(
                    f"this node's address {network} lies inside the job fabric's network {FABRIC_NETWORK}",
                    "give the node an address outside it (the fabric uses shared address space, RFC 6598)")


def default_host(toward: str) -> str:
    """Return this node's address as other nodes reach it: the one it uses toward `toward` (the console's host),
    else what its host name resolves to."""
    if toward:
        with contextlib.suppress(OSError, UnicodeError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((toward, 9))  # no packet is sent: the kernel only picks the route and its source
            return str(probe.getsockname()[0])
    with contextlib.suppress(OSError):
        return socket.gethostbyname(socket.gethostname())
    return "127.0.0.1"


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the fabric link closed")
        data += chunk
    return bytes(data)


class _Link:
    """One authenticated TCP link carrying length-prefixed packets; writes from several threads are serialized."""

    def __init__(self, sock: socket.socket, rank: int) -> None:
        self.sock, self.rank = sock, rank
        self._lock = threading.Lock()
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)

    def send(self, packet: bytes) -> None:
        with self._lock, contextlib.suppress(OSError):
            self.sock.sendall(_FRAME.pack(len(packet)) + packet)

    def receive(self) -> bytes:
        size = _FRAME.unpack(_recv_exactly(self.sock, _FRAME.size))[0]
        return _recv_exactly(self.sock, size) if size else b""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def _publish(folder: Path, host: str, port: int, key: bytes) -> None:
    tmp = folder / f".{RANK0_FILE}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(f"{host} {port} {key.hex()}\n")
    os.replace(tmp, folder / RANK0_FILE)


def _read_rank0(folder: Path) -> tuple[str, int, bytes] | None:
    try:
        host, port, key = (folder / RANK0_FILE).read_text(encoding="ascii").split()
        return host, int(port), bytes.fromhex(key)
    except (OSError, ValueError):
        return None


class Fabric:
    """One rank's end of a job's fabric: `start` (rank 0 listens and publishes, the others connect), `attach` (the
    TUN in the rank's namespace, then the relay), `close`. `say` writes a line to the job's log."""

    def __init__(self, rank: int, ranks: int, *, say: Callable[[str], None] | None = None) -> None:
        if not 2 <= ranks <= MAX_RANKS or not 0 <= rank < ranks:
            raise FabricUnavailable(f"rank {rank} of {ranks}: a fabric joins 2 to {MAX_RANKS} ranks")
        self.rank, self.ranks = rank, ranks
        self.say = say or (lambda line: print(f"starforge: {line}", file=sys.stderr, flush=True))
        self.dropped = 0  # packets refused by the filter (a forged source, a foreign destination, not IPv4)
        self._links: dict[int, _Link] = {}
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._published: Path | None = None  # the hub's rank0 file, removed when it closes
        self._tun: int | None = None
        self._wake_r, self._wake_w = os.pipe()
        self._closed = threading.Event()
        self.key = b""
        self.linked = threading.Condition(self._lock)  # notified when a rank's link comes up (the hub)

    # -- the rendezvous ----------------------------------------------------------------------------------------
    @classmethod
    def start(cls, folder: str | Path, rank: int, ranks: int, host: str, *, wait: float = WAIT_SECONDS,
              say: Callable[[str], None] | None = None) -> Fabric:
        """Return rank `rank`'s fabric, linked: rank 0 listens and publishes `folder/rank0`; another rank waits for
        that file (at most `wait` seconds, saying so) and connects with its key."""
        fabric = cls(rank, ranks, say=say)
        try:
            if rank == 0:
                fabric._listen(Path(folder), host)
            else:
                fabric._join(Path(folder), wait)
        except BaseException:
            fabric.close()
            raise
        return fabric

    def _listen(self, folder: Path, host: str) -> None:
        self.key = os.urandom(32)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            try:
                listener.bind((host, 0))
            except OSError:
                listener.bind(("0.0.0.0", 0))  # a --fabric-host this node does not hold (a NAT's address)
            listener.listen(64)
        except OSError as exc:
            listener.close()
            raise FabricUnavailable(f"the job fabric cannot listen on this node: {exc}") from exc
        self._listener = listener
        _publish(folder, host, listener.getsockname()[1], self.key)
        self._published = folder / RANK0_FILE
        threading.Thread(target=self._accept, name="fabric-accept", daemon=True).start()

    def _join(self, folder: Path, wait: float) -> None:
        deadline = time.monotonic() + wait
        said = time.monotonic()
        last = "rank 0 has not published its address yet"
        while True:
            found = _read_rank0(folder)
            if found is not None:
                try:
                    self._connect(*found)
                    return
                except (OSError, ConnectionError, FabricUnavailable) as exc:  # a stale file, rank 0 not ready yet
                    last = str(exc)
            now = time.monotonic()
            if now >= deadline:
                raise FabricUnavailable(f"rank {self.rank} could not join the job fabric within {wait:.0f}s: {last}")
            if now - said >= _SAY_EVERY:
                self.say(f"rank {self.rank} waits for rank 0's fabric ({folder / RANK0_FILE}): {last}")
                said = now
            time.sleep(0.1)

    def _connect(self, host: str, port: int, key: bytes) -> None:
        sock = socket.create_connection((host, port), timeout=_HANDSHAKE_SECONDS)
        try:
            hello = _recv_exactly(sock, len(_MAGIC) + _NONCE)
            if not hello.startswith(_MAGIC):
                raise FabricUnavailable("the fabric's hub answered in an unknown protocol")
            theirs, mine = hello[len(_MAGIC):], os.urandom(_NONCE)
            rank = _RANK.pack(self.rank)
            sock.sendall(rank + mine + _mac(key, b"rank", theirs, mine, rank))
            proof = _recv_exactly(sock, hashlib.sha256().digest_size)
            if not hmac.compare_digest(proof, _mac(key, b"hub", mine, theirs, rank)):
                raise FabricUnavailable("the fabric's hub did not prove the job's key")
        except BaseException:
            sock.close()
            raise
        self.key = key
        self._links[0] = _Link(sock, 0)

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._closed.is_set():
            try:
                sock, _peer = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._admit, args=(sock,), name="fabric-admit", daemon=True).start()

    def _admit(self, sock: socket.socket) -> None:
        """Authenticate one connection (the hub); a connection without the key, or for a rank already linked, is
        closed without a word."""
        try:
            sock.settimeout(_HANDSHAKE_SECONDS)
            mine = os.urandom(_NONCE)
            sock.sendall(_MAGIC + mine)
            answer = _recv_exactly(sock, _RANK.size + _NONCE + hashlib.sha256().digest_size)
            rank_bytes, theirs = answer[:_RANK.size], answer[_RANK.size:_RANK.size + _NONCE]
            rank = _RANK.unpack(rank_bytes)[0]
            proof = answer[_RANK.size + _NONCE:]
            if not hmac.compare_digest(proof, _mac(self.key, b"rank", mine, theirs, rank_bytes)) \
                    or not 1 <= rank < self.ranks:
                raise ConnectionError("refused")
            with self._lock:
                if rank in self._links or self._closed.is_set():
                    raise ConnectionError("refused")
                sock.sendall(_mac(self.key, b"hub", theirs, mine, rank_bytes))
                link = self._links[rank] = _Link(sock, rank)
                self.linked.notify_all()
        except (OSError, ConnectionError, struct.error):
            sock.close()
            return
        self._pump(link)

    # -- the relay ---------------------------------------------------------------------------------------------
    def attach(self, pid: int) -> None:
        """Add the fabric's TUN interface to the network namespace of process `pid` (bubblewrap's child), then
        relay its packets."""
        self.relay(open_tun(pid, address_of(self.rank)))

    def relay(self, tun: int) -> None:
        """Relay packets between `tun` (a TUN descriptor, or any packet descriptor) and the fabric's links."""
        self._tun = tun
        threading.Thread(target=self._from_tun, name="fabric-tun", daemon=True).start()
        if self.rank != 0:
            threading.Thread(target=self._pump, args=(self._links[0],), name="fabric-hub", daemon=True).start()

    def _drop(self) -> None:
        with self._lock:
            self.dropped += 1

    def _from_own(self, packet: bytes) -> None:
        """Send a packet of this rank's job on its way: to its destination's link (the hub) or to the hub."""
        route = route_of(packet, self.ranks)
        if route is None or route[0] != self.rank:
            self._drop()  # a source other than the rank's own address
            return
        link = self._links.get(route[1] if self.rank == 0 else 0)
        if link is None:
            self._drop()  # that rank has not joined yet: its TCP retries
            return
        link.send(packet)

    def _from_link(self, packet: bytes, link: _Link) -> None:
        """Deliver a packet that came over `link`: the hub checks it came from that rank and forwards it; a member
        takes only what is addressed to itself."""
        route = route_of(packet, self.ranks)
        if route is None:
            self._drop()
            return
        source, destination = route
        if self.rank == 0 and source != link.rank or self.rank != 0 and destination != self.rank:
            self._drop()
            return
        if destination != self.rank:
            onward = self._links.get(destination)
            if onward is None:
                self._drop()
                return
            onward.send(packet)
        elif self._tun is not None:
            with contextlib.suppress(OSError):
                os.write(self._tun, packet)

    def wait_linked(self, count: int, timeout: float) -> bool:
        """Return True once `count` ranks have linked to this hub, False after `timeout` seconds."""
        with self.linked:
            return self.linked.wait_for(lambda: len(self._links) >= count, timeout)

    def _from_tun(self) -> None:
        tun = self._tun
        assert tun is not None
        while not self._closed.is_set():
            ready = select.select([tun, self._wake_r], [], [])[0]
            if self._wake_r in ready:
                return
            try:
                packet = os.read(tun, 65535)
            except OSError:
                return
            if not packet:
                return
            self._from_own(packet)

    def _pump(self, link: _Link) -> None:
        while not self._closed.is_set():
            try:
                packet = link.receive()
            except (OSError, ConnectionError):
                break
            self._from_link(packet, link)
        if not self._closed.is_set():
            self.say(f"the job fabric's link to rank {link.rank} ended")

    def close(self) -> None:
        """Stop relaying; close the links, the listener and the TUN (which removes the interface)."""
        if self._closed.is_set():
            return
        self._closed.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._listener is not None:
            found = _read_rank0(self._published.parent) if self._published is not None else None
            if found is not None and found[2] == self.key and self._published is not None:
                self._published.unlink(missing_ok=True)  # a later attempt's rank 0 publishes its own
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with self._lock:
            links = list(self._links.values())
        for link in links:
            link.close()
        if self._tun is not None:
            with contextlib.suppress(OSError):
                os.close(self._tun)


# -- the TUN interface inside the job's namespace ------------------------------------------------------------------
def open_tun(pid: int, address: str, *, name: str = FABRIC_IFNAME, mtu: int = MTU) -> int:
    """Return a descriptor of a new TUN interface `name` (`address`/24, `mtu`, up) in the network namespace of `pid`.

    A short-lived child enters the namespace (and the user namespace owning it, when that is not this process's:
    setns there needs a single-threaded process) and passes the descriptor back; this process stays in the node's.
    """
    netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    owner: int | None = None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        owner = _foreign_owner(netns)
        if owner is not None:
            _wait_for_uid_map(pid)
        argv = [sys.executable, "-I", "-m", __name__, "--tun-child", str(netns), str(-1 if owner is None else owner),
                str(theirs.fileno()), name, address, str(mtu)]
        passed = (netns, theirs.fileno(), *([owner] if owner is not None else []))
        child = subprocess.Popen(argv, pass_fds=passed, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, close_fds=True)
        theirs.close()
        ours.settimeout(30)
        try:
            message, fds, _flags, _addr = socket.recv_fds(ours, 1024, 1)
        except OSError:
            message, fds = b"", []
        _out, errors = child.communicate(timeout=30)
        if not fds:
            said = (message or errors).decode("utf-8", "replace").strip().splitlines()
            raise FabricUnavailable(f"the job fabric's interface cannot be made: {' / '.join(said[-2:]) or 'no answer'}",
                                    "the node needs /dev/net/tun (mode 0666)")
        os.set_inheritable(fds[0], False)
        return fds[0]
    finally:
        for fd in (netns, owner):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        ours.close()
        theirs.close()


def _ifreq(name: str, payload: bytes = b"") -> bytes:
    return struct.pack("16s", name.encode()) + payload.ljust(24, b"\0")


def _make_tun(name: str, address: str, mtu: int) -> int:
    """In the job's namespace: create TUN `name`, give it `address`/24 and `mtu`, set it up; return its descriptor."""
    tun = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    fcntl.ioctl(tun, _TUNSETIFF, _ifreq(name, struct.pack("H", _IFF_TUN | _IFF_NO_PI)))
    inet = struct.pack("HH4s8x", socket.AF_INET, 0, socket.inet_aton(address))
    mask = struct.pack("HH4s8x", socket.AF_INET, 0, socket.inet_aton("255.255.255.0"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        fcntl.ioctl(control, _SIOCSIFADDR, _ifreq(name, inet))
        fcntl.ioctl(control, _SIOCSIFNETMASK, _ifreq(name, mask))
        fcntl.ioctl(control, _SIOCSIFMTU, _ifreq(name, struct.pack("i", mtu)))
        flags = struct.unpack("H", fcntl.ioctl(control, _SIOCGIFFLAGS, _ifreq(name))[16:18])[0]
        fcntl.ioctl(control, _SIOCSIFFLAGS, _ifreq(name, struct.pack("H", flags | _IFF_UP | _IFF_RUNNING)))
    return tun


def _tun_child(argv: Sequence[str]) -> int:
    """`--tun-child NETNS USERNS SOCK NAME ADDRESS MTU`: enter the namespaces, make the TUN, send it back."""
    netns, userns, reply = (int(word) for word in argv[:3])
    name, address, mtu = argv[3], argv[4], int(argv[5])
    back = socket.socket(fileno=reply)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for fd, kind in ((userns, _CLONE_NEWUSER), (netns, _CLONE_NEWNET)):
            if fd >= 0 and libc.setns(fd, kind) != 0:
                raise OSError(ctypes.get_errno(), f"setns: {os.strerror(ctypes.get_errno())}")
        tun = _make_tun(name, address, mtu)
    except OSError as exc:
        back.sendall(f"{exc}".encode()[:1000])
        return 1
    socket.send_fds(back, [b"ok"], [tun])
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--tun-child"]:
        sys.exit(_tun_child(sys.argv[2:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
