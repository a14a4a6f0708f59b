#!/usr/bin/env bash
# Ping-pong RTT on loopback: latlab's closed loop (`latlab net probe --mode pingpong`
# against `latlab net reflect`) beside Debian's `sockperf ping-pong --full-rtt` against
# `sockperf server`, in the same run, interleaved round by round so that both see the same
# host. Same payload (22 bytes of UDP payload: 64-byte frames), same CPUs (server/reflector
# on the first allowed CPU, client on the last). Prints one line per round and the median
# of the round medians; figures go to docs/benchmarks.md.
#
#   scripts/pingpong-vs-sockperf.sh [ROUNDS] [SECONDS]
#
# DMA_LATENCY=0 holds /dev/cpu_dma_latency at 0 for the whole comparison (root): idle CPUs
# then poll instead of halting, which on a VM takes the wake-up cost (and most of the
# round-to-round spread) out of both tools' round trips.
#
# Needs: sockperf (Debian package), a built latlab (LATLAB=path, default target/release).
set -euo pipefail
ROUNDS=${1:-5}
SECS=${2:-5}
LATLAB=${LATLAB:-target/release/latlab}
OUT=${OUT:-latlab-results/pingpong-vs-sockperf}
command -v sockperf >/dev/null || { echo "error: sockperf is not installed (apt-get install sockperf)" >&2; exit 1; }
[ -x "$LATLAB" ] || cargo build --release -p latlab
mkdir -p "$OUT"
if [ -n "${DMA_LATENCY:-}" ]; then
    # the PM QoS device takes an ASCII hex value; the request holds while the fd is open
    exec 5>/dev/cpu_dma_latency
    printf '%x' "$DMA_LATENCY" >&5
    echo "holding /dev/cpu_dma_latency at $DMA_LATENCY us"
fi
CPUS=$(taskset -pc $$ | sed 's/.*: //')
FIRST=$(echo "$CPUS" | tr ',-' '\n\n' | head -1)
LAST=$(echo "$CPUS" | tr ',-' '\n\n' | tail -1)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

taskset -c "$FIRST" sockperf server -i 127.0.0.1 -p 11111 >"$OUT/sockperf-server.log" 2>&1 &
PIDS+=($!)
# the reflector stops when its stdin closes; keep a pipe open to it
exec 3> >(taskset -c "$FIRST" "$LATLAB" net reflect --bind 127.0.0.1:7400 --until-stdin-closes -q \
    -o "$OUT/reflector.json" >/dev/null)
sleep 1

echo "round  latlab-p50-us  sockperf-p50-us"
L=(); S=()
for r in $(seq 1 "$ROUNDS"); do
    "$LATLAB" net probe --to 127.0.0.1:7400 --mode pingpong --duration "${SECS}s" --warmup 400ms \
        --tx-cpu "$LAST" --timestamps user -q -o "$OUT/latlab-$r.json"
    l=$("$LATLAB" show "$OUT/latlab-$r.json" -p 50 --csv - | awk -F, '$1=="user.actual" && $2=="p50" {printf "%.3f", $3/1000}')
    taskset -c "$LAST" sockperf ping-pong -i 127.0.0.1 -p 11111 -t "$SECS" -m 22 --full-rtt \
        >"$OUT/sockperf-$r.log" 2>&1
    s=$(sed 's/\x1b\[[0-9;]*m//g' "$OUT/sockperf-$r.log" | awk '/percentile 50.000 =/ {print $NF}')
    echo "$r      $l          $s"
    L+=("$l"); S+=("$s")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median of round medians: latlab $(med "${L[@]}") us, sockperf $(med "${S[@]}") us (RTT, loopback)"
exec 3>&-
