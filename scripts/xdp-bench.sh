#!/usr/bin/env bash
# Issue 14's AF_XDP figures in one run (about 3 minutes; docs/benchmarks.md has results):
#
#  gen   The generator's ceiling on the testbed's veth path latlab-ga -> latlab-na: 64-byte
#        frames, one TX thread on CPU $GEN_CPU for every tool, side by side, ROUNDS rounds
#        of latlab --io busy (UDP sockets), latlab --io xdp (AF_XDP), trafgen
#        (netsniff-ng, PACKET_TX_RING; on the same CPU). Counted for every tool alike as
#        latlab-na's RX packets over the run. The frames go to 10.201.1.9 whose neighbour
#        entry in latlab-gen is a MAC nobody has: latlab-na's stack drops them on arrival
#        (not for this host), the cheapest sink, the same for every tool, so the rate is
#        the generator's and not the receiver's.
#  fwd   1 Mpps offered for 10 s (RATE, FWD_SECS) through latlab's forwarder over AF_XDP
#        (NF on $NF_CPU), generator --io xdp on $GEN_CPU (RX on $GEN_RX_CPU; the same CPU by
#        default, where TX and RX run in one loop on one thread): achieved rate,
#        sent/received/lost, lateness p50/p99/p99.9 and latency, from the result file; and
#        where the CPUs went over 4 s mid-run (/proc/stat), with the kernel's CPU time per
#        forwarded probe: what 1 Mpps would need in CPUs on this path.
#  cal   latlab net calibrate --io xdp at 0, 10 and 50 us (forwarder and generator over
#        AF_XDP, real-time throttling off for the run): the user-stamp medians' shifts,
#        as the host idles and with /dev/cpu_dma_latency held at 0.
#
#   scripts/xdp-bench.sh [gen,fwd,cal]      (default: all three)
#
# Needs root, a release latlab (LATLAB=path, default target/release/latlab, built when
# missing) and trafgen (Debian netsniff-ng: `make bench-pps` or
# scripts/ensure-packages.sh netsniff-ng installs it). Prints markdown tables; the result
# files go to $OUT (default latlab-results/xdp-bench).
set -euo pipefail
PARTS=${1:-gen,fwd,cal}
case ",$PARTS," in *,gen,*|*,fwd,*|*,cal,*) ;; *) echo "usage: $0 [gen,fwd,cal]" >&2; exit 2;; esac
LATLAB=${LATLAB:-target/release/latlab}
OUT=${OUT:-latlab-results/xdp-bench}
SECS=${SECS:-3}
ROUNDS=${ROUNDS:-2}
RATE=${RATE:-1Mpps}
FWD_SECS=${FWD_SECS:-10}
GEN_CPU=${GEN_CPU:-0}
NF_CPU=${NF_CPU:-$(( $(nproc) - 1 ))}
GEN_RX_CPU=${GEN_RX_CPU:-$GEN_CPU}
[ "$(id -u)" = 0 ] || { echo "error: needs root (namespaces, AF_XDP)" >&2; exit 3; }
[ -x "$LATLAB" ] || cargo build --release -p latlab
mkdir -p "$OUT"
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r), latlab $LATLAB"
"$LATLAB" net testbed up >/dev/null
sleep 0.5 # the links' routes
G="ip netns exec latlab-gen"
mac() { ip -n "$1" -o link show dev "$2" | grep -o 'link/ether [^ ]*' | cut -d' ' -f2; }
rx() { ip -n latlab-nf -s -j link show dev latlab-na | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])'; }
SINK_MAC=02:00:00:00:09:09
GA=$(mac latlab-gen latlab-ga)
cleanup() { ip -n latlab-gen neigh del 10.201.1.9 dev latlab-ga 2>/dev/null || true; }
trap cleanup EXIT

if [[ ",$PARTS," == *,gen,* ]]; then
command -v trafgen >/dev/null || { echo "error: trafgen missing: scripts/ensure-packages.sh netsniff-ng" >&2; exit 3; }
ip -n latlab-gen neigh replace 10.201.1.9 lladdr "$SINK_MAC" dev latlab-ga nud permanent
cat >"$OUT/trafgen.cfg" <<CFG
{ eth(da=$SINK_MAC, sa=$GA), ipv4(saddr=10.201.1.1, daddr=10.201.1.9), udp(sp=7002, dp=7000), fill(0x00, 22) }
CFG
declare -A SUM=()
pps() { # NAME COMMAND... : starts COMMAND, counts latlab-na's RX over SECS after 1 s, stops it
    local name=$1; shift
    local a b t0 t1 pid
    # its own process group: trafgen forks a worker per CPU, all are stopped together
    setsid "$@" >"$OUT/$name.log" 2>&1 &
    pid=$!
    sleep 1
    a=$(rx); t0=$(date +%s.%N)
    sleep "$SECS"
    b=$(rx); t1=$(date +%s.%N)
    local alive=yes
    kill -0 "$pid" 2>/dev/null || alive="no (ended early: see $OUT/$name.log)"
    kill -INT -- "-$pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    local r
    r=$(python3 -c "print(round(($b - $a) / ($t1 - $t0)))")
    SUM[$name]=$(( ${SUM[$name]:-0} + r ))
    printf '| %s | %s | %d | %.2f | %s |\n' "$name" "$r" $((b - a)) "$(python3 -c "print($t1 - $t0)")" "$alive"
}
# a schedule far above what one thread sends, stopped by pps after the window
PROBE=(ip netns exec latlab-gen "$LATLAB" net probe --to 10.201.1.9:7000 --bind 10.201.1.1:7002
    --rx-bind 10.201.2.1:7001 --rate 5Mpps --duration 30s --warmup 0s --drain 10ms
    --timestamps user --tx-cpu "$GEN_CPU" --rx-cpu "$NF_CPU" -q)
echo
echo "### Generator ceiling, 64-byte frames, TX on CPU $GEN_CPU, counted over ${SECS} s after 1 s, $ROUNDS rounds"
echo
echo "| generator | packets/s at latlab-na | frames | seconds | running to the end |"
echo "|---|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
    pps latlab-busy "${PROBE[@]}" --io busy -o "$OUT/gen-busy.json"
    pps latlab-xdp "${PROBE[@]}" --io xdp -o "$OUT/gen-xdp.json"
    pps trafgen $G trafgen --dev latlab-ga --conf "$OUT/trafgen.cfg" \
        --cpus 1 --cpu "$GEN_CPU" --no-sock-mem
done
echo
python3 - "${SUM[latlab-busy]}" "${SUM[latlab-xdp]}" "${SUM[trafgen]}" "$ROUNDS" <<'PY'
import sys
b, x, t, n = (int(v) for v in sys.argv[1:])
print(f"mean over {n} rounds: --io busy {b/n:,.0f} pps, --io xdp {x/n:,.0f} pps, trafgen {t/n:,.0f} pps")
print(f"ratio --io xdp / --io busy: {x/b:.2f}x (target >= 2.5x); --io xdp / trafgen: {x/t:.2f}x (target >= 1x)")
PY
cleanup
fi

if [[ ",$PARTS," == *,fwd,* ]]; then
echo
echo "### $RATE offered for ${FWD_SECS} s through latlab's forwarder over AF_XDP (NF on CPU $NF_CPU, generator TX on CPU $GEN_CPU, RX on CPU $GEN_RX_CPU)"
echo
exec 4> >(ip netns exec latlab-nf "$LATLAB" net forward --testbed --io xdp --direction a-to-b \
    --cpu "$NF_CPU" --until-stdin-closes -q -o "$OUT/fwd-nf.json" >/dev/null)
sleep 1
rc=0
# where the CPUs went: /proc/stat over 4 s in the middle of the measured time, and the
# forwarder's RX count over the same 4 s (what one forwarded probe costs the host in CPU)
( sleep $(( 1 + FWD_SECS / 2 - 2 )); head -n $(( $(nproc) + 1 )) /proc/stat >"$OUT/fwd-stat-0"; rx >"$OUT/fwd-rx-0"
  sleep 4; head -n $(( $(nproc) + 1 )) /proc/stat >"$OUT/fwd-stat-1"; rx >"$OUT/fwd-rx-1" ) &
sampler=$!
$G "$LATLAB" net probe --testbed --io xdp --rate "$RATE" --duration "${FWD_SECS}s" --warmup 1s \
    --timestamps user --tx-cpu "$GEN_CPU" --rx-cpu "$GEN_RX_CPU" -q -o "$OUT/fwd-probe.json" \
    >"$OUT/fwd-probe.log" 2>&1 || rc=$?
wait "$sampler" || true
exec 4>&-
sleep 1
[ "$rc" = 0 ] || { echo "probe exited $rc:"; cat "$OUT/fwd-probe.log"; }
python3 - "$OUT/fwd-probe.json" "$OUT/fwd-nf.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); c, d = r["counters"], r["data"]
try:
    nf = json.load(open(sys.argv[2]))["counters"]
except Exception as e:
    nf = {"(no NF result)": str(e)}
print("| achieved pps | sent | received | lost | duplicates | sent = received + lost |")
print("|---|---|---|---|---|---|")
print(f"| {d.get('achieved_pps', 0):,.0f} | {c['sent']} | {c['received_unique']} | {c['lost']} | "
      f"{c.get('duplicates', 0)} | {c['sent'] == c['received_unique'] + c['lost']} |")
print()
print("forwarder counters:", ", ".join(f"{k} {v}" for k, v in sorted(nf.items())))
PY
python3 - "$OUT" <<'PY'
import os, sys
out = sys.argv[1]
def stat(i):
    rows = {}
    for line in open(f"{out}/fwd-stat-{i}"):
        f = line.split()
        if f[0].startswith("cpu"):
            rows[f[0]] = [int(x) for x in f[1:9]]
    return rows
if os.path.exists(f"{out}/fwd-stat-1"):
    a, b = stat(0), stat(1)
    rx = int(open(f"{out}/fwd-rx-1").read()) - int(open(f"{out}/fwd-rx-0").read())
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    print()
    print(f"CPU time over 4 s mid-run (/proc/stat), {rx / 4:,.0f} probes/s into the forwarder:")
    print()
    print("| CPU | user | system | softirq | irq | idle | steal |")
    print("|---|---|---|---|---|---|---|")
    kernel_ticks = 0
    for cpu in sorted(k for k in a if k != "cpu"):
        d = [y - x for x, y in zip(a[cpu], b[cpu])]
        tot = sum(d) or 1
        sh = {n: 100 * v / tot for n, v in zip(names, d)}
        # system (the AF_XDP kicks: copy mode's TX runs in the sendto) + irq + softirq (veth
        # NAPI, the XDP redirect's copy into the other socket); the spinning loops' user
        # time is elastic and left out
        kernel_ticks += d[2] + d[5] + d[6]
        print(f"| {cpu} | {sh['user']:.0f} % | {sh['system']:.0f} % | {sh['softirq']:.0f} % | "
              f"{sh['irq']:.0f} % | {sh['idle']:.0f} % | {sh['steal']:.0f} % |")
    hz = os.sysconf("SC_CLK_TCK")
    if rx > 0:
        per = kernel_ticks / hz / rx
        print()
        print(f"- kernel CPU time (system + irq + softirq, both CPUs) per forwarded probe: "
              f"{per * 1e6:.2f} µs; at that cost 1 Mpps needs {per * 1e6:.1f} CPUs of kernel "
              f"work alone, before the generator's and the forwarder's own loops; this host "
              f"has {os.cpu_count()}")
PY
echo
echo '```text'
"$LATLAB" show "$OUT/fwd-probe.json" | grep -E "warning|self-check throughput" || true
for h in generator.lateness user.actual; do
    "$LATLAB" show "$OUT/fwd-probe.json" | sed -n "/^$h:/,/^\$/p" | grep -E "^$h|^  (p50|p99|p99.9|max) "
done
echo '```'
fi

if [[ ",$PARTS," == *,cal,* ]]; then
# twice: as the host idles (--idle-as-is), and with /dev/cpu_dma_latency held at 0
# (calibrate's own default as root since 2026-11-28; no CPU halts in idle: on a guest
# idling through haltpoll a wake-up costs tens of us); the generator's TX and RX share one
# loop, so a difference between the two is the idle state's
cal() { # NAME [hold]
    local cmd="$LATLAB net calibrate --io xdp --no-rt-throttle --delays 0ns,10us,50us \
--duration ${CAL_SECS:-4}s --warmup 1s --rate 10kpps --rounds 2 -q -o $OUT/calibrate-$1"
    if [ "${2:-}" = hold ]; then
        sh -c "$cmd"
    else
        sh -c "$cmd --idle-as-is"
    fi
    python3 - "$OUT/calibrate-$1/calibrate.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["data"]
for r in d["rows"]:
    if r["source"] == "user (actual send)" and r["percentile"] == "p50":
        print(f"| {sys.argv[2]} | {r['injected_ns']/1e3:.0f} us | {r['baseline_ns']/1e3:.2f} us | "
              f"{r['measured_ns']/1e3:.2f} us | {r['shift_ns']/1e3:+.2f} us | {r['error_ns']/1e3:+.2f} us |")
PY
}
echo
echo "### latlab net calibrate --io xdp: user (actual send) p50, shift against 0 injected"
echo
echo "| idle state | injected | baseline p50 | measured p50 | shift | error |"
echo "|---|---|---|---|---|---|"
cal as-is
cal dma-latency-0 hold
fi
