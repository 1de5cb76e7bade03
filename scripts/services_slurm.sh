# Sourced by scripts/services.sh: slurm_up, slurm_down and slurm_status for a two-node Slurm cluster on loopback.
#
# Debian's slurm-wlm and munge; the configuration lives in $SLURM_DIR (slurm.conf, gres.conf, cgroup.conf; the
# commands find it through SLURM_CONF, which slurm_up records in .services/env with SLURM_AVAILABLE=1). Two real
# nodes run on this machine: this host's slurmd and a second one started as `slurmd -N $SLURM_NODE2` on its own
# port (Debian's slurmd is built for several per host: its pid file, spool and log are per node through %n), so a
# two-node job really runs across two slurmd. Each node declares 8 GPUs as a GRES, so GPU scheduling is exercised
# without GPUs. Slurm 22.05 drops a GPU GRES without device files, so gres.conf names eight stand-in device nodes
# (copies of /dev/null's numbers, never opened: devices are not constrained). A third node of the same shape is
# declared DOWN (its slurmd port is never served), so a job larger than the two real nodes waits with Slurm's
# reason instead of being refused. No accounting daemon: finished jobs stay known to `scontrol show job` for
# MinJobAge seconds.
SLURM_DIR="${STARFORGE_SLURM_DIR:-/tmp/starforge-slurm}"
SLURM_PARTITION="${STARFORGE_SLURM_PARTITION:-debug}"
SLURM_NODE2="sf-node2"  # the second real node: a second slurmd on this machine
SLURM_GHOST="sf-ghost"  # the node that never comes up

slurm_env() { env SLURM_CONF="$SLURM_DIR/slurm.conf" "$@"; }

slurm_install() {
  if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
    return
  fi
  echo "services: installing Slurm and munge from Debian's packages"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurm-wlm munge >/dev/null
}

slurm_proctrack() {
  # proctrack/cgroup (cgroup v1 freezer) ends every process of a job; linuxproc, the fallback, follows processes by
  # parentage, so a job's process that started its own session outlives a stop (the conformance suite sees it)
  if [ -d /sys/fs/cgroup/freezer ] && [ -w /sys/fs/cgroup/freezer ]; then echo cgroup; else echo linuxproc; fi
}

slurm_write_conf() {
  local node cpus proctrack
  node="$(hostname -s)"
  cpus=16  # declared, not detected: a few small test jobs share the machine's cores (config_overrides)
  proctrack="${STARFORGE_SLURM_PROCTRACK:-$(slurm_proctrack)}"
  mkdir -p "$SLURM_DIR/spool/ctld" "$SLURM_DIR/spool/d-$node" "$SLURM_DIR/spool/d-$SLURM_NODE2" "$SLURM_DIR/log" \
    "$SLURM_DIR/run"
  cat > "$SLURM_DIR/slurm.conf.new" <<EOF
# written by scripts/services.sh: a two-node test cluster on loopback (two slurmd on this machine)
ClusterName=starforge
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=${STARFORGE_SLURMCTLD_PORT:-6817}
SlurmdPort=${STARFORGE_SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$SLURM_DIR/spool/ctld
SlurmdSpoolDir=$SLURM_DIR/spool/d-%n
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd-%n.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/$proctrack
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SchedulerParameters=sched_min_interval=100000,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
MinJobAge=3600
KillWait=1
InactiveLimit=0
Waittime=0
ReturnToService=1
MpiDefault=none
LaunchParameters=use_interactive_step
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$node CPUs=$cpus Gres=gpu:8 State=UNKNOWN
NodeName=$SLURM_NODE2 NodeAddr=127.0.0.1 NodeHostname=$node Port=${STARFORGE_SLURMD2_PORT:-6819} CPUs=$cpus Gres=gpu:8 State=UNKNOWN
NodeName=$SLURM_GHOST NodeAddr=127.0.0.1 Port=${STARFORGE_SLURM_GHOST_PORT:-6899} CPUs=$cpus Gres=gpu:8 State=DOWN Reason=never-started
PartitionName=$SLURM_PARTITION Nodes=$node,$SLURM_NODE2,$SLURM_GHOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  mkdir -p "$SLURM_DIR/dev"
  local i
  for i in 0 1 2 3 4 5 6 7; do  # a regular file also counts (slurmd logs an error per file): when mknod is denied
    [ -e "$SLURM_DIR/dev/gpu$i" ] || mknod "$SLURM_DIR/dev/gpu$i" c 1 3 2>/dev/null || touch "$SLURM_DIR/dev/gpu$i"
  done
  echo "Name=gpu Count=8 File=$SLURM_DIR/dev/gpu[0-7]" > "$SLURM_DIR/gres.conf.new"
  printf 'CgroupPlugin=cgroup/v1\nCgroupAutomount=yes\nConstrainCores=no\nConstrainRAMSpace=no\nConstrainDevices=no\n' \
    > "$SLURM_DIR/cgroup.conf.new"
  local changed=0 f
  for f in slurm.conf gres.conf cgroup.conf; do
    if ! cmp -s "$SLURM_DIR/$f.new" "$SLURM_DIR/$f"; then mv "$SLURM_DIR/$f.new" "$SLURM_DIR/$f"; changed=1
    else rm -f "$SLURM_DIR/$f.new"; fi
  done
  echo "$changed"
}

slurm_pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

slurm_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
  if [ ! -s /etc/munge/munge.key ]; then
    as_root mkdir -p /etc/munge
    as_root dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  as_root mkdir -p /run/munge /var/log/munge /var/lib/munge
  if id munge >/dev/null 2>&1; then
    as_root chown munge: /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
    as_root chmod 0400 /etc/munge/munge.key
    as_root runuser -u munge -- /usr/sbin/munged
  else
    as_root /usr/sbin/munged --force
  fi
}

slurm_nodes() { echo "$(hostname -s) $SLURM_NODE2"; }  # the nodes that run: this host's slurmd, then `-N`'s

slurm_healthy() {
  local n
  slurm_pid_alive "$SLURM_DIR/run/slurmctld.pid" || return 1
  for n in $(slurm_nodes); do
    slurm_pid_alive "$SLURM_DIR/run/slurmd-$n.pid" || return 1
    slurm_env sinfo -h -n "$n" -o '%t' 2>/dev/null | grep -Eq '^(idle|mix|alloc)' || return 1
  done
}

slurm_stop_daemons() {
  local f pid
  # slurmd.pid: a one-node cluster's, from before the second node
  for f in slurmd $(for n in $(slurm_nodes); do echo "slurmd-$n"; done) slurmctld; do
    if slurm_pid_alive "$SLURM_DIR/run/$f.pid"; then
      pid="$(cat "$SLURM_DIR/run/$f.pid")"
      as_root kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
}

slurm_up() {
  local started=$SECONDS changed
  slurm_install
  changed="$(slurm_write_conf)"
  slurm_munge
  if [ "$changed" = 1 ]; then slurm_stop_daemons; fi
  if ! slurm_healthy; then
    if ! slurm_pid_alive "$SLURM_DIR/run/slurmctld.pid"; then
      as_root env SLURM_CONF="$SLURM_DIR/slurm.conf" /usr/sbin/slurmctld -c -i
    fi
    if ! slurm_pid_alive "$SLURM_DIR/run/slurmd-$(hostname -s).pid"; then
      as_root env SLURM_CONF="$SLURM_DIR/slurm.conf" /usr/sbin/slurmd
    fi
    if ! slurm_pid_alive "$SLURM_DIR/run/slurmd-$SLURM_NODE2.pid"; then
      as_root env SLURM_CONF="$SLURM_DIR/slurm.conf" /usr/sbin/slurmd -N "$SLURM_NODE2"
    fi
    local ok=0
    for _ in $(seq 300); do
      if slurm_healthy; then ok=1; break; fi
      sleep 0.1
    done
    if [ "$ok" != 1 ]; then
      echo "services: Slurm did not come up; see $SLURM_DIR/log/slurmctld.log and slurmd-<node>.log" >&2
      slurm_env sinfo >&2 || true
      exit 1
    fi
    # the nodes are idle: a trivial two-node job must run through (munge, slurmctld, both slurmd, a step on each)
    local id
    id="$(slurm_env sbatch --parsable --nodes=2 --output=/dev/null --wrap 'srun true')"
    for _ in $(seq 300); do
      slurm_env squeue -h -j "$id" 2>/dev/null | grep -q . || break
      sleep 0.1
    done
    if ! slurm_env scontrol -o show job "$id" | grep -q 'JobState=COMPLETED'; then
      echo "services: a trial Slurm job did not complete:" >&2
      slurm_env scontrol -o show job "$id" >&2 || true
      exit 1
    fi
  fi
  echo "SLURM_AVAILABLE=1" >> "$STATE/env"
  echo "SLURM_CONF=$SLURM_DIR/slurm.conf" >> "$STATE/env"
  echo "services: Slurm ready, nodes $(slurm_nodes | tr ' ' ,) with gpu:8 each, partition $SLURM_PARTITION ($((SECONDS - started))s;" \
       "SLURM_CONF written to .services/env)"
}

slurm_down() {
  slurm_stop_daemons
}

slurm_status() {
  if [ -s "$SLURM_DIR/slurm.conf" ] && slurm_healthy; then
    echo "slurm: up, nodes $(slurm_env sinfo -h -N -n "$(slurm_nodes | tr ' ' ,)" -o '%N %t %G' | tr '\n' ' ')SLURM_CONF=$SLURM_DIR/slurm.conf"
  else
    echo "slurm: down"
  fi
}
