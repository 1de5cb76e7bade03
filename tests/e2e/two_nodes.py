"""What the two-node suites of Slurm and Ray share: the program each rank runs, and the interpreter with torch
(the TRL recipes' CPU runtime) that runs it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import SF
from tests.integration.conftest import DEFAULT_CONFIG, RUNTIME_CACHE

RUNTIME = "trl-1.10.0"  # the TRL recipes' runtime: its torch runs the ranks' all_reduce
IMAGE = "nvcr.io/team/trainer:1.0"  # a stand-in name: the rig's consoles record images without pulling them
# what each rank runs: `hold MARKER` says it started and waits to be stopped; `reduce PYTHON` joins a gloo
# all_reduce (rank 0 then reports through PYTHON, which has StarForge); `fail`: rank 1 fails, rank 0 succeeds
RANK = '''
import datetime, os, subprocess, sys, threading
rank, world, node = int(os.environ["NODE_RANK"]), int(os.environ["NNODES"]), os.environ.get("SLURMD_NODENAME", "?")
if sys.argv[1] == "fail":
    print(f"RANK {rank}/{world} ends on {node}", flush=True)
    sys.exit(3 if rank == 1 else 0)
if sys.argv[1] == "hold":
    print(f"RANK {rank}/{world} holds on {node}", flush=True)
    threading.Event().wait()
import torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
                        rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(f"RANK {rank}/{world} on {node}: all_reduce={total.item():g} master={os.environ['MASTER_ADDR']} "
      f"ifname={os.environ['GLOO_SOCKET_IFNAME']}", flush=True)
dist.destroy_process_group()
if rank == 0:  # the report SDK is StarForge's: the interpreter that has it (the TRL runtime's torch has not)
    code = f"from starforge.runner import report; report.log({{'train/loss': {total.item()}}}, step=1); report.finish()"
    subprocess.run([sys.argv[2], "-c", code], check=True)
'''



def torch_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the folder of the TRL recipes' CPU runtime (torch with gloo), built once per machine and shared with
    the TRL suites; a job sees it read-only as its base-model folder (a folder of the console's model_roots)."""
    config = tmp_path_factory.mktemp("runtime") / "console.yaml"
    config.write_text(yaml.safe_dump({**DEFAULT_CONFIG, "runtimes": {"cache_dir": str(RUNTIME_CACHE)}}))
    built = subprocess.run([*SF, "console", "runtime", "build", RUNTIME, "--kind", "cpu", "--config", str(config),
                            "--json"], capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr[-4000:]
    return Path(json.loads(built.stdout)["interpreter"]).parent.parent
