#!/bin/bash
#SBATCH --job-name=sf-alice-exp-r-0123456789
#SBATCH --output=/shared/state/runs/alice/exp/r-0123456789/logs/output.log
#SBATCH --error=/shared/state/runs/alice/exp/r-0123456789/logs/output.log
#SBATCH --open-mode=append
#SBATCH --no-requeue
#SBATCH --time=0-01:00:00
#SBATCH --exclusive
#SBATCH --mail-type=FAIL
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=1
#SBATCH --partition=cpu
# StarForge run r-0123456789: written by the console, submitted with sbatch
set -euo pipefail
export FORGE_RUN_ID=r-0123456789
export HF_HOME=/shared/hub/alice
export STARFORGE_TOKEN="$(cat -- /shared/state/runs/alice/exp/r-0123456789/run-token)"
cd -- /shared/state/runs/alice/exp/r-0123456789/work
# one node: the script becomes the command
exec /shared/starforge/runtimes/rt-1/bin/python -m starforge.runner --plan /shared/state/runs/alice/exp/r-0123456789/work/.starforge/plan.json
