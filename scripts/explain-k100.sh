#!/usr/bin/env bash
# The issue-13 item "zero lost kernel events at 100 kpps probing for 60 s, or the loss
# counted and shown": a loopback reflector and an open-loop probe with --explain, the
# probe under /usr/bin/time. Prints one markdown table row per run: kernel events
# recorded, lost (as the result counts them), the generator's achieved rate, wall and
# CPU time, and the probe's max RSS.
#
# usage: scripts/explain-k100.sh [BIN] [RATE] [DURATION] [RUNS]
#   BIN       latlab binary (default: target/release/latlab, else target/debug/latlab)
#   RATE      probe rate (default 100kpps)
#   DURATION  measured duration (default 60s; plus a 1 s warm-up)
#   RUNS      how many runs (default 1)
# Needs root (tracefs). One run at 100 kpps x 60 s takes ~1.5-2 min on a quiet 2-vCPU
# host; a probe still running after LATLAB_K100_TIMEOUT seconds (default 280) is stopped
# (and the tracefs instance it leaves removed). LATLAB_K100_KEEP=DIR keeps each probe
# result there.
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-}
if [[ -z "$bin" ]]; then
    bin=$root/target/release/latlab
    [[ -x "$bin" ]] || bin=$root/target/debug/latlab
fi
rate=${2:-100kpps}
duration=${3:-60s}
runs=${4:-1}
limit=${LATLAB_K100_TIMEOUT:-280}
port=${LATLAB_K100_PORT:-7491}
[[ -x "$bin" ]] || { echo "explain-k100: no latlab binary at $bin (build it, or give BIN)" >&2; exit 2; }
[[ "$(id -u)" == 0 ]] || echo "explain-k100: not root: --explain will record gaps only (no kernel events)" >&2

dir=$(mktemp -d /tmp/latlab-k100.XXXXXX)
refl=""
cleanup() {
    exec 3>&- 2>/dev/null || true
    if [[ -n "$refl" ]]; then
        kill "$refl" 2>/dev/null || true
        wait "$refl" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

echo "| run | rate | duration | load (1 min) | achieved pps | generator behind | kernel events | lost | windows attributed | explained | wall s | user+sys s | max RSS MiB | reader |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for run in $(seq 1 "$runs"); do
    mkfifo "$dir/in-$run"
    "$bin" net reflect --bind "127.0.0.1:$port" --until-stdin-closes -q -o "$dir/nf-$run.json" \
        <"$dir/in-$run" >/dev/null 2>"$dir/nf-$run.err" &
    refl=$!
    exec 3>"$dir/in-$run"
    sleep 1
    load=$(cut -d' ' -f1 /proc/loadavg)
    rc=0
    /usr/bin/time -f "%e %U %S %M" -o "$dir/time-$run" \
        "$bin" net probe --to "127.0.0.1:$port" --rate "$rate" \
        --duration "$duration" --warmup 1s --explain -q -o "$dir/probe-$run.json" \
        2>"$dir/probe-$run.err" &
    timer=$!
    waited=0
    while kill -0 "$timer" 2>/dev/null && ((waited < limit * 10)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$timer" 2>/dev/null; then
        # past the limit: stop the probe and remove the tracefs instance it leaves
        probe=$(pgrep -P "$timer" || true)
        [[ -n "$probe" ]] && kill "$probe" 2>/dev/null || true
        wait "$timer" 2>/dev/null || true
        [[ -n "$probe" ]] && rmdir /sys/kernel/tracing/instances/latlab-"$probe"-* 2>/dev/null || true
        rc=124
    else
        wait "$timer" || rc=$?
    fi
    exec 3>&-
    wait "$refl" 2>/dev/null || true
    refl=""
    read -r wall user sys rss_kb < <(tail -n 1 "$dir/time-$run")
    if [[ $rc -ne 0 || ! -s "$dir/probe-$run.json" ]]; then
        why="exit $rc"
        [[ $rc -eq 124 ]] && why="stopped after ${limit} s"
        echo "| $run | $rate | $duration | $load | – | – | – | – | – | – | $wall | $(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.1f", u+s}') | $((rss_kb / 1024)) | $why: $(tail -n 1 "$dir/probe-$run.err") |"
        continue
    fi
    python3 - "$dir/probe-$run.json" "$run" "$rate" "$duration" "$load" "$wall" "$user" "$sys" "$rss_kb" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
run, rate, dur, load, wall, user, sys_s, rss_kb = sys.argv[2:]
d = r["data"]
ex = d.get("explain") or {}
a = r.get("explain") or {}
print(f"| {run} | {rate} | {dur} | {load} | {d.get('achieved_pps', 0):.0f} | "
      f"{'yes' if d.get('generator_behind') else 'no'} | {ex.get('kernel_events', '–')} | "
      f"{a.get('lost_events', r['counters'].get('explain_lost_events', '–'))} | "
      f"{a.get('windows', '–')} | "
      f"{100 * a['explained_ns'] / a['excess_ns'] if a.get('excess_ns') else 0:.1f} % | {wall} | "
      f"{float(user) + float(sys_s):.1f} | {int(rss_kb) // 1024} | {a.get('reader', '–')} |")
PY
    [[ -n "${LATLAB_K100_KEEP:-}" ]] && mkdir -p "$LATLAB_K100_KEEP" && cp "$dir/probe-$run.json" "$LATLAB_K100_KEEP/"
done
