#!/usr/bin/env bash
# latlab's open loop against the closed-loop peers at the same offered load, in interleaved
# pairs (issue 16: "at the same offered load latlab's median is within 10 % of memaslap's
# where memaslap is not saturated"; the same for nginx and wrk). One server per app, started
# here and kept for all pairs (memcached `-t 1 -m 256 -U 0`; nginx one worker, keep-alive, the
# 704-byte page), pinned to SERVER_CPU. Each pair runs, in alternating order:
#   - the peer with one connection (memaslap, Debian's memcaslap, `-T 1 -c 1`; `wrk -t 1
#     -c 1 --latency`) for SECONDS on CLIENT_CPU: its throughput R and its latency figure
#     (memaslap prints no median: its geometric mean; wrk: its median);
#   - `latlab net load` against the same server at R requests/s (constant arrivals, after
#     1 s of warm-up; memcached with memaslap's mix: 90 % gets, 64-byte keys, 1024-byte
#     values, 4 connections × 8 pipelined; nginx 4 × 4) for SECONDS on CLIENT_CPU; the run
#     before a pair's peer run supplies the rate for the first latlab run of an odd pair.
# One connection leaves the server far from saturated (memaslap's own best, at 4–8
# connections, is 3–7× its one-connection throughput here; docs/benchmarks.md).
# Why pairs: on this guest a run's latency moves by tens of percent within minutes, so
# comparing one peer run with one latlab run minutes apart decides nothing at 10 %.
# Prints per app a markdown table (pair, order, R, the peer's figure, latlab's p50 from the
# scheduled send and from the actual send, the ratios) and the median of each ratio − 1
# over the pairs with a sign-test interval, and how many pairs are within ±10 %.
#
#   scripts/peer-pairs.sh [PAIRS] [SECONDS] [allow|hold] [memcached|nginx|both]
#
# allow (default): the system's idle policy as it is; hold: everything (peers and latlab)
# under `latlab host hold-idle --dma-latency 0` (idle CPUs poll). Default 8 pairs of 3 s for
# both apps: about 2 minutes.
# Environment: LATLAB (default target/release/latlab when built, else target/debug/latlab),
# SERVER_CPU (default 0), CLIENT_CPU (default 1), IO (latlab's `--io`: adaptive, the
# default, blocking or busy), OUT (default a new /tmp/peer-pairs.*).
# Needs root for nothing but `hold`; memcached, memcaslap, nginx, wrk, python3.
set -euo pipefail
usage() { echo "usage: $0 [PAIRS] [SECONDS] [allow|hold] [memcached|nginx|both]   (env: LATLAB SERVER_CPU CLIENT_CPU OUT)" >&2; exit 2; }
ARGS=("$@")
case "${1:-}" in -h|--help) usage ;; esac
PAIRS=${1:-8}
SECS=${2:-3}
IDLE=${3:-allow}
APPS=${4:-both}
[[ "$PAIRS" =~ ^[1-9][0-9]*$ && "$SECS" =~ ^[1-9][0-9]*$ ]] || usage
case "$IDLE" in allow|hold) ;; *) usage ;; esac
case "$APPS" in memcached|nginx) ;; both) APPS="memcached nginx" ;; *) usage ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${LATLAB:-}" ]; then
    if [ -x "$here/target/release/latlab" ]; then LATLAB=$here/target/release/latlab; else LATLAB=$here/target/debug/latlab; fi
fi
[ -x "$LATLAB" ] || { echo "error: $LATLAB is not built (cargo build -p latlab)" >&2; exit 1; }
if [ "$IDLE" = hold ] && [ -z "${PEER_PAIRS_HELD:-}" ]; then
    exec "$LATLAB" host hold-idle --dma-latency 0 -- env PEER_PAIRS_HELD=1 LATLAB="$LATLAB" "$0" "${ARGS[@]}"
fi
for p in memcached memcaslap nginx wrk python3; do
    command -v "$p" >/dev/null || { echo "error: $p is not installed (make deps-demo)" >&2; exit 1; }
done
SCPU=${SERVER_CPU:-0}
CCPU=${CLIENT_CPU:-1}
IO=${IO:-adaptive}
case "$IO" in adaptive|blocking|busy) ;; *) echo "error: IO=$IO: adaptive, blocking or busy" >&2; exit 2 ;; esac
OUT=${OUT:-$(mktemp -d /tmp/peer-pairs.XXXXXX)}
mkdir -p "$OUT"
MC_PORT=21321
NG_PORT=28191
# shellcheck source=servers.sh
. "$here/scripts/servers.sh"
start_server() {
    case $1 in
        memcached) start_memcached "$SCPU" "$MC_PORT" ;;
        nginx) start_nginx "$SCPU" "$NG_PORT" "$OUT/nginx" ;;
    esac
}

# peer APP FILE: runs the peer; prints "RATE LATENCY_US"
peer() {
    case $1 in
        memcached)
            taskset -c "$CCPU" memcaslap -s "127.0.0.1:$MC_PORT" -T 1 -c 1 -t "${SECS}s" -S "${SECS}s" >"$2" 2>&1
            python3 - "$2" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
print(re.findall(r"TPS: (\d+)", t)[-1], re.findall(r"Geo:\s+([\d.]+)", t)[-1])
EOF
            ;;
        nginx)
            taskset -c "$CCPU" wrk -t 1 -c 1 -d "${SECS}s" --latency "http://127.0.0.1:$NG_PORT/" >"$2" 2>&1
            python3 - "$2" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
v, u = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)\s*$", t, re.M).groups()
print(re.findall(r"Requests/sec:\s+([\d.]+)", t)[-1], float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[u])
EOF
            ;;
    esac
}

# open_loop APP RATE FILE: latlab at RATE against the running server
open_loop() {
    local flags=(--io "$IO")
    [ "$IDLE" = hold ] && flags+=(--dma-latency 0)
    case $1 in
        memcached)
            taskset -c "$CCPU" "$LATLAB" net load --target "memcached://127.0.0.1:$MC_PORT" \
                --rate "$(printf '%.0f' "$2")rps" -d "${SECS}s" --warmup 1s -c 4 --pipeline 8 \
                --get-ratio 0.9 --key-size 64 --value-size 1024 "${flags[@]}" -q -o "$3" ;;
        nginx)
            taskset -c "$CCPU" "$LATLAB" net load --target "http://127.0.0.1:$NG_PORT/" \
                --rate "$(printf '%.0f' "$2")rps" -d "${SECS}s" --warmup 1s -c 4 --pipeline 4 \
                "${flags[@]}" -q -o "$3" ;;
    esac
    "$LATLAB" show "$3" -p 50 --csv "${3%.json}.csv" >/dev/null
}

echo "peer pairs, $(date -u +%FT%TZ), $PAIRS pairs of ${SECS} s, idle $IDLE, latlab --io $IO (cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none)), server CPU $SCPU, client CPU $CCPU, load $(cut -d' ' -f1-3 /proc/loadavg); files in $OUT"
for app in $APPS; do
    echo "$app: $PAIRS pairs…" >&2
    start_server "$app"
    rows="$OUT/$app-rows.txt"
    : >"$rows"
    last_rate=
    for i in $(seq "$PAIRS"); do
        if [ $((i % 2)) = 1 ] && [ -n "$last_rate" ]; then
            offered=$last_rate
            open_loop "$app" "$offered" "$OUT/$app-latlab-$i.json"
            read -r rate lat < <(peer "$app" "$OUT/$app-peer-$i.txt")
            order="latlab, peer"
        else
            read -r rate lat < <(peer "$app" "$OUT/$app-peer-$i.txt")
            offered=$rate
            open_loop "$app" "$offered" "$OUT/$app-latlab-$i.json"
            order="peer, latlab"
        fi
        echo "$i $order|$rate $lat $offered" >>"$rows"
        last_rate=$rate
    done
    stop_server
    python3 - "$OUT" "$app" "$here/scripts" <<'EOF'
import csv, statistics, sys
out, app = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from pairstats import sign_interval
peer = "memaslap -c 1 (geometric mean)" if app == "memcached" else "wrk -c 1 (median)"
print(f"\n### {app}: latlab at the peer's one-connection throughput\n")
print(f"| pair | order | peer req/s | latlab offered | {peer} | latlab p50 from schedule | ratio | latlab p50 from send | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
rs, ra = [], []
for line in open(f"{out}/{app}-rows.txt"):
    head, tail = line.split("|")
    i, order = head.split(" ", 1)
    rate, lat, offered = (float(x) for x in tail.split())
    q = {r["series"]: float(r["value_ns"]) / 1e3 for r in csv.DictReader(open(f"{out}/{app}-latlab-{i}.csv"))
         if r["statistic"] == "p50" and r["series"] in ("request.sched", "request.actual")}
    s, a = q["request.sched"] / lat - 1, q["request.actual"] / lat - 1
    rs.append(s)
    ra.append(a)
    print(f"| {i} | {order} | {rate:,.0f} | {offered:,.0f} | {lat:.1f} µs | {q['request.sched']:.1f} µs | {s:+.1%} | {q['request.actual']:.1f} µs | {a:+.1%} |")
for name, xs in (("from the schedule", rs), ("from the send", ra)):
    lo, hi, cover = sign_interval(xs)
    within = sum(abs(x) <= 0.10 for x in xs)
    print(f"- latlab {name} over the peer: median **{statistics.median(xs):+.1%}**, sign-test interval "
          f"[{lo:+.1%}, {hi:+.1%}] (coverage {cover:.1%}); within ±10 % in {within} of {len(xs)} pairs")
EOF
done
