"""The distributed world a job's node belongs to, read from the rendezvous its engine exports on every node
(`NNODES`, `NODE_RANK`, `NPROC_PER_NODE`, `MASTER_ADDR`, `MASTER_PORT`), and the torchrun command that starts this
node's share of it for a recipe whose launcher runs one world (torchrun, accelerate)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .pinned import PINNED_BOOTSTRAP

__all__ = ["World", "node_rank", "world_command", "world_from"]


@dataclass(frozen=True)
class World:
    """This node's place in a world of `nodes` nodes with `per_node` processes each, whose master is addr:port."""

    nodes: int
    rank: int
    per_node: int
    master_addr: str
    master_port: int


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(environ.get(name, "") or default)
    except ValueError:
        return default


def node_rank(environ: Mapping[str, str]) -> int:
    """Return this node's rank in a several-node job (0 on the first node, and on a job of one node)."""
    return max(0, _int(environ, "NODE_RANK", 0)) if _int(environ, "NNODES", 1) > 1 else 0


def world_from(environ: Mapping[str, str]) -> World | None:
    """Return the world of a several-node job (None on one node, or without a master to meet at)."""
    nodes = _int(environ, "NNODES", 1)
    addr = environ.get("MASTER_ADDR", "")
    if nodes <= 1 or not addr:
        return None
    return World(nodes, _int(environ, "NODE_RANK", 0), max(1, _int(environ, "NPROC_PER_NODE", 1)), addr,
                 _int(environ, "MASTER_PORT", 29500))


def world_command(python: str, world: World, argv: list[str]) -> list[str]:
    """Return `argv` started as this node's processes of `world` by torchrun (run with the runtime's pinned code:
    the job's files never shadow torch)."""
    return [python, "-c", PINNED_BOOTSTRAP, "torch.distributed.run", f"--nnodes={world.nodes}",
            f"--node-rank={world.rank}", f"--nproc-per-node={world.per_node}", f"--master-addr={world.master_addr}",
            f"--master-port={world.master_port}", "--no-python", *argv]
