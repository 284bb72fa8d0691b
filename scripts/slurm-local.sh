#!/usr/bin/env bash
# Starts a single-node Slurm cluster on this machine (slurmctld, slurmd, munged) from Debian's
# packages, for the cluster test and for trying `epsilab slurm` locally. Idempotent: a cluster
# that already answers `sinfo` is reused. Needs root. Exit 0: cluster up; exit 3: cannot be set up
# here (no root, no apt, packages unavailable), with the reason on stderr.
set -euo pipefail

skip() { echo "slurm-local: SKIP: $*" >&2; exit 3; }

if command -v sinfo >/dev/null 2>&1 && timeout 10 sinfo -h >/dev/null 2>&1; then
    echo "slurm-local: reusing the running cluster"
    exit 0
fi
[ "$(id -u)" = 0 ] || skip "needs root to install and start Slurm"

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || skip "no apt-get to install slurm-wlm and munge"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed"
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1 \
        || skip "apt-get install slurm-wlm munge failed"
fi

host=$(hostname -s)
cpus=$(nproc)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
[ -f /etc/munge/munge.key ] || mungekey -c
chown munge:munge /etc/munge/munge.key /run/munge
chmod 400 /etc/munge/munge.key
if ! pgrep -x munged >/dev/null; then
    su -s /bin/sh munge -c /usr/sbin/munged   # munged refuses to run as root
fi

cat > /etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld -i
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for _ in $(seq 1 30); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE 'idle|mix|alloc'; then
        sinfo
        exit 0
    fi
    sleep 1
done
skip "the cluster did not come up within 30 s (see /var/log/slurm/)"
