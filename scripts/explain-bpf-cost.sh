#!/bin/bash
# What a sched_switch costs the task that switches with a tracefs recorder (--explain's
# fallback) and with BPF programs on the raw tracepoint (the recorder's hook, tp_btf) or on
# a BPF trampoline (fentry/fexit, refused by kernels whose ftrace hooks are locked down),
# measured in alternating blocks inside one process (issue 13 overhead): scripts/bpf/event-cost.c,
# whose header says what each configuration is. Prints a markdown table: each
# configuration's median round trip, and its cost per switch as the median of paired
# differences against the block with nothing attached in the same cycle.
#
# usage: scripts/explain-bpf-cost.sh [CYCLES] [ROUND_TRIPS] [CPU]
#   CYCLES       cycles of one block per configuration (default 120)
#   ROUND_TRIPS  round trips per block (default 10000)
#   CPU          the CPU both threads are pinned to (default 1, or 0 on one CPU)
#
# Needs root (tracefs, bpf(2)), gcc and linux/bpf.h (Debian linux-libc-dev). About
# 75 s on a 2-vCPU guest with the defaults (nine configurations).
set -euo pipefail
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { sed -n 9,12p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
CYCLES=${1:-120}
RT=${2:-10000}
CPU=${3:-$([ "$(nproc)" -gt 1 ] && echo 1 || echo 0)}
for v in "$CYCLES" "$RT" "$CPU"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "CYCLES, ROUND_TRIPS and CPU are whole numbers, got '$v'" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (tracefs, bpf)" >&2; exit 3; }
command -v gcc >/dev/null && [ -e /usr/include/linux/bpf.h ] ||
    { echo "needs gcc and /usr/include/linux/bpf.h (Debian gcc, linux-libc-dev)" >&2; exit 3; }
[ -e /sys/kernel/tracing/trace_clock ] || mount -t tracefs nodev /sys/kernel/tracing
dir=$(mktemp -d /tmp/latlab-bpf-cost.XXXXXX)
trap 'rm -rf "$dir"' EXIT
gcc -O2 -Wall -o "$dir/event-cost" "$(dirname "$0")/bpf/event-cost.c" -lpthread
echo "# sched_switch cost, $(date -u +%FT%TZ), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $CYCLES cycles x $RT round trips on CPU $CPU"
echo
"$dir/event-cost" "$CYCLES" "$RT" "$CPU"
