#!/usr/bin/env bash
# Latency against offered load for memcached and nginx, open loop beside closed loop (issue 16,
# item 3). For each server:
#   1. the closed-loop peer (memaslap, i.e. Debian's memcaslap; wrk) at 1, 2, 4 and 8
#      connections against the server started here with latlab's own flags (memcached
#      `-t 1 -m 256 -U 0`; nginx one worker, keep-alive, the 704-byte page of
#      latlab_net::serve), pinned to the server CPU, the peer on the client CPU;
#   2. `latlab net load --serve` (latlab starts and stops the same server itself) at a sweep
#      of offered rates: fractions 0.25 … 1.5 of the peer's highest throughput, plus the peer's
#      one-connection throughput (where the medians are compared), SECONDS each after 1 s of
#      warm-up, constant arrivals (wrk2-style); memcached with memaslap's request mix (90 %
#      gets, 64-byte keys, 1024-byte values); then the one-connection throughput again with
#      `--io blocking` (the peers' epoll-style waits) beside the default `--io adaptive`;
#   3. one 30 s open-loop run at half the peer's one-connection throughput (the fixed-rate
#      run of the issue's "Done when").
# Prints one markdown table per server (offered, achieved, p50 [95 % CI], p99 [95 % CI],
# late, failed self-checks), the peer's rows, and the median comparison at the peer's
# one-connection throughput. About 4 minutes with the defaults (--quick: about 1 minute).
#
#   scripts/load-curves.sh [--quick] [allow|hold] [SECONDS]
#
# The idle policy (issue 16's comparison depends on it on a guest whose idle CPUs halt):
# `allow` (default) leaves the system's cpuidle policy as it is; `hold` runs the whole
# comparison, peers and latlab alike, under `latlab host hold-idle --dma-latency 0` (idle
# CPUs poll, never halt), and latlab's runs also say so in their results (--dma-latency 0).
# The tables' header names the policy, the cpuidle driver and the QoS target seen.
#
# Environment: LATLAB (default target/release/latlab when built, else target/debug/latlab),
# SERVER_CPU (default 0), CLIENT_CPU (default 1), OUT (default a new /tmp/load-curves.*).
# Needs: memcached, memcaslap (libmemcached-tools), nginx (nginx-light), wrk, python3.
set -euo pipefail
usage() { echo "usage: $0 [--quick] [allow|hold] [SECONDS]   (env: LATLAB SERVER_CPU CLIENT_CPU OUT)" >&2; exit 2; }
ARGS=("$@")
QUICK=
if [ "${1:-}" = "--quick" ]; then QUICK=1; shift; fi
IDLE=allow
case "${1:-}" in
    -h|--help) usage ;;
    allow|hold) IDLE=$1; shift ;;
esac
SECS=${1:-5}
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || usage
FIXED=30
if [ -n "$QUICK" ]; then SECS=1; FIXED=2; fi
if [ -z "${LATLAB:-}" ]; then
    if [ -x target/release/latlab ]; then LATLAB=target/release/latlab; else LATLAB=target/debug/latlab; fi
fi
[ -x "$LATLAB" ] || { echo "error: $LATLAB is not built (cargo build -p latlab)" >&2; exit 1; }
IDLE_FLAGS=()
if [ "$IDLE" = hold ]; then
    if [ -z "${LOAD_CURVES_HELD:-}" ]; then
        # the whole comparison under one hold: the peers see the same idle policy as latlab
        exec "$LATLAB" host hold-idle --dma-latency 0 -- env LOAD_CURVES_HELD=1 LATLAB="$LATLAB" "$0" "${ARGS[@]}"
    fi
    IDLE_FLAGS=(--dma-latency 0)
fi
qos_target() { od -An -td4 /dev/cpu_dma_latency 2>/dev/null | tr -d ' ' || echo unknown; }
IDLE_LINE="idle policy: $IDLE (cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none), QoS target $(qos_target) µs during the run)"
echo "$IDLE_LINE" >&2
SCPU=${SERVER_CPU:-0}
CCPU=${CLIENT_CPU:-1}
OUT=${OUT:-$(mktemp -d /tmp/load-curves.XXXXXX)}
mkdir -p "$OUT"
for p in memcached memcaslap nginx wrk python3; do
    command -v "$p" >/dev/null || { echo "error: $p is not installed (make deps-demo)" >&2; exit 1; }
done
MC_PORT=21311
NG_PORT=28181
# shellcheck source=servers.sh
. "$(dirname "$0")/servers.sh"

# rates: fractions of the peer's best throughput, plus its one-connection throughput
sweep() {
    python3 - "$1" "$2" <<'EOF'
import sys
best, one = float(sys.argv[1]), float(sys.argv[2])
rates = {max(100, round(best * f / 100) * 100) for f in (0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5)}
# a sweep rate within 5 % of the one-connection throughput gives way to it
rates = {r for r in rates if abs(r - one) > 0.05 * one}
rates.add(max(100, round(one)))
print(" ".join(str(r) for r in sorted(rates)))
EOF
}

# peer_rates FILE_PREFIX REGEX: the peer's best throughput over 1, 2, 4, 8 connections, and
# its one-connection throughput
peer_rates() {
    python3 - "$OUT/$1" "$2" <<'EOF'
import re, sys
v = {c: float(re.findall(sys.argv[2], open(f"{sys.argv[1]}{c}.txt").read())[-1]) for c in (1, 2, 4, 8)}
print(max(v.values()), v[1])
EOF
}

# open_loop SERVER TARGET BEST ONE EXTRA...: latlab --serve over the sweep, then the fixed run;
# sets RATES and FIXED_RATE
open_loop() {
    local server=$1 target=$2 best=$3 one=$4
    shift 4
    RATES=$(sweep "$best" "$one")
    FIXED_RATE=$(python3 -c "print(max(100, round($one / 2 / 100) * 100))")
    echo "$server: latlab open loop at $RATES requests/s, then $FIXED_RATE for ${FIXED} s…" >&2
    for r in $RATES fixed; do
        local rate=$r secs=$SECS
        if [ "$r" = fixed ]; then rate=$FIXED_RATE; secs=$FIXED; fi
        taskset -c "$CCPU" "$LATLAB" net load --serve "$server" --serve-cpu "$SCPU" \
            --target "$target" --rate "${rate}rps" -d "${secs}s" --warmup 1s "${IDLE_FLAGS[@]}" "$@" \
            -q -o "$OUT/$server-$r.json"
    done
    # the comparison rate once more with the peer's way of waiting (epoll-style blocking)
    local r1
    r1=$(python3 -c "print(max(100, round($one)))")
    taskset -c "$CCPU" "$LATLAB" net load --serve "$server" --serve-cpu "$SCPU" \
        --target "$target" --rate "${r1}rps" -d "${SECS}s" --warmup 1s "${IDLE_FLAGS[@]}" "$@" \
        --io blocking -q -o "$OUT/$server-blocking.json"
}

# ---- memcached ----------------------------------------------------------------------------
echo "memcached: memaslap at 1, 2, 4, 8 connections (${SECS} s each)…" >&2
start_memcached "$SCPU" "$MC_PORT"
for c in 1 2 4 8; do
    taskset -c "$CCPU" memcaslap -s "127.0.0.1:$MC_PORT" -T 1 -c "$c" -t "${SECS}s" -S "${SECS}s" >"$OUT/memaslap-c$c.txt" 2>&1
done
stop_server
read -r MC_BEST MC_ONE < <(peer_rates memaslap-c 'TPS: (\d+)')
# memaslap's own request mix (it prints set_prop=0.10 get_prop=0.90; its defaults are 64-byte
# keys and 1024-byte values): the comparison is of one workload
open_loop memcached "memcached://127.0.0.1:$MC_PORT" "$MC_BEST" "$MC_ONE" -c 4 --pipeline 8 \
    --get-ratio 0.9 --key-size 64 --value-size 1024
MC_RATES=$RATES MC_FIXED=$FIXED_RATE

# ---- nginx --------------------------------------------------------------------------------
echo "nginx: wrk at 1, 2, 4, 8 connections (${SECS} s each)…" >&2
start_nginx "$SCPU" "$NG_PORT" "$OUT/nginx"
for c in 1 2 4 8; do
    taskset -c "$CCPU" wrk -t 1 -c "$c" -d "${SECS}s" --latency "http://127.0.0.1:$NG_PORT/" >"$OUT/wrk-c$c.txt" 2>&1
done
stop_server
read -r NG_BEST NG_ONE < <(peer_rates wrk-c 'Requests/sec:\s+([\d.]+)')
open_loop nginx "http://127.0.0.1:$NG_PORT/" "$NG_BEST" "$NG_ONE" -c 4 --pipeline 4
NG_RATES=$RATES NG_FIXED=$FIXED_RATE

# ---- tables -------------------------------------------------------------------------------
for f in "$OUT"/memcached-*.json "$OUT"/nginx-*.json; do
    "$LATLAB" show "$f" -p 50,99 --csv "${f%.json}.csv" >/dev/null
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); latlab: $LATLAB; server CPU $SCPU, client CPU $CCPU; $SECS s per point; results in $OUT"
echo "$IDLE_LINE"
python3 - "$OUT" "$SECS" "$FIXED" "$MC_RATES" "$MC_FIXED" "$NG_RATES" "$NG_FIXED" <<'EOF'
import csv, json, re, sys
out, secs, fixed = sys.argv[1], sys.argv[2], sys.argv[3]
plans = {"memcached": (sys.argv[4].split(), sys.argv[5]), "nginx": (sys.argv[6].split(), sys.argv[7])}

def us(ns):
    return f"{float(ns) / 1e3:.1f} µs" if float(ns) < 1e6 else f"{float(ns) / 1e6:.2f} ms"

def latlab_row(name):
    r = json.load(open(f"{out}/{name}.json"))
    d, c = r["data"], r["counters"]
    stats = {}
    for row in csv.DictReader(open(f"{out}/{name}.csv")):
        if row["series"] == "request.sched" and row["statistic"] in ("p50", "p99"):
            ci = f" [{us(row['ci_low_ns'])}, {us(row['ci_high_ns'])}]" if row["ci_low_ns"] else ""
            stats[row["statistic"]] = (float(row["value_ns"]), us(row["value_ns"]) + ci)
    failed = [v["check"] + ("" if v["outcome"] == "fail" else f" ({v['outcome']})")
              for v in r["self_checks"] if v["outcome"] != "pass"]
    late = f"{c['late']:,} of {c['sent']:,}" + (f", {c['unsent']:,} unsent" if c["unsent"] else "")
    served = d.get("served", {}).get("stop", "—")
    return d["configured_rps"], d["achieved_rps"], stats, late, failed, served

def log2_bucket(text, q):
    """memaslap's Log2 Dist of the last Total Statistics block: the bucket holding quantile
    q. memaslap files a latency v (µs) under the smallest r with 2^r >= v (ms_stats.c,
    ms_local_log2), so the column labelled r holds (2^(r-1), 2^r] µs."""
    block = text[text.rfind("Total Statistics"):]
    counts = {}
    for m in re.finditer(r"^\s+(\d+):\s+([\d\s]+)$", block.split("cmd_get")[0], re.M):
        base = int(m.group(1))
        for i, n in enumerate(m.group(2).split()):
            counts[base + i] = int(n)
    total = sum(counts.values())
    seen = 0
    for k in sorted(counts):
        seen += counts[k]
        if total and seen >= q * total:
            return f"({2**(k-1)}, {2**k}] µs"
    return "—"

for server, (rates, fixed_rate) in plans.items():
    print(f"\n### {server}\n")
    print("| client | offered (req/s) | achieved (req/s) | p50 [95 % CI] | p99 [95 % CI] | late / sent | self-checks not passed |")
    print("|---|---|---|---|---|---|---|")
    peer_p50 = {}
    for c in (1, 2, 4, 8):
        if server == "memcached":
            t = open(f"{out}/memaslap-c{c}.txt").read()
            tps = float(re.findall(r"TPS: (\d+)", t)[-1])
            geo = float(re.findall(r"Geo:\s+([\d.]+)", t[t.rfind("Total Statistics"):])[0])
            peer_p50[c] = geo * 1e3
            print(f"| memaslap -c {c} (closed loop) | — | {tps:,.0f} | {geo:.1f} µs (geometric mean; median in {log2_bucket(t, 0.5)}) | in {log2_bucket(t, 0.99)} | — | — |")
        else:
            t = open(f"{out}/wrk-c{c}.txt").read()
            rps = float(re.findall(r"Requests/sec:\s+([\d.]+)", t)[-1])
            def pct(p):
                m = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", t, re.M)
                if not m:
                    return None
                return float(m.group(1)) * {"us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
            p50, p99 = pct(50), pct(99)
            peer_p50[c] = p50
            print(f"| wrk -t 1 -c {c} (closed loop) | — | {rps:,.0f} | {us(p50) if p50 else '—'} | {us(p99) if p99 else '—'} | — | — |")
    one_rate = None
    for name in [f"{server}-{r}" for r in rates] + [f"{server}-fixed", f"{server}-blocking"]:
        offered, achieved, stats, late, failed, served = latlab_row(name)
        label = f"latlab open loop, {fixed if name.endswith('fixed') else secs} s"
        if name.endswith("blocking"):
            label += ", --io blocking"
        p50 = stats.get("p50", (0, "—"))
        print(f"| {label} | {offered:,.0f} | {achieved:,.0f} | {p50[1]} | {stats.get('p99', (0, '—'))[1]} | {late} | {', '.join(failed) or 'none'} |")
        if served != "stopped":
            print(f"\nwarning: the server of {name} did not stop cleanly: {served}\n")
    # the median comparison at the peer's one-connection throughput (the sweep's rate
    # closest to it)
    one = float(re.findall(r"TPS: (\d+)", open(f"{out}/memaslap-c1.txt").read())[-1]) if server == "memcached" else \
        float(re.findall(r"Requests/sec:\s+([\d.]+)", open(f"{out}/wrk-c1.txt").read())[-1])
    r = min(rates, key=lambda x: abs(float(x) - one))
    peer = "memaslap -c 1 (geometric mean)" if server == "memcached" else "wrk -c 1"
    for name, how in ((f"{server}-{r}", "latlab p50 (--io adaptive, the default)"),
                      (f"{server}-blocking", "latlab p50 with --io blocking (the peer's epoll-style waits)")):
        _, _, stats, _, _, _ = latlab_row(name)
        if "p50" in stats and peer_p50.get(1):
            mine, theirs = stats["p50"][0], peer_p50[1]
            print(f"\nAt {int(r):,} req/s (the peer's one-connection throughput, {one:,.0f}/s): {how} {us(mine)} against {peer} {us(theirs)}: {100 * (mine / theirs - 1):+.1f} % ({'within' if abs(mine / theirs - 1) <= 0.10 else 'not within'} 10 %).")
EOF
