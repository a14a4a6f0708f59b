#!/usr/bin/env bash
# The clock mapping of `latlab net probe --agents` (issue 16): two agents on the testbed
# (ranks 1, 2 in latlab-gen, latlab-gen1; rank 0 coordinates), 20 kpps Poisson round-trip
# load plus each agent's 1 kpps one-way stamp stream to the other agent, run twice: with
# rank 2's clock plain (hook 2:0:0, so the truth is recorded too) and pushed 5 ms ahead
# and 20 ppm fast (hook 2:5000000:20). Prints a markdown table per run and stream
# (corrected one-way p50 ± uncertainty, uncorrected p50, true p50, largest estimator
# error) and the comparison the issue asks for: |corrected p50 (skewed) − corrected p50
# (plain)| per stream, beside the same difference of the true medians.
#
#   scripts/agents-one-way.sh [SECONDS]      (default 10 s per run; about 1 min in all: each run waits for its forwarders' --duration)
#
# Needs root, mpirun (openmpi-bin), and a latlab built with the feature mpi
# (LATLAB=path, default target/release/latlab). Figures go to docs/benchmarks.md.
set -euo pipefail
SECS=${1:-10}
LATLAB=${LATLAB:-target/release/latlab}
OUT=${OUT:-latlab-results/agents-one-way}
[ "$(id -u)" = 0 ] || { echo "usage: sudo $0 [SECONDS] (needs root: namespaces)" >&2; exit 3; }
[ -x "$LATLAB" ] || { echo "error: $LATLAB missing: cargo build --release -p latlab" >&2; exit 3; }
LATLAB=$(realpath "$LATLAB")
mkdir -p "$OUT"
"$LATLAB" net testbed up --generators 2 >/dev/null
cleanup() { "$LATLAB" net testbed down >/dev/null 2>&1 || true; }
trap cleanup EXIT

run() { # NAME HOOK
    local name=$1 hook=$2 pids=()
    for j in 0 1; do
        ip netns exec latlab-nf "$LATLAB" net forward --testbed --generator $j \
            --duration $((SECS + 12))s -q -o "$OUT/$name-nf$j.json" </dev/null &
        pids+=($!)
    done
    sleep 1
    LATLAB_TEST_AGENT_CLOCK=$hook OMPI_MCA_btl_vader_single_copy_mechanism=none \
        timeout $((SECS + 60)) mpirun --allow-run-as-root --oversubscribe -n 3 \
        -x LATLAB_TEST_AGENT_CLOCK "$LATLAB" net probe --agents --testbed --rate 20kpps \
        --flows 2 --arrivals poisson --duration "${SECS}s" --warmup 2s \
        -o "$OUT/$name.json" >"$OUT/$name.log" 2>&1
    for p in "${pids[@]}"; do wait "$p" || true; done
}
run plain 2:0:0
run skewed 2:5000000:20

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT/plain.json" "$OUT/skewed.json" <<'PY'
import json, sys
runs = {}
for name, path in zip(["plain", "skewed"], sys.argv[1:]):
    d = json.load(open(path))["data"]["agents"]
    runs[name] = d
    print(f"\n{name}: clocks " + ", ".join(
        f"rank {a['rank']} {a['clock']['offset_ns']:.0f} ns ± {a['clock']['uncertainty_ns']:.0f} ns, {a['clock']['drift_ppm']:.2f} ppm"
        for a in d["agents"]))
print("\n| run | stream | samples | corrected p50 | ± uncertainty | uncorrected p50 | true p50 | largest error |")
print("|---|---|---|---|---|---|---|---|")
for name, d in runs.items():
    for s in d["one_way"]["streams"]:
        t = s["truth"] or {}
        print(f"| {name} | {s['sender_rank']} → {s['receiver_rank']} | {s['samples']}/{s['sent']} "
              f"| {s['corrected']['p50']/1e3:.2f} µs | {s['uncertainty_ns']/1e3:.2f} µs "
              f"| {s['uncorrected']['p50']/1e3:.2f} µs | {t.get('delays', {}).get('p50', 0)/1e3:.2f} µs "
              f"| {t.get('max_error_ns', 0)} ns |")
print("\n| stream | Δ corrected p50 (skewed − plain) | Δ true p50 | Δ corrected − Δ true (clock error) | bound (sum of ±) |")
print("|---|---|---|---|---|")
for p, s in zip(runs["plain"]["one_way"]["streams"], runs["skewed"]["one_way"]["streams"]):
    dc = s["corrected"]["p50"] - p["corrected"]["p50"]
    dt = s["truth"]["delays"]["p50"] - p["truth"]["delays"]["p50"]
    print(f"| {p['sender_rank']} → {p['receiver_rank']} | {dc/1e3:+.2f} µs | {dt/1e3:+.2f} µs "
          f"| {(dc-dt)/1e3:+.2f} µs | {(p['uncertainty_ns']+s['uncertainty_ns'])/1e3:.2f} µs |")
PY
