#!/usr/bin/env bash
# Compares latlab's dispatch-latency thread (Hourglass LAT) with cyclictest under the same
# conditions: SCHED_FIFO 95, 1 ms period, clock_nanosleep(TIMER_ABSTIME), memory locked,
# same CPU, same duration, one after the other. Prints both medians (and p99, max) in µs.
#
#   scripts/sched-vs-cyclictest.sh [DURATION_S=10] [CPU=last] [LATLAB=target/release/latlab]
#
# Needs root (or CAP_SYS_NICE + CAP_IPC_LOCK) and cyclictest (Debian: rt-tests).
set -euo pipefail
DUR=${1:-10}
CPU=${2:-$(( $(nproc) - 1 ))}
LATLAB=${3:-target/release/latlab}
OUT=${OUT:-latlab-results/sched-vs-cyclictest}
command -v cyclictest >/dev/null || { echo "cyclictest not found: apt-get install rt-tests" >&2; exit 2; }
[ -x "$LATLAB" ] || { echo "$LATLAB not built: cargo build --release" >&2; exit 2; }
mkdir -p "$OUT"

# median, p99 and max of a column of numbers (µs)
stats() { sort -n | awk '{v[NR]=$1} END {if (NR==0) {print "no samples"; exit}
  m=v[int((NR+1)/2)]; p=v[int(NR*0.99+0.999)]; printf "n %d  median %.3f us  p99 %.3f us  max %.3f us\n", NR, m, p, v[NR]}'; }

echo "latlab sched -d ${DUR}s -n 1 -t 0 -p RTHIGH -w LAT 1ms -i HR --cpu $CPU"
"$LATLAB" sched -d "${DUR}s" -n 1 -t 0 -p RTHIGH -w LAT 1ms -i HR --cpu "$CPU" -q -o "$OUT/latlab.json"
LAT=$(grep '^latlate:' "$OUT/latlab.txt" | awk '{print $2}' | stats)

echo "cyclictest -m -p 95 -i 1000 -a $CPU -D ${DUR}s -q -h 100000"
cyclictest -m -p 95 -i 1000 -a "$CPU" -D "${DUR}s" -q -h 100000 --histfile="$OUT/cyclictest.hist" >/dev/null
# histogram lines: "<bucket us> <count>"; the bucket is the latency rounded down to 1 µs
CT=$(awk '/^[0-9]/ {for (i = 0; i < $2; i++) print $1 + 0.5}' "$OUT/cyclictest.hist" | stats)

echo "latlab LAT (ns resolution): $LAT"
echo "cyclictest (1 us buckets, centre): $CT"
