#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for trying the example on a cluster engine:
#   recipe_examples/slurm/cluster.sh up|down|status
# For a disposable Debian machine where you are root (it writes /etc/slurm/slurm.conf and starts munged, slurmctld
# and slurmd). It installs Debian's slurm-wlm and munge if they are missing, and refuses to replace a slurm.conf
# it did not write. No systemd needed: the daemons are started by hand; down stops slurmctld and slurmd by their
# pid files (munged, which other programs may use, keeps running).
set -euo pipefail
conf=/etc/slurm/slurm.conf
mark="# written by i6_rc_jobs recipe_examples/slurm/cluster.sh"
state=/var/spool/i6-rc-slurm

die() { echo "cluster.sh: $*" >&2; exit 1; }

running() {  # daemon name: the process in its pid file is that daemon, alive (not a zombie nobody reaped), and not
  # another process that got the pid of one that died without removing its pid file
  local pid
  pid=$(cat "$state/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] &&
    ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

stop() {  # daemon name (the daemon removes its pid file when it exits)
  local pid
  running "$1" || return 0
  pid=$(cat "$state/$1.pid")
  kill "$pid" || die "could not stop $1 (pid $pid)"
  for _ in $(seq 100); do running "$1" || return 0; sleep 0.1; done
  die "$1 (pid $pid) did not stop"
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root"
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q slurm-wlm munge >/dev/null || { apt-get update -q && apt-get install -y -q slurm-wlm munge; }
  fi
  if [ -e "$conf" ] && ! grep -qF "$mark" "$conf"; then
    die "$conf exists and was not written by this script: not touching it"
  fi
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {m = int($2 / 1024) - 1024; print (m < 256 ? 256 : m)}' /proc/meminfo)  # MB, less 1 GB for the OS
  mkdir -p "$state/ctld" "$state/d" /var/log/slurm
  install -d -o munge -g munge -m 0755 /run/munge
  [ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey -c
  cat >"$conf" <<CONF
$mark
ClusterName=i6rc
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=2048
MailProg=/bin/true
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
  fi
  running slurmctld || slurmctld
  running slurmd || slurmd
  for _ in $(seq 100); do
    if timeout 5 sinfo -h -o %T 2>/dev/null | grep -qxE 'idle|mixed|allocated'; then
      echo "cluster.sh: up: $(sinfo -h -o '%P %D %T %c CPUs %m MB')"
      return
    fi
    sleep 0.2
  done
  die "the node did not come up; see /var/log/slurm/"
}

down() {
  stop slurmd
  stop slurmctld
  echo "cluster.sh: down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) sinfo && squeue ;;
  *) die "usage: $0 up|down|status" ;;
esac
