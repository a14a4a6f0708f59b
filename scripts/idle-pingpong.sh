#!/usr/bin/env bash
# A blocking loopback ping-pong with the idle policy allowed and held, alternating (issue 16;
# the haltpoll finding): reflector on SERVER_CPU under SCHED_FIFO 50, closed-loop probe on
# CLIENT_CPU under SCHED_FIFO 40, ROUNDS rounds of SECONDS each, every round once without a
# hold and once with `--dma-latency 0`. Prints a markdown table (round, policy, p50, p99,
# halts during the run from the result's idle record) and the median of each policy's round
# medians. Needs root (SCHED_FIFO, /dev/cpu_dma_latency). Default 5 rounds of 3 s: ~40 s.
#
#   scripts/idle-pingpong.sh [ROUNDS] [SECONDS]
#
# Environment: LATLAB (default target/release/latlab when built, else target/debug/latlab),
# SERVER_CPU (default 0), CLIENT_CPU (default 1), OUT (default a new /tmp/idle-pingpong.*).
set -euo pipefail
usage() { echo "usage: $0 [ROUNDS] [SECONDS]   (env: LATLAB SERVER_CPU CLIENT_CPU OUT)" >&2; exit 2; }
case "${1:-}" in -h|--help) usage ;; esac
ROUNDS=${1:-5}
SECS=${2:-3}
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ && "$SECS" =~ ^[1-9][0-9]*$ ]] || usage
[ "$(id -u)" = 0 ] || { echo "error: needs root (SCHED_FIFO, /dev/cpu_dma_latency)" >&2; exit 1; }
if [ -z "${LATLAB:-}" ]; then
    if [ -x target/release/latlab ]; then LATLAB=target/release/latlab; else LATLAB=target/debug/latlab; fi
fi
[ -x "$LATLAB" ] || { echo "error: $LATLAB is not built (cargo build -p latlab)" >&2; exit 1; }
SCPU=${SERVER_CPU:-0}
CCPU=${CLIENT_CPU:-1}
OUT=${OUT:-$(mktemp -d /tmp/idle-pingpong.XXXXXX)}
mkdir -p "$OUT"
PORT=7319
NF_PID=
cleanup() { if [ -n "$NF_PID" ]; then kill "$NF_PID" 2>/dev/null || true; wait "$NF_PID" 2>/dev/null || true; fi; }
trap cleanup EXIT
"$LATLAB" net reflect --bind "127.0.0.1:$PORT" --cpu "$SCPU" --fifo 50 -q -o "$OUT/reflect.json" >"$OUT/reflect.txt" &
NF_PID=$!
for _ in $(seq 200); do grep -q ready "$OUT/reflect.txt" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$OUT/reflect.txt" || { echo "error: the reflector did not get ready" >&2; exit 1; }
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$ROUNDS"); do
    for policy in allow hold; do
        flags=()
        [ "$policy" = hold ] && flags=(--dma-latency 0)
        "$LATLAB" net probe --to "127.0.0.1:$PORT" --mode pingpong --duration "${SECS}s" --warmup 0s \
            --tx-cpu "$CCPU" --rx-cpu "$CCPU" --fifo 40 --timestamps user "${flags[@]}" \
            -q -o "$OUT/r$i-$policy.json"
    done
done
kill -INT "$NF_PID" 2>/dev/null || true
wait "$NF_PID" 2>/dev/null || true
NF_PID=
echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds of $SECS s; reflector CPU $SCPU FIFO 50, probe CPU $CCPU FIFO 40; latlab $LATLAB; results in $OUT"
for f in "$OUT"/r*-*.json; do "$LATLAB" show "$f" -p 50,99 --csv "${f%.json}.csv" >/dev/null; done
python3 - "$OUT" "$ROUNDS" <<'PY'
import csv, json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print("\n| round | idle policy | QoS target at start | p50 | p99 | halts during the run (CPU: count) |")
print("|---|---|---|---|---|---|")
med = {"allow": [], "hold": []}
warnings = []
for i in range(1, rounds + 1):
    for policy in ("allow", "hold"):
        name = f"{out}/r{i}-{policy}"
        r = json.load(open(name + ".json"))
        idle = r["provenance"].get("idle") or {}
        states = {c["cpu"]: c["states"] for c in idle.get("cpus", [])}
        halts = ", ".join(
            f"{e['cpu']}: {sum(n for n, s in zip(e['entries'], states.get(e['cpu'], [])) if s['exit_latency_us'] > 0)}"
            for e in idle.get("entries", []))
        stats = {row["statistic"]: float(row["value_ns"]) / 1e3
                 for row in csv.DictReader(open(name + ".csv")) if row["series"] == "user.actual"}
        med[policy].append(stats["p50"])
        label = "allowed (not held)" if policy == "allow" else "held at 0 µs"
        qos = idle.get("qos_target_us")
        print(f"| {i} | {label} | {qos if qos is not None else '—'} µs | {stats['p50']:.1f} µs | {stats['p99']:.1f} µs | {halts or '—'} |")
        if policy == "allow" and qos is not None and qos < 2_000_000_000:
            warnings.append(f"warning: round {i}: another process held the QoS target at {qos} µs; 'allowed' is not the system's own idle policy")
if warnings:
    print("\n" + "\n".join(warnings))
print(f"\nmedian of the round medians: allowed {statistics.median(med['allow']):.1f} µs, held at 0 {statistics.median(med['hold']):.1f} µs")
PY
