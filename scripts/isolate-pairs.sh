#!/usr/bin/env bash
# What `--isolate` removes: `latlab host noise --cpu 1 --fifo 50` with and without
# `--isolate 1`, in alternating pairs (the order flips every pair), while a CPU spinner and a
# direct-I/O reader/writer run on CPU 0 (started and stopped by this script). For each run
# it sums the time `latlab explain` attributes on CPU 1 to the causes isolation acts on
# (other tasks, workqueues, device IRQs, rt throttling) and to the rest (ticks, the
# hypervisor, softirqs, IPIs, unexplained), then prints a table per run and the fall of the
# movable part, pair by pair and over all pairs.
#
#   sudo scripts/isolate-pairs.sh [LATLAB] [PAIRS] [DURATION] [OUTDIR]
#   sudo scripts/isolate-pairs.sh target/release/latlab 5 10s
#
# Needs root (isolation and SCHED_FIFO); exits 3 without it, 2 on bad arguments.
set -euo pipefail
latlab=${1:-target/release/latlab}
pairs=${2:-5}
dur=${3:-10s}
out=${4:-$(mktemp -d /tmp/latlab-isolate-pairs.XXXXXX)}
[ "$(id -u)" = 0 ] || { echo "isolate-pairs: needs root (isolation and SCHED_FIFO)" >&2; exit 3; }
[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || { echo "isolate-pairs: PAIRS must be a whole number ≥ 1, not '$pairs'" >&2; exit 2; }
[ -x "$latlab" ] || { echo "isolate-pairs: LATLAB '$latlab' is not an executable (build it: cargo build --release)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "isolate-pairs: needs 2 CPUs (load on CPU 0, measurement on CPU 1)" >&2; exit 2; }
mkdir -p "$out"

# the load, on CPU 0 only: a spinner, and 16 MiB written and read back with O_DIRECT in a
# loop (its completion interrupts and writeback work land where the kernel puts them —
# which is what isolation moves)
taskset -c 0 sh -c 'while :; do :; done' &
spin=$!
taskset -c 0 sh -c "while :; do dd if=/dev/zero of='$out/io.bin' bs=64k count=256 oflag=direct status=none; dd if='$out/io.bin' of=/dev/null bs=64k iflag=direct status=none; done" &
io=$!
cleanup() {
    kill "$spin" "$io" 2>/dev/null || true
    wait "$spin" "$io" 2>/dev/null || true
    rm -f "$out/io.bin"
}
trap cleanup EXIT

echo "isolate-pairs: $pairs pairs of host noise --cpu 1 --fifo 50 -d $dur, load on CPU 0; results in $out"
for i in $(seq 1 "$pairs"); do
    if (( i % 2 )); then order="plain isolated"; else order="isolated plain"; fi
    for m in $order; do
        extra=()
        [ "$m" = isolated ] && extra=(--isolate 1)
        "$latlab" host noise --cpu 1 --fifo 50 -d "$dur" "${extra[@]}" -q -o "$out/$m-$i.json"
    done
done

python3 - "$out" "$pairs" <<'EOF'
import json, sys
out, pairs = sys.argv[1], int(sys.argv[2])
MOVABLE = ("preempted", "workqueue", "irq", "rt_throttling")

def load(name):
    r = json.load(open(f"{out}/{name}.json"))
    groups, named = {}, {}
    for c in r.get("explain", {}).get("causes", []):
        cls = c["class"]
        # the idle task running while a FIFO spinner waits is throttling, whatever its label
        if cls == "preempted" and c["name"].startswith("swapper"):
            cls = "rt_throttling"
        g = cls if cls in MOVABLE else "rest"
        groups[g] = groups.get(g, 0) + c["time_ns"]
        if g == "rest":
            named[f'{c["class"]} {c["name"]}'.strip()] = named.get(f'{c["class"]} {c["name"]}'.strip(), 0) + c["time_ns"]
    noise = r["data"]["noise_ns_per_s"]
    changes = len((r["provenance"].get("isolation") or {}).get("changes", []) or [])
    return groups, named, noise, changes

ms = lambda ns: f"{ns / 1e6:.2f}"
print("| run | noise ns/s | other tasks ms | workqueue ms | device IRQ ms | rt throttling ms | movable ms | rest ms (top) |")
print("|---|---|---|---|---|---|---|---|")
tot = {"plain": 0, "isolated": 0}
falls = []
for i in range(1, pairs + 1):
    mov = {}
    for m in ("plain", "isolated"):
        g, named, noise, changes = load(f"{m}-{i}")
        movable = sum(g.get(k, 0) for k in MOVABLE)
        mov[m] = movable
        tot[m] += movable
        top = ", ".join(f"{k} {ms(v)}" for k, v in sorted(named.items(), key=lambda kv: -kv[1])[:3])
        print(f"| {m} {i} | {noise:.0f} | {ms(g.get('preempted', 0))} | {ms(g.get('workqueue', 0))} | {ms(g.get('irq', 0))} | {ms(g.get('rt_throttling', 0))} | {ms(movable)} | {ms(g.get('rest', 0))} ({top}) |")
    if mov["plain"] > 0:
        falls.append(1 - mov["isolated"] / mov["plain"])
print()
print("fall of the movable causes' time, pair by pair: " + ", ".join(f"{f * 100:.1f} %" for f in falls))
if tot["plain"] > 0:
    print(f"over all pairs: {ms(tot['plain'])} ms -> {ms(tot['isolated'])} ms, a fall of {(1 - tot['isolated'] / tot['plain']) * 100:.1f} %")
EOF
