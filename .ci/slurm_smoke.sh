#!/usr/bin/env bash
# Optional CI step (REPRO_CI_SLURM=1 bash .ci/run, or alone after it): a single-node SLURM (Debian's slurm-wlm and
# munge, root, no systemd, no accounting) and one smoke chapter through workflow/profiles/slurm, CPU only.
# Measured once on the 2-core CI machine: 3 mask jobs + 1 render as 4 SLURM jobs in about 3 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q slurm-wlm munge > /dev/null
mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
[ -f /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge
chmod 400 /etc/munge/munge.key
runuser -u munge -- /usr/sbin/munged
H=$(hostname -s); CPUS=$(nproc); MEM=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=ci
SlurmctldHost=$H
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ReturnToService=2
NodeName=$H CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=gpu Nodes=$H Default=YES MaxTime=INFINITE State=UP
CONF
/usr/sbin/slurmctld
/usr/sbin/slurmd
sleep 3
sinfo
out=$(mktemp -d)
# no GPU and no accounting here: gpu=0, squeue for job status, no account
snakemake -s workflow/Snakefile --profile workflow/profiles/slurm --slurm-no-account --slurm-status-command squeue \
    --slurm-init-seconds-before-status-checks 5 --jobs 2 \
    --default-resources slurm_partition=gpu mem_mb=1500 cpus_per_task=1 runtime=20 \
    --set-resources job:gpu=0 render:gpu=0 job:gpu_model= render:gpu_model= job:mem_mb=1500 render:mem_mb=1500 \
    --config profile=smoke only=p2_sensitivity "artifacts=$out/art" "results=$out/res" -- notebooks
test -s "$out/res/smoke/p2_sensitivity.json"
echo "single-node SLURM: p2_sensitivity built through the slurm profile"
