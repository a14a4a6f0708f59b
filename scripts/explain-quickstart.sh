#!/bin/bash
# The quick start of docs/net.md with --explain on the probe: a busy NF forwarding a to b
# on CPU 0, started by hand without --explain (as a user starts it), and RUNS probes at
# 5 kpps for 6 s with both generator threads on CPU 1. Prints one markdown row per run:
# the explained share of the tail's excess (samples above p99), the unexplained and
# outside-the-kernel shares, the top causes, and each CPU's steal time beside the silent
# time found (docs/explain.md, "runnable causes").
#
# usage: scripts/explain-quickstart.sh LATLAB [RUNS] [DIR]
#   LATLAB  the latlab binary
#   RUNS    probe runs against the one NF (default 5)
#   DIR     where the results go (default: a new directory under /tmp, kept)
#
# Needs root (namespaces, the recorder). Holds /tmp/latlab-testbed.lock (flock) from
# before `net testbed up` to after `net testbed down`, as other users of the testbed do.
set -euo pipefail
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] || [ $# -lt 1 ] && { sed -n 9,12p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
L=$(realpath "$1")
RUNS=${2:-5}
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "RUNS is a whole number >= 1, got '$RUNS'" >&2; exit 2; }
DIR=${3:-$(mktemp -d /tmp/latlab-quickstart.XXXXXX)}
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces, kernel events)" >&2; exit 3; }
mkdir -p "$DIR"
exec 9>/tmp/latlab-testbed.lock
flock 9
"$L" net testbed up >/dev/null
nf=
cleanup() {
    [ -n "$nf" ] && kill -INT "$nf" 2>/dev/null && wait "$nf" 2>/dev/null
    "$L" net testbed down >/dev/null 2>&1 || true
}
trap cleanup EXIT
(cd "$DIR" && exec ip netns exec latlab-nf "$L" net forward --testbed --io busy --cpu 0 \
    --direction a-to-b -q >"$DIR/nf.log" 2>&1) &
nf=$!
sleep 2
kill -0 "$nf" 2>/dev/null || { echo "the NF did not start: $(cat "$DIR/nf.log")" >&2; exit 1; }
echo "| run | explained | unexplained | outside the kernel | top causes | steal / silent (CPU 0; CPU 1) |"
echo "|---|---|---|---|---|---|"
for i in $(seq 1 "$RUNS"); do
    "$L" net probe --testbed --rate 5kpps -d 6s --tx-cpu 1 --rx-cpu 1 --explain -q \
        -o "$DIR/run$i.json" >"$DIR/run$i.txt" 2>&1
    python3 - "$DIR/run$i.json" "$i" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))["explain"]
x = a["excess_ns"] or 1
pct = lambda n: f"{100 * n / x:.1f} %"
cls = lambda c: sum(k["time_ns"] for k in a["causes"] if k["class"] == c)
top = ", ".join(f"{k['class']}:{k['name']} {pct(k['time_ns'])}" for k in a["causes"][:4])
ms = lambda n: f"{n / 1e6:.1f} ms"
steal = "; ".join(f"{ms(s['ns'])} / {ms(s.get('silent_ns', 0))}" for s in a.get("steal", []))
print(f"| {sys.argv[2]} | {pct(a['explained_ns'])} | {pct(cls('unexplained'))} | "
      f"{pct(cls('outside_kernel'))} | {top} | {steal} |")
EOF
done
echo "results: $DIR" >&2
