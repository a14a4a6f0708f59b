#!/bin/bash
# What one kernel event costs the task that fires it, in the settings --explain's recorder
# chooses between (issue 13 overhead): a sched_switch recorded, one dropped by a kernel
# filter or by the pid filter, the instance's record-cmd on or off, the trace clock. (BPF on
# the raw tracepoint against tracefs, in alternating blocks of one process:
# scripts/explain-bpf-cost.sh.)
#
# usage: scripts/explain-event-cost.sh [REPS] [LOOPS]
#   REPS   interleaved repetitions of every configuration (default 11)
#   LOOPS  round trips per run of `perf bench sched pipe -T` (default 50000)
#
# Each run is two threads pinned to CPU 1 passing a token through pipes (perf bench sched
# pipe -T): every round trip is 2 context switches and 2 wake-ups, and nothing else. Its
# CPU time (perf stat task-clock: the threads' run time, not wall time, so other load on
# the host moves it much less) is taken with no tracefs instance and with one private
# instance (latlab-cost-<pid>) set up as described per row. Prints a markdown table: the
# median CPU time per round trip, the quartiles, the difference to no instance, and that
# per event (the difference / 2: two switches per round trip); then the same per event
# from paired differences (each configuration against the no-instance run of the same
# repetition, median and quartiles), which a host whose speed drifts between runs moves
# less. Needs root and perf
# (Debian package linux-perf). About 1 minute on a quiet 2-vCPU guest.
set -euo pipefail

usage() { sed -n 6,8p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] && usage
REPS=${1:-11}
LOOPS=${2:-50000}
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "REPS must be a positive integer, got '$REPS'" >&2; exit 2; }
[[ "$LOOPS" =~ ^[1-9][0-9]*$ ]] || { echo "LOOPS must be a positive integer, got '$LOOPS'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (tracefs)" >&2; exit 3; }
command -v perf >/dev/null || { echo "needs perf (Debian package linux-perf)" >&2; exit 3; }
T=/sys/kernel/tracing
[ -e $T/trace_clock ] || { echo "tracefs is not mounted at $T" >&2; exit 3; }
cpu=1
[ "$(nproc)" -gt 1 ] || cpu=0
inst=$T/instances/latlab-cost-$$
cleanup() {
    if [ -d "$inst" ]; then
        echo 0 >"$inst/tracing_on" || true
        rmdir "$inst" || true
    fi
}
trap cleanup EXIT

# configuration name -> how the instance is set up (none: no instance)
CONFIGS="none hooks_cmd hooks_nocmd switch_cmd switch_nocmd switch_nocmd_local filtered_cmd filtered_nocmd notrace_nocmd"
setup() {
    [ "$1" = none ] && return 0
    mkdir "$inst"
    case $1 in *nocmd*) echo norecord-cmd >"$inst/trace_options" ;; esac
    case $1 in *local) echo local >"$inst/trace_clock" ;; *) echo x86-tsc >"$inst/trace_clock" ;; esac
    echo 4096 >"$inst/buffer_size_kb"
    case $1 in
        hooks_*) echo 1 >"$inst/events/nmi/nmi_handler/enable" ;;   # enabled, never fires here
        switch_*) echo 1 >"$inst/events/sched/sched_switch/enable" ;;
        filtered_*)
            echo 'prev_pid == 0 && next_pid == 0' >"$inst/events/sched/sched_switch/filter"
            echo 1 >"$inst/events/sched/sched_switch/enable" ;;
        notrace_*)
            # dropped by the instance's pid filter instead: run() lists the benchmark's pid
            # in set_event_notrace_pid and event-fork adds its threads, so every switch
            # (both sides listed) is ignored before the event is written
            echo event-fork >"$inst/trace_options"
            echo 1 >"$inst/events/sched/sched_switch/enable" ;;
    esac
    echo 1 >"$inst/tracing_on"
}
teardown() { cleanup; }
run() {
    (
        case $1 in notrace_*) echo "$BASHPID" >"$inst/set_event_notrace_pid" ;; esac
        exec taskset -c "$cpu" perf stat -e task-clock -x, perf bench sched pipe -T -l "$LOOPS"
    ) 2>&1 >/dev/null |
        awk -F, -v L="$LOOPS" '/task-clock/ { printf "%.4f\n", $1 * 1000 / L }'
}

out=$(mktemp /tmp/latlab-event-cost.XXXXXX)
echo "# kernel event cost, $(date -u +%FT%TZ), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $REPS x $LOOPS round trips on CPU $cpu"
for r in $(seq 1 "$REPS"); do
    for c in $CONFIGS; do
        setup "$c"
        v=$(run "$c")
        teardown
        echo "$r $c $v" >>"$out"
    done
done
python3 - "$out" <<'PY'
import statistics, sys
from collections import defaultdict
d = defaultdict(list)
runs = defaultdict(dict)
for line in open(sys.argv[1]):
    r, c, v = line.split()
    d[c].append(float(v))
    runs[r][c] = float(v)
what = {
    "none": "no instance",
    "hooks_cmd": "an instance with `nmi_handler` enabled (never fires), record-cmd on",
    "hooks_nocmd": "the same, record-cmd off",
    "switch_cmd": "`sched_switch` recorded, record-cmd on (latlab before this change)",
    "switch_nocmd": "`sched_switch` recorded, record-cmd off",
    "switch_nocmd_local": "the same, trace clock `local` instead of `x86-tsc`",
    "filtered_cmd": "`sched_switch` with a filter that drops every one, record-cmd on",
    "filtered_nocmd": "the same, record-cmd off",
    "notrace_nocmd": "`sched_switch` dropped by the pid filter (`set_event_notrace_pid`, both sides listed), record-cmd off",
}
base = statistics.median(d["none"])
print("\n| instance | CPU per round trip, median (quartiles) | vs no instance | per switch |")
print("|---|---|---|---|")
for c, text in what.items():
    v = sorted(d[c])
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0], v[0], v[0]]
    m = statistics.median(v)
    diff = m - base
    per = f"{diff / 2 * 1000:+.0f} ns" if c != "none" else "-"
    print(f"| {text} | {m:.3f} µs ({q[0]:.3f}–{q[2]:.3f}) | {diff * 1000:+.0f} ns | {per} |")
print("\nPer switch from paired differences (each repetition's run minus its no-instance run, / 2):\n")
print("| instance | per switch, median of the pairs (quartiles) |")
print("|---|---|")
for c, text in what.items():
    if c == "none":
        continue
    p = sorted((rr[c] - rr["none"]) * 500 for rr in runs.values())
    q = statistics.quantiles(p, n=4) if len(p) > 1 else [p[0], p[0], p[0]]
    print(f"| {text} | {statistics.median(p):+.0f} ns ({q[0]:+.0f}…{q[2]:+.0f}) |")
print("\nA round trip is 2 switches and 2 wake-ups; \"per switch\" is half the difference "
      "(for the `hooks` rows it is the command-name recorder's hooks on a switch and a "
      "wake-up together).")
PY
rm -f "$out"
