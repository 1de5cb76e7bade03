# Sourced by scripts/services.sh: slurm_up, slurm_down and slurm_status for a one-node Slurm cluster on loopback.
#
# Debian's slurm-wlm and munge; the configuration lives in $SLURM_DIR (slurm.conf, gres.conf, cgroup.conf; the
# commands find it through SLURM_CONF, which slurm_up records in .services/env with SLURM_AVAILABLE=1). The node
# declares 8 GPUs as a GRES, so GPU scheduling is exercised without GPUs. Slurm 22.05 drops a GPU GRES without
# device files, so gres.conf names eight stand-in device nodes (copies of /dev/null's numbers, never opened: devices
# are not constrained). A second node of the same shape is declared DOWN (its slurmd port is never served), so a
# two-node job waits with Slurm's reason instead of being refused. No accounting daemon: finished jobs stay known
# to `scontrol show job` for MinJobAge seconds.
SLURM_DIR="${STARFORGE_SLURM_DIR:-/tmp/starforge-slurm}"
SLURM_PARTITION="${STARFORGE_SLURM_PARTITION:-debug}"
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
  mkdir -p "$SLURM_DIR/spool/ctld" "$SLURM_DIR/spool/d" "$SLURM_DIR/log" "$SLURM_DIR/run"
  cat > "$SLURM_DIR/slurm.conf.new" <<EOF
# written by scripts/services.sh: a one-node test cluster on loopback
ClusterName=starforge
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=${STARFORGE_SLURMCTLD_PORT:-6817}
SlurmdPort=${STARFORGE_SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$SLURM_DIR/spool/ctld
SlurmdSpoolDir=$SLURM_DIR/spool/d
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
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
NodeName=$SLURM_GHOST NodeAddr=127.0.0.1 Port=${STARFORGE_SLURM_GHOST_PORT:-6899} CPUs=$cpus Gres=gpu:8 State=DOWN Reason=never-started
PartitionName=$SLURM_PARTITION Nodes=$node,$SLURM_GHOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
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

slurm_healthy() {
  slurm_pid_alive "$SLURM_DIR/run/slurmctld.pid" && slurm_pid_alive "$SLURM_DIR/run/slurmd.pid" \
    && slurm_env sinfo -h -n "$(hostname -s)" -o '%t' 2>/dev/null | grep -Eq '^(idle|mix|alloc)'
}

slurm_stop_daemons() {
  local f pid
  for f in slurmd slurmctld; do
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
    if ! slurm_pid_alive "$SLURM_DIR/run/slurmd.pid"; then
      as_root env SLURM_CONF="$SLURM_DIR/slurm.conf" /usr/sbin/slurmd
    fi
    local ok=0
    for _ in $(seq 300); do
      if slurm_healthy; then ok=1; break; fi
      sleep 0.1
    done
    if [ "$ok" != 1 ]; then
      echo "services: Slurm did not come up; see $SLURM_DIR/log/slurmctld.log and slurmd.log" >&2
      slurm_env sinfo >&2 || true
      exit 1
    fi
    # the node is idle: a trivial job must run through (the whole path: munge, slurmctld, slurmd, a batch step)
    local id
    id="$(slurm_env sbatch --parsable --output=/dev/null --wrap true)"
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
  echo "services: Slurm ready, node $(hostname -s) with gpu:8, partition $SLURM_PARTITION ($((SECONDS - started))s;" \
       "SLURM_CONF written to .services/env)"
}

slurm_down() {
  slurm_stop_daemons
}

slurm_status() {
  if [ -s "$SLURM_DIR/slurm.conf" ] && slurm_healthy; then
    echo "slurm: up, node $(hostname -s) $(slurm_env sinfo -h -n "$(hostname -s)" -o '%t %G'), SLURM_CONF=$SLURM_DIR/slurm.conf"
  else
    echo "slurm: down"
  fi
}
