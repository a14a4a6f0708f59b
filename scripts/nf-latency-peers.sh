#!/usr/bin/env bash
# Latency through the testbed's network function, one NF after the other, with the same
# generator (latlab net probe over UDP sockets, open loop, user TSC timestamps, TX and RX
# on GEN_CPU) and each NF's forwarding on NF_CPU:
#   latlab-sockets    latlab net forward --io busy   (recvmmsg/sendmmsg, busy polling)
#   latlab-af-xdp     latlab net forward --io xdp    (AF_XDP sockets on the veths)
#   testpmd-af-packet dpdk-testpmd, net_af_packet PMD, one busy lcore
#   testpmd-af-xdp    dpdk-testpmd, net_af_xdp PMD, one busy lcore
# Prints a markdown table (user.actual percentiles, sent/received, the NF's own counters,
# and for testpmd whether its count matches the probes received) for docs/benchmarks.md
# "DPDK testpmd as the NF". About 20 s per NF at the defaults (≈ 1.5 min in all).
#
#   usage: scripts/nf-latency-peers.sh [SECONDS [RATE]]      (defaults: 10 10kpps)
#
# Needs root, a built latlab (LATLAB=path, default target/release/latlab, built when
# missing), dpdk-dev (make deps-test). NFS="latlab-sockets testpmd-af-packet" runs a subset.
# Takes /tmp/latlab-testbed.lock itself while it runs.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,18p' "$0"
    exit 0
fi
SECS=${1:-10}
RATE=${2:-10kpps}
LATLAB=${LATLAB:-target/release/latlab}
OUT=${OUT:-latlab-results/nf-latency-peers}
NFS=${NFS:-latlab-sockets latlab-af-xdp testpmd-af-packet testpmd-af-xdp}
[ "$(id -u)" = 0 ] || { echo "error: needs root (namespaces, AF_XDP, testpmd)" >&2; exit 3; }
[ -x "$LATLAB" ] || cargo build --release -p latlab
LATLAB=$(realpath "$LATLAB")
mkdir -p "$OUT"
GEN_CPU=${GEN_CPU:-0}
NF_CPU=${NF_CPU:-$(($(nproc) - 1))}
exec 9>/tmp/latlab-testbed.lock
flock 9
"$LATLAB" net testbed up >/dev/null
G=(ip netns exec latlab-gen)
COMMON=(--rate "$RATE" --duration "${SECS}s" --warmup 1s --timestamps user
    --tx-cpu "$GEN_CPU" --rx-cpu "$GEN_CPU" -q)

nf_cmd() { # NAME -> the NF's command line
    case $1 in
    latlab-sockets) echo ip netns exec latlab-nf "$LATLAB" net forward --testbed --io busy --direction a-to-b --cpu "$NF_CPU" ;;
    latlab-af-xdp) echo ip netns exec latlab-nf "$LATLAB" net forward --testbed --io xdp --direction a-to-b --cpu "$NF_CPU" ;;
    testpmd-af-packet) echo "$LATLAB" net forward --testbed --engine testpmd --pmd af-packet --cpu "$NF_CPU" ;;
    testpmd-af-xdp) echo "$LATLAB" net forward --testbed --engine testpmd --pmd af-xdp --cpu "$NF_CPU" ;;
    *) echo "unknown NF $1" >&2; return 2 ;;
    esac
}
probe_addr() { # NAME -> how the probe is addressed through it
    case $1 in
    testpmd-*) echo --to 10.201.2.1:7001 --bind 10.201.1.1:0 --rx-bind 10.201.2.1:7001 --tx-device latlab-ga ;;
    *) echo --testbed ;;
    esac
}

run_one() { # NAME: starts the NF, waits for "ready", probes, stops the NF
    local name=$1 line
    # shellcheck disable=SC2046
    coproc NF { $(nf_cmd "$name") --until-stdin-closes -q -o "$OUT/$name-nf.json" 2>"$OUT/$name-nf.err"; }
    if ! read -r -t 60 line <&"${NF[0]}" || [ "$line" != ready ]; then
        echo "| $name | did not start: $(tail -1 "$OUT/$name-nf.err") |||||" >>"$OUT/table.md"
        eval "exec ${NF[1]}>&-"
        wait "$NF_PID" || true
        return
    fi
    # shellcheck disable=SC2046
    "${G[@]}" "$LATLAB" net probe $(probe_addr "$name") "${COMMON[@]}" -o "$OUT/$name-probe.json" \
        2>"$OUT/$name-probe.err" || true
    eval "exec ${NF[1]}>&-"
    wait "$NF_PID" || true
    "$LATLAB" show "$OUT/$name-probe.json" -p 50,99,99.9 --csv "$OUT/$name-probe.csv" >/dev/null 2>&1 || true
    python3 - "$name" "$OUT" >>"$OUT/table.md" <<'PY'
import csv, json, os, sys
name, out = sys.argv[1], sys.argv[2]
def fmt(ns):
    ns = float(ns)
    return f"{ns/1e6:.2f} ms" if ns >= 1e6 else f"{ns/1e3:.1f} µs" if ns >= 1e3 else f"{ns:.0f} ns"
try:
    p = json.load(open(f"{out}/{name}-probe.json"))
except (OSError, ValueError):
    err = open(f"{out}/{name}-probe.err").read().strip().splitlines()
    print(f"| {name} | probe failed: {err[-1] if err else '?'} |||||")
    sys.exit()
rows = {r[1]: r[2] for r in csv.reader(open(f"{out}/{name}-probe.csv")) if r and r[0] == "user.actual"}
c = p["counters"]
n = {}
if os.path.exists(f"{out}/{name}-nf.json"):
    n = json.load(open(f"{out}/{name}-nf.json")).get("counters", {})
nf = ", ".join(f"{k} {n[k]}" for k in ("received", "sent", "dropped") if k in n) or "—"
check = ""
if name.startswith("testpmd"):
    # port 1's TX must be what the receiver got (else probes bypassed testpmd); port 0's
    # RX short of what was sent means frames lost before testpmd (its ring full)
    rx, tx = n.get("received"), n.get("sent")
    check = " — TX = received" if tx == c["received_unique"] else f" — TX {tx} ≠ received {c['received_unique']}: NOT ALL THROUGH TESTPMD"
    check += "; RX = sent" if rx == c["sent"] else f"; RX {c['sent'] - (rx or 0)} short of sent (lost before testpmd)"
pct = " | ".join(fmt(rows[k]) if k in rows else "—" for k in ("p50", "p99", "p99.9", "max"))
print(f"| {name} | {pct} | {c['sent']} / {c['received_unique']} (lost {c.get('lost', 0)}) | {nf}{check} |")
PY
}

{
    echo "NF latency, $RATE for ${SECS}s after 1s warm-up, generator on CPU $GEN_CPU, NF on CPU $NF_CPU, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $("$LATLAB" --version)"
    echo
    echo "| NF | user.actual p50 | p99 | p99.9 | max | sent / received | NF counters |"
    echo "|---|---|---|---|---|---|---|"
} >"$OUT/table.md"
for name in $NFS; do
    run_one "$name"
    sleep 1
done
cat "$OUT/table.md"
echo "results in $OUT/"
