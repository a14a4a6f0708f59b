#!/usr/bin/env bash
# Compares latlab's dispatch-latency thread (Hourglass LAT) with cyclictest under the same
# conditions: SCHED_FIFO 95, 1 ms period, clock_nanosleep(TIMER_ABSTIME), memory locked,
# same CPU, /dev/cpu_dma_latency held at 0 (cyclictest does that by default; in a haltpoll
# guest it moves the median by several µs, so latlab is given --dma-latency 0). The two run in alternating rounds (so that a change in background load hits
# both alike) and the samples of all rounds are pooled. Prints both medians (and p99, max).
#
#   scripts/sched-vs-cyclictest.sh [ROUNDS=5] [ROUND_S=2] [CPU=last] [LATLAB=target/release/latlab]
#
# Needs root (or CAP_SYS_NICE + CAP_IPC_LOCK) and cyclictest (Debian: rt-tests).
set -euo pipefail
ROUNDS=${1:-5}
DUR=${2:-2}
CPU=${3:-$(( $(nproc) - 1 ))}
LATLAB=${4:-target/release/latlab}
OUT=${OUT:-latlab-results/sched-vs-cyclictest}
command -v cyclictest >/dev/null || { echo "cyclictest not found: apt-get install rt-tests" >&2; exit 2; }
[ -x "$LATLAB" ] || { echo "$LATLAB not built: cargo build --release" >&2; exit 2; }
mkdir -p "$OUT"
: > "$OUT/latlab.us"
: > "$OUT/cyclictest.us"

# median, p99 and max of a column of numbers (µs)
stats() { sort -n | awk '{v[NR]=$1} END {if (NR==0) {print "no samples"; exit}
  m=v[int((NR+1)/2)]; p=v[int(NR*0.99+0.999)]; printf "n %d  median %.3f us  p99 %.3f us  max %.3f us\n", NR, m, p, v[NR]}'; }

echo "$ROUNDS rounds of ${DUR}s each, alternating, on CPU $CPU:"
echo "  latlab sched -d ${DUR}s -n 1 -t 0 -p RTHIGH -w LAT 1ms -i HR --cpu $CPU --dma-latency 0"
echo "  cyclictest -m -p 95 -i 1000 -a $CPU -D ${DUR}s -q -h 100000"
for r in $(seq 1 "$ROUNDS"); do
  "$LATLAB" sched -d "${DUR}s" -n 1 -t 0 -p RTHIGH -w LAT 1ms -i HR --cpu "$CPU" --dma-latency 0 -q -o "$OUT/latlab-$r.json"
  grep '^latlate:' "$OUT/latlab-$r.txt" | awk '{print $2}' >> "$OUT/latlab.us"
  cyclictest -m -p 95 -i 1000 -a "$CPU" -D "${DUR}s" -q -h 100000 --histfile="$OUT/cyclictest-$r.hist" >/dev/null
  # histogram lines: "<bucket us> <count>"; the bucket is the latency rounded down to 1 µs
  awk '/^[0-9]/ {for (i = 0; i < $2; i++) print $1 + 0.5}' "$OUT/cyclictest-$r.hist" >> "$OUT/cyclictest.us"
done
echo "latlab LAT (ns resolution):        $(stats < "$OUT/latlab.us")"
echo "cyclictest (1 us buckets, centre): $(stats < "$OUT/cyclictest.us")"
