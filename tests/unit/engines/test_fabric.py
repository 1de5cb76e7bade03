"""The job fabric's relay and rendezvous, in one process: each rank's TUN is a packet socket pair, so what a rank's
job would receive is read from its other end. Only packets between two ranks, from the sender's own address, pass;
a helper without the job's key is refused; the prefix never collides with what the job's namespace closes."""

from __future__ import annotations

import select
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from starforge.engines import fabric
from starforge.engines.fabric import Fabric, FabricUnavailable, address_of, check_clear, route_of
from starforge.engines.jobnet import EGRESS, JobNetwork

RANKS = 3


def packet(source: str, destination: str, payload: bytes = b"hi", *, version: int = 4) -> bytes:
    """Return an IPv4 packet (UDP protocol number, no checksum: the relay never reads past the addresses)."""
    total = 20 + len(payload)
    header = struct.pack("!BBHHHBBH4s4s", (version << 4) | 5, 0, total, 0, 0, 64, 17, 0,
                         socket.inet_aton(source), socket.inet_aton(destination))
    return header + payload


def received(end: socket.socket, timeout: float = 10) -> bytes:
    """Return the next packet the rank's namespace receives (its TUN's other end)."""
    assert select.select([end], [], [], timeout)[0], "no packet arrived"
    return end.recv(65535)


def test_addresses_are_one_per_rank_inside_shared_address_space() -> None:
    assert [address_of(r) for r in (0, 1, 253)] == ["100.64.213.1", "100.64.213.2", "100.64.213.254"]
    with pytest.raises(ValueError):
        address_of(254)
    assert fabric.FABRIC_IFNAME == "sf-fabric" and fabric.MTU >= 1400


def test_route_of_accepts_only_ipv4_between_two_distinct_ranks() -> None:
    assert route_of(packet(address_of(1), address_of(0)), RANKS) == (1, 0)
    assert route_of(packet("10.0.2.100", address_of(0)), RANKS) is None  # another source
    assert route_of(packet(address_of(1), "192.0.2.2"), RANKS) is None  # outside the fabric
    assert route_of(packet(address_of(1), address_of(RANKS)), RANKS) is None  # a rank the job does not have
    assert route_of(packet(address_of(1), address_of(1)), RANKS) is None
    assert route_of(packet(address_of(1), address_of(0), version=6), RANKS) is None
    assert route_of(packet(address_of(1), address_of(0))[:19], RANKS) is None
    assert route_of(packet(address_of(1), address_of(0)) + b"trailing", RANKS) is None  # length disagrees


def test_the_prefix_is_clear_of_what_a_jobs_namespace_closes_on_this_machine() -> None:
    check_clear(JobNetwork(EGRESS, denied=("198.51.100.7",)).routes())  # the machine's addresses, link-local, slirp
    with pytest.raises(FabricUnavailable, match="inside the job fabric"):
        check_clear([f"route add prohibit {address_of(5)}/32"])


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[list[Fabric], list[socket.socket]]]:
    """Three linked ranks, each relaying a packet socket pair standing in for its TUN; yield them and the job ends."""
    said: list[str] = []
    hub = Fabric.start(tmp_path, 0, RANKS, "127.0.0.1", say=said.append)
    ranks = [hub]
    try:
        for rank in range(1, RANKS):
            ranks.append(Fabric.start(tmp_path, rank, RANKS, "", wait=10, say=said.append))
        assert hub.wait_linked(RANKS - 1, 10)
        jobs = []
        for rank in ranks:
            tun, job = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            rank.relay(tun.detach())
            jobs.append(job)
        yield ranks, jobs
    finally:
        for rank in ranks:
            rank.close()


def test_packets_pass_between_ranks_through_the_hub(world: tuple[list[Fabric], list[socket.socket]]) -> None:
    ranks, jobs = world
    one_to_two = packet(address_of(1), address_of(2), b"forwarded by the hub")
    jobs[1].send(one_to_two)
    assert received(jobs[2]) == one_to_two
    two_to_zero = packet(address_of(2), address_of(0), b"to the hub's own job")
    jobs[2].send(two_to_zero)
    assert received(jobs[0]) == two_to_zero
    zero_to_one = packet(address_of(0), address_of(1), b"from the hub's job")
    jobs[0].send(zero_to_one)
    assert received(jobs[1]) == zero_to_one


def test_a_forged_source_or_a_foreign_destination_is_dropped(world: tuple[list[Fabric], list[socket.socket]]) -> None:
    ranks, jobs = world
    for forged in (packet(address_of(2), address_of(0), b"rank 1 posing as 2"),
                   packet("10.0.2.100", address_of(0), b"its tap address"),
                   packet(address_of(1), "192.0.2.2", b"the node"),
                   packet(address_of(1), address_of(0), version=6)):
        jobs[1].send(forged)
    honest = packet(address_of(1), address_of(0), b"honest")
    jobs[1].send(honest)
    assert received(jobs[0]) == honest  # one link, in order: nothing forged came before it
    assert ranks[1].dropped == 4


def test_the_hub_drops_a_member_speaking_for_another_rank(world: tuple[list[Fabric], list[socket.socket]]) -> None:
    ranks, jobs = world
    link = ranks[1]._links[0]  # what a tampered member would send over its authenticated link
    link.send(packet(address_of(2), address_of(0), b"forged over the link"))
    honest = packet(address_of(1), address_of(0), b"honest")
    link.send(honest)
    assert received(jobs[0]) == honest
    assert ranks[0].dropped == 1


def test_a_helper_without_the_key_is_refused(tmp_path: Path) -> None:
    hub = Fabric.start(tmp_path, 0, 2, "127.0.0.1", say=lambda line: None)
    try:
        host, port, key = (tmp_path / fabric.RANK0_FILE).read_text().split()
        forged = tmp_path / "forged"
        forged.mkdir()
        (forged / fabric.RANK0_FILE).write_text(f"{host} {port} {'00' * 32}\n")
        with pytest.raises(FabricUnavailable, match="could not join"):
            Fabric.start(forged, 1, 2, "", wait=0.5, say=lambda line: None)
        with socket.create_connection((host, int(port)), timeout=10) as rogue:  # garbage instead of a proof
            rogue.recv(36)
            rogue.sendall(b"\1" * 66)
            assert rogue.recv(100) == b""  # closed without a word
        assert not hub._links
        member = Fabric.start(tmp_path, 1, 2, "", wait=10, say=lambda line: None)  # the key: linked
        try:
            assert hub.wait_linked(1, 10) and set(hub._links) == {1}
            with pytest.raises(FabricUnavailable):  # a second helper for a linked rank is refused
                Fabric.start(tmp_path, 1, 2, "", wait=0.5, say=lambda line: None)
        finally:
            member.close()
    finally:
        hub.close()
    assert not (tmp_path / fabric.RANK0_FILE).exists()  # the hub takes its address back


def test_rank0_is_published_privately(tmp_path: Path) -> None:
    hub = Fabric.start(tmp_path, 0, 2, "127.0.0.1", say=lambda line: None)
    try:
        published = tmp_path / fabric.RANK0_FILE
        assert published.stat().st_mode & 0o777 == 0o600
        host, port, key = published.read_text().split()
        assert host == "127.0.0.1" and int(port) > 0 and len(bytes.fromhex(key)) == 32
    finally:
        hub.close()
