#!/bin/bash
#SBATCH --job-name=sf-alice-exp-r-0123456789
#SBATCH --output=/shared/state/runs/alice/exp/r-0123456789/logs/output.log
#SBATCH --error=/shared/state/runs/alice/exp/r-0123456789/logs/output.log
#SBATCH --open-mode=append
#SBATCH --no-requeue
#SBATCH --time=0-02:00:00
#SBATCH --exclusive
#SBATCH --mail-type=FAIL
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --partition=gpu-h200
#SBATCH --constraint=h200
#SBATCH --account=lab
#SBATCH --qos=normal
#SBATCH hetjob
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:h100:8
#SBATCH --partition=gpu-h100
#SBATCH --account=lab
# StarForge run r-0123456789: written by the console, submitted with sbatch
set -euo pipefail
export FORGE_RUN_ID=r-0123456789
export HF_HOME=/shared/hub/alice
export STARFORGE_TOKEN="$(cat -- /shared/state/runs/alice/exp/r-0123456789/run-token)"
cd -- /shared/state/runs/alice/exp/r-0123456789/work
# several nodes: one task per node, with a torchrun-style rendezvous (the first node is the master)
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_0")
mapfile -t nodes_0 <<<"$hosts"
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_1")
mapfile -t nodes_1 <<<"$hosts"
export MASTER_ADDR="${nodes_0[0]}"
export MASTER_PORT=29500
export NNODES=2
export NPROC_PER_NODE=8
srun --het-group=0,1 bash -c 'export NODE_RANK="$SLURM_PROCID"; exec "$@"' starforge-node /shared/starforge/runtimes/rt-1/bin/python -m starforge.runner --plan /shared/state/runs/alice/exp/r-0123456789/work/.starforge/plan.json
