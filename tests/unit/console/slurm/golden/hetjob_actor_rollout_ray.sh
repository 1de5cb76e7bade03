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
# Ray-on-Slurm: a Ray head on the first node, workers on the others, then the driver once
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_0")
mapfile -t nodes_0 <<<"$hosts"
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST_HET_GROUP_1")
mapfile -t nodes_1 <<<"$hosts"
head_node="${nodes_0[0]}"
head_ip=$(srun --het-group=0 --nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address | awk '{print $1}')
export RAY_ADDRESS="$head_ip:6379"
wait_for_nodes() {  # wait_for_nodes COUNT: until COUNT Ray nodes are alive, or the deadline passes
  local deadline=$((SECONDS + 300))
  until srun --het-group=0 --overlap --nodes=1 --ntasks=1 -w "$head_node" /shared/starforge/runtimes/rt-1/bin/python -c 'import ray, sys; ray.init(address=sys.argv[1], logging_level="ERROR"); sys.exit(0 if sum(1 for n in ray.nodes() if n["Alive"]) >= int(sys.argv[2]) else 1)' "$RAY_ADDRESS" "$1" >/dev/null 2>&1; do
    if (( SECONDS >= deadline )); then
      echo "starforge: fewer than $1 Ray nodes joined within 300s" >&2
      exit 1
    fi
    sleep 5
  done
}
srun --het-group=0 --nodes=1 --ntasks=1 -w "$head_node" /shared/starforge/runtimes/rt-1/bin/ray start --head --node-ip-address="$head_ip" --port=6379 --block &
wait_for_nodes 1
for node in "${nodes_0[@]:1}"; do
  srun --het-group=0 --nodes=1 --ntasks=1 -w "$node" /shared/starforge/runtimes/rt-1/bin/ray start --address="$RAY_ADDRESS" --block &
done
for node in "${nodes_1[@]}"; do
  srun --het-group=1 --nodes=1 --ntasks=1 -w "$node" /shared/starforge/runtimes/rt-1/bin/ray start --address="$RAY_ADDRESS" --block &
done
wait_for_nodes 2
# the driver; when it ends, the script ends and Slurm ends the Ray steps
srun --het-group=0 --overlap --nodes=1 --ntasks=1 -w "$head_node" /shared/starforge/runtimes/rt-1/bin/python -m starforge.runner --plan /shared/state/runs/alice/exp/r-0123456789/work/.starforge/plan.json
