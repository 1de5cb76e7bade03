#!/bin/bash
#SBATCH --job-name=sf-alice-exp-r-0123456789
#SBATCH --output=/shared/state/runs/alice/exp/r-0123456789/logs/output.log
#SBATCH --error=/shared/state/runs/alice/exp/r-0123456789/logs/output.log
#SBATCH --open-mode=append
#SBATCH --no-requeue
#SBATCH --time=0-02:00:00
#SBATCH --exclusive
#SBATCH --mail-type=FAIL
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --partition=gpu-h200
#SBATCH --constraint=h200
#SBATCH --account=lab
#SBATCH --qos=normal
# StarForge run r-0123456789: written by the console, submitted with sbatch
set -euo pipefail
export FORGE_RUN_ID=r-0123456789
export HF_HOME=/shared/hub/alice
export STARFORGE_TOKEN="$(cat -- /shared/state/runs/alice/exp/r-0123456789/run-token)"
cd -- /shared/state/runs/alice/exp/r-0123456789
# several sandboxed nodes: one task per node; the ranks meet on the job fabric (rank 0 is the master)
export MASTER_ADDR=100.64.213.1
export MASTER_PORT=29500
export NNODES=2
export NPROC_PER_NODE=8
export GLOO_SOCKET_IFNAME=sf-fabric
export NCCL_SOCKET_IFNAME=sf-fabric
srun --nodes=2 --ntasks-per-node=1 bash -c 'export NODE_RANK="$SLURM_NODEID"; trap "" TERM; exec /shared/starforge/runtimes/rt-1/bin/python -I -m starforge.engines.jobnet_node --network egress --console http://console.lab:8000/api/ingest --fabric /shared/state/runs/alice/exp/r-0123456789/fabric --ranks 2 --rank "$NODE_RANK" -- "$@" 9</shared/state/runs/alice/exp/r-0123456789/sandbox.args' starforge-node /usr/bin/bwrap --args 9 -- env --default-signal=TERM setpriv --reuid=61184 --regid=61184 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- /shared/starforge/runtimes/rt-1/bin/python -m starforge.runner --workdir /forge/runs/alice/exp/r-0123456789/work
