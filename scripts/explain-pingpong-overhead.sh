#!/bin/bash
# The overhead of --explain on a loopback ping-pong (issue 13: median RTT shift <= 0.5 us,
# p99.9 within 5 %, recorder CPU cost reported) and on the sched loop iteration (median
# unchanged within 10 %).
#
# usage: scripts/explain-pingpong-overhead.sh [BIN] [PAIRS] [DURATION]
#   BIN       the latlab binary (default: target/release/latlab, else target/debug/latlab)
#   PAIRS     interleaved off/on pairs per variant (default 5; odd pairs run off first,
#             even pairs on first)
#   DURATION  measured time of each run after a 1 s warm-up (default 3s)
#
# Variants: blocking ping-pong (reflector CPU 0 FIFO 50, probe CPU 1 FIFO 40, as in
# docs/benchmarks.md) and the same with --io busy on both sides; then the sched loop
# iteration pairs of scripts/explain-overhead.sh (3 pairs of 3 s). Needs root. Prints
# markdown tables: per pair the medians, p99.9, shift, kernel events per round trip, lost
# events, the probe's user+sys CPU, wall time and max RSS (/usr/bin/time); then per
# variant the median of the shifts with a sign-test interval (order statistics of the
# shifts, its exact coverage given) and a bootstrap 95 % interval.
# About 4 minutes with a debug build on a quiet 2-vCPU guest (PAIRS=5, 3s).
set -euo pipefail

usage() { sed -n 6,11p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] && usage
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-}
if [ -z "$BIN" ]; then
    BIN=$here/target/release/latlab
    [ -x "$BIN" ] || BIN=$here/target/debug/latlab
fi
BIN=$(readlink -f "$BIN")
PAIRS=${2:-5}
DUR=${3:-3s}
[ -x "$BIN" ] || { echo "no latlab binary at $BIN (cargo build -p latlab)" >&2; exit 2; }
[[ "$PAIRS" =~ ^[1-9][0-9]*$ ]] || { echo "PAIRS must be a positive integer, got '$PAIRS'" >&2; exit 2; }
[[ "$DUR" =~ ^[0-9]+(ms|s)$ ]] || { echo "DURATION must be like 4s or 500ms, got '$DUR'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (SCHED_FIFO, tracefs)" >&2; exit 3; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 3; }

dir=$(mktemp -d /tmp/latlab-explain-pp.XXXXXX)
reflector_pid=""
cleanup() {
    exec 3>&- 2>/dev/null || true
    [ -n "$reflector_pid" ] && wait "$reflector_pid" 2>/dev/null || true
}
trap cleanup EXIT
cd "$dir"
echo "# explain overhead, $(date -u +%FT%TZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $BIN, $PAIRS pairs of $DUR"
echo "(files in $dir)"

# one variant: $1 name, $2 port, $3.. extra flags for both sides
variant() {
    local name=$1 port=$2; shift 2
    mkfifo "ctl-$name"
    "$BIN" net reflect --bind 127.0.0.1:"$port" --cpu 0 --fifo 50 "$@" \
        --until-stdin-closes -q -o "nf-$name.json" <"ctl-$name" >/dev/null &
    reflector_pid=$!
    exec 3>"ctl-$name"
    sleep 1
    for i in $(seq 1 "$PAIRS"); do
        local order="off on"
        [ $((i % 2)) = 0 ] && order="on off"
        for m in $order; do
            local ex=()
            [ "$m" = on ] && ex=(--explain)
            /usr/bin/time -f "%e %U %S %M" -o "time-$name-$m-$i.txt" \
                "$BIN" net probe --to 127.0.0.1:"$port" --mode pingpong --duration "$DUR" \
                --warmup 1s --tx-cpu 1 --rx-cpu 1 --fifo 40 --timestamps user "$@" \
                "${ex[@]}" -q -o "pp-$name-$m-$i.json" >/dev/null 2>"err-$name-$m-$i.txt" ||
                { echo "probe failed ($name $m $i):" >&2; cat "err-$name-$m-$i.txt" >&2; exit 1; }
        done
    done
    exec 3>&-
    wait "$reflector_pid"
    reflector_pid=""
}

variant blocking 7471
variant busy 7472 --io busy

LATLAB_BIN=$BIN python3 - "$PAIRS" "$DUR" <<'PY'
import json, os, random, statistics, subprocess, sys
from math import comb

pairs, dur = int(sys.argv[1]), sys.argv[2]
dur_s = float(dur[:-2]) / 1000 if dur.endswith("ms") else float(dur[:-1])

def quantiles(path):
    # the user-timestamp series' median and p99.9, µs, as `latlab show` computes them
    out = subprocess.run([BIN, "show", "-p", "50,99.9", "--csv", "-", path],
                         capture_output=True, text=True, check=True).stdout
    q = {}
    for line in out.splitlines()[1:]:
        f = line.split(",")
        if f[0].startswith("user.actual") and f[1] in ("p50", "p99.9"):
            q[f[1]] = float(f[2]) / 1000
    return q["p50"], q["p99.9"]

BIN = os.environ["LATLAB_BIN"]

def sign_interval(xs):
    n = len(xs)
    xs = sorted(xs)
    best = None
    for k in range(1, n // 2 + 1):
        cover = 1 - 2 * sum(comb(n, i) for i in range(k)) / 2 ** n
        if cover >= 0.9:
            best = (xs[k - 1], xs[n - k], cover)
    if best is None:
        return (xs[0], xs[-1], 1 - 2 / 2 ** n)
    return best

def boot(xs, reps=5000):
    rnd = random.Random(13)
    ms = sorted(statistics.median(rnd.choices(xs, k=len(xs))) for _ in range(reps))
    return ms[int(0.025 * reps)], ms[int(0.975 * reps) - 1]

for name in ("blocking", "busy"):
    print(f"\n## ping-pong, {name}" + (" (--io busy on both sides)" if name == "busy" else "")
          + f": {pairs} pairs, {dur} after 1 s warm-up\n")
    print("| pair | order | median off / on | shift | p99.9 off / on | p99.9 change | events per round trip (on) | lost (on) | probe CPU user+sys off / on | wall off / on | max RSS off / on |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    shifts, tails = [], []
    for i in range(1, pairs + 1):
        row = {}
        for m in ("off", "on"):
            f = f"pp-{name}-{m}-{i}.json"
            p50, p999 = quantiles(f)
            w, u, s, rss = open(f"time-{name}-{m}-{i}.txt").read().split()
            r = json.load(open(f))
            ex = r["data"].get("explain") or {}
            att = r.get("explain") or {}
            samples = ex.get("samples", 0)
            events = ex.get("kernel_events", 0)
            # the recording spans the warm-up too: round trips ~ samples x (warm-up + run) / run
            rt = samples * (1 + dur_s) / dur_s if samples else 0
            row[m] = dict(p50=p50, p999=p999, cpu=float(u) + float(s), wall=float(w),
                          rss=int(rss) / 1024, epr=events / rt if rt else None,
                          lost=att.get("lost_events"), events=events)
        off, on = row["off"], row["on"]
        shift = on["p50"] - off["p50"]
        tail = (on["p999"] / off["p999"] - 1) * 100
        shifts.append(shift)
        tails.append(tail)
        order = "off, on" if i % 2 else "on, off"
        epr = f"{on['epr']:.1f} ({on['events'] / 1e6:.2f} M)" if on["epr"] else "-"
        print(f"| {i} | {order} | {off['p50']:.2f} / {on['p50']:.2f} µs | {shift:+.2f} µs | "
              f"{off['p999']:.1f} / {on['p999']:.1f} µs | {tail:+.1f} % | {epr} | {on['lost']} | "
              f"{off['cpu']:.2f} / {on['cpu']:.2f} s | {off['wall']:.2f} / {on['wall']:.2f} s | "
              f"{off['rss']:.0f} / {on['rss']:.0f} MB |")
    lo, hi, cover = sign_interval(shifts)
    blo, bhi = boot(shifts)
    print(f"\n- median shift **{statistics.median(shifts):+.2f} µs**, sign-test interval "
          f"[{lo:+.2f}, {hi:+.2f}] µs (coverage {cover * 100:.1f} %), bootstrap 95 % "
          f"[{blo:+.2f}, {bhi:+.2f}] µs; target ≤ 0.5 µs")
    print(f"- p99.9 change: median {statistics.median(tails):+.1f} % "
          f"(range {min(tails):+.1f} to {max(tails):+.1f} %); target within ±5 %")
PY

echo
echo "## sched loop iteration, explain off/on (scripts/explain-overhead.sh $BIN 3 3s)"
echo
"$here/scripts/explain-overhead.sh" "$BIN" 3 3s
