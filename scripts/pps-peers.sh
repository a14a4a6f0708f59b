#!/usr/bin/env bash
# Packets per second on the generator side of the testbed's veth path (latlab-ga ->
# latlab-na), 64-byte frames, one TX thread on the same CPU for every tool:
#   latlab net probe --rx-io busy (UDP sockets, open loop at a rate it cannot reach),
#   latlab net probe --io xdp     (only when this latlab has it),
#   trafgen                       (netsniff-ng, PACKET_TX_RING),
#   xdp-trafficgen udp            (xdp-tools; it may not run on veth: then it says why).
# Counted for every tool alike as latlab-na's RX packets over the run (nothing forwards
# them: they go to 10.201.1.9, an address nobody has, so the NF namespace drops them).
# Then the forwarding rate through the NF: packets delivered on latlab-gb per second
# with latlab's busy socket forwarder and with dpdk-testpmd (AF_PACKET), each on the NF
# CPU, offered by latlab's generator at --rate 2Mpps; and the latency at 20 kpps through
# each. Figures go to docs/benchmarks.md.
#
#   scripts/pps-peers.sh [SECONDS]        (PARTS=gen or PARTS=fwd runs one half)
#
# Needs root, a built latlab (LATLAB=path, default target/release/latlab), and the Debian
# packages netsniff-ng, xdp-tools, dpdk-dev (make bench-pps installs them).
set -uo pipefail
SECS=${1:-5}
PARTS=${PARTS:-gen,fwd}
LATLAB=${LATLAB:-target/release/latlab}
OUT=${OUT:-latlab-results/pps-peers}
[ "$(id -u)" = 0 ] || { echo "error: needs root (namespaces, raw sockets)" >&2; exit 3; }
[ -x "$LATLAB" ] || cargo build --release -p latlab
mkdir -p "$OUT"
GEN_CPU=${GEN_CPU:-0}
NF_CPU=${NF_CPU:-$(( $(nproc) - 1 ))}
"$LATLAB" net testbed up >/dev/null
G="ip netns exec latlab-gen"
mac() { ip -n "$1" -o link show dev "$2" | grep -o 'link/ether [^ ]*' | cut -d' ' -f2; }
NA=$(mac latlab-nf latlab-na)
GA=$(mac latlab-gen latlab-ga)
rx() { ip -n "$1" -s -j link show dev "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])'; }
# a sink address: frames reach latlab-na and end there
ip -n latlab-gen neigh replace 10.201.1.9 lladdr "$NA" dev latlab-ga nud permanent
cleanup() { ip -n latlab-gen neigh del 10.201.1.9 dev latlab-ga 2>/dev/null || true; }
trap cleanup EXIT

pps() { # NAME COMMAND... : runs COMMAND, prints NAME and latlab-na's RX rate
    local name=$1; shift
    local a t0 b t1
    a=$(rx latlab-nf latlab-na); t0=$(date +%s.%N)
    "$@" >"$OUT/$name.log" 2>&1; local rc=$?
    b=$(rx latlab-nf latlab-na); t1=$(date +%s.%N)
    python3 -c "import sys; n=$b-$a; t=$t1-$t0; print('%-22s %10.0f pps  (%d frames in %.2f s, exit %s)' % (sys.argv[1], n / t, n, t, sys.argv[2]))" "$name" "$rc"
}

if [[ ",$PARTS," == *,gen,* ]]; then
echo "== generator side, 64-byte frames, TX on CPU $GEN_CPU, ${SECS}s each"
pps latlab-busy $G "$LATLAB" net probe --to 10.201.1.9:7000 --bind 10.201.1.1:0 \
    --rx-bind 10.201.2.1:7001 --rx-io busy --rate 3Mpps --duration "${SECS}s" --warmup 0s --drain 10ms \
    --timestamps user --tx-cpu "$GEN_CPU" --rx-cpu "$NF_CPU" -q -o "$OUT/latlab-busy.json"
if "$LATLAB" net probe --help | grep -q -- '--io <'; then
    pps latlab-xdp $G "$LATLAB" net probe --to 10.201.1.9:7000 --bind 10.201.1.1:0 \
        --rx-bind 10.201.2.1:7001 --io xdp --rate 10Mpps --duration "${SECS}s" --warmup 0s --drain 10ms \
        --timestamps user --tx-cpu "$GEN_CPU" --rx-cpu "$NF_CPU" -q -o "$OUT/latlab-xdp.json"
else
    echo "latlab-xdp             (this latlab has no --io xdp)"
fi
cat >"$OUT/trafgen.cfg" <<CFG
{ eth(da=$NA, sa=$GA), ipv4(saddr=10.201.1.1, daddr=10.201.1.9), udp(sp=4000, dp=7000), fill(0x00, 22) }
CFG
pps trafgen $G timeout -s INT "$SECS" trafgen --dev latlab-ga --conf "$OUT/trafgen.cfg" --cpus 1 --cpu "$GEN_CPU" --no-sock-mem
pps xdp-trafficgen $G timeout -s INT "$SECS" taskset -c "$GEN_CPU" xdp-trafficgen udp latlab-ga --dst-mac "$NA" --threads 1
grep -m1 -i "error\|fail\|couldn" "$OUT/xdp-trafficgen.log" | sed 's/^/  xdp-trafficgen: /'
fi
[[ ",$PARTS," == *,fwd,* ]] || exit 0

echo "== forwarding rate through the NF on CPU $NF_CPU (offered: latlab --rx-io busy at 2Mpps), and latency at 20 kpps"
fwd() { # NAME PROBE-ADDRESS-ARGS... (the NF is running)
    local name=$1; shift
    $G "$LATLAB" net probe "$@" --rx-io busy --rate 2Mpps --duration "${SECS}s" --warmup 0s \
        --timestamps user --tx-cpu "$GEN_CPU" --rx-cpu "$GEN_CPU" -q -o "$OUT/$name-rate.json" >/dev/null 2>&1
    $G "$LATLAB" net probe "$@" --rate 20kpps --duration "${SECS}s" --warmup 1s \
        --tx-cpu "$GEN_CPU" --rx-cpu "$GEN_CPU" -q -o "$OUT/$name-lat.json" >/dev/null 2>&1
    python3 - "$OUT/$name-rate.json" "$OUT/$name-lat.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); l = json.load(open(sys.argv[2]))
c = r["counters"]; secs = r["duration_ns"] / 1e9
lc = l["counters"]
print(f"{sys.argv[3]:<22} offered {c['sent']/secs:9.0f} pps, delivered {c['received_unique']/secs:9.0f} pps; at 20 kpps: lost {lc['lost']}, see latlab show {sys.argv[2]}")
PY
    "$LATLAB" show "$OUT/$name-lat.json" 2>/dev/null | grep -E "^(user\.sched|user\.actual|series)" | sed 's/^/  /'
}
exec 4> >(ip netns exec latlab-nf "$LATLAB" net forward --testbed --io busy --direction a-to-b --cpu "$NF_CPU" --until-stdin-closes -q -o "$OUT/nf-latlab.json" >/dev/null)
sleep 1
fwd latlab-forwarder --testbed
exec 4>&-
sleep 1
exec 4> >("$LATLAB" net forward --testbed --engine testpmd --cpu "$NF_CPU" --until-stdin-closes -q -o "$OUT/nf-testpmd.json" >/dev/null)
sleep 3
fwd testpmd --to 10.201.2.1:7001 --bind 10.201.1.1:0 --rx-bind 10.201.2.1:7001 --tx-device latlab-ga
exec 4>&-
sleep 2
echo "results in $OUT/"
