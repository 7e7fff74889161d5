#!/usr/bin/env bash
# scripts/slurm/sweep.sbatch on a real one-node Slurm cluster on localhost: installs Debian's
# slurmctld, slurmd and munge when missing (root only), starts munged, slurmctld and slurmd
# with a private configuration, submits a 4-shard job array and its dependent merge, waits,
# and checks that the merged database equals a local `-j 2` run of the same spec (CSV, but for
# wall time and peak RSS). Exit 77 (ctest: skipped) when not root, saying so.
# Usage: slurm_sweep.sh path/to/tpusim (run from the source root).
set -euo pipefail
bin=$(realpath "$1")
if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: the Slurm test installs and starts slurmctld, slurmd and munged: it needs root"
    exit 77
fi

need=()
for p in slurmctld slurmd slurm-client munge; do
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" == installed ]] ||
        need+=("$p")
done
if [[ ${#need[@]} -gt 0 ]]; then
    echo "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The packages' own services are not wanted (this test starts private daemons): a
    # policy-rc.d that says "no" keeps apt from starting them, as in container images.
    added_policy=""
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        added_policy=1
    fi
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    if [[ -n "$added_policy" ]]; then rm -f /usr/sbin/policy-rc.d; fi
fi

tmp=$(mktemp -d /tmp/tpusim-slurm.XXXXXX)
chmod 0755 "$tmp"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    if [[ -n "${KEEP_SLURM_TMP:-}" ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# munge: a private key, socket and daemon (munged refuses root without --force).
mkdir -m 0711 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$tmp/munge/munge.key"
/usr/sbin/munged --foreground --force --key-file="$tmp/munge/munge.key" \
    --socket="$tmp/munge/munge.sock" --pid-file="$tmp/munge/munged.pid" \
    --seed-file="$tmp/munge/seed" --log-file="$tmp/munge/munged.log" > "$tmp/munged.out" 2>&1 &
pids+=($!)

host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/out"
export SLURM_CONF="$tmp/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=tpusimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
MessageTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
for _ in $(seq 50); do [[ -S "$tmp/munge/munge.sock" ]] && break; sleep 0.1; done
/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" > "$tmp/slurmctld.out" 2>&1 &
pids+=($!)
/usr/sbin/slurmd -D -f "$SLURM_CONF" > "$tmp/slurmd.out" 2>&1 &
pids+=($!)
up=""
for _ in $(seq 120); do
    if [[ "$(sinfo -h -o %T 2>/dev/null)" == idle* ]]; then up=1; break; fi
    sleep 0.5
done
if [[ -z "$up" ]]; then
    echo "FAIL: the one-node cluster did not come up"
    tail -5 "$tmp/munged.out" "$tmp/slurmctld.log" "$tmp/slurmd.log" "$tmp/slurmctld.out" \
        "$tmp/slurmd.out" 2>/dev/null
    exit 1
fi

# Every point of the spec is valid: a shard with a failed point exits 3 and the afterok merge
# would not run (docs/sweep.md, exit status).
spec=tests/data/sweep/small_valid.json
TPUSIM="$bin" scripts/slurm/sweep.sbatch "$spec" 4 "$tmp/out" --wait
"$bin" sweep "$spec" --db "$tmp/local.sqlite" -j 2 --quiet --csv "$tmp/local.csv" > /dev/null
"$bin" sweep --db "$tmp/out/sweep.sqlite" --csv "$tmp/slurm.csv"
strip() { python3 -c 'import csv,sys; [print(",".join(r[:-2])) for r in csv.reader(open(sys.argv[1]))]' "$1"; }
if ! cmp -s <(strip "$tmp/local.csv") <(strip "$tmp/slurm.csv"); then
    echo "FAIL: the merged Slurm database differs from the local run"
    diff <(strip "$tmp/local.csv") <(strip "$tmp/slurm.csv") | head -5
    exit 1
fi
for i in 0 1 2 3; do
    [[ -s "$tmp/out/shard_$i.sqlite" ]] || { echo "FAIL: shard $i wrote no database"; exit 1; }
done
echo "Slurm sweep: 4 shards + merge equal the local -j 2 run ($(($(wc -l < "$tmp/slurm.csv") - 1)) points)"
