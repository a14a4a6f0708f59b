#!/usr/bin/env bash
# The issue-15 steady-state run: 384 nodes (192 inputs + 192 computes), best effort, DFS and
# FLESnet's time-slice manager, the default model and stall trace, 576 intervals of 960
# time-slices (~12 s simulated: DFS and FLESnet are stationary; best effort's spread is
# not — it pauses near 20 ms after ~3-5 s and then climbs on towards the 65-ms credit
# window for more than 40 s simulated, docs/dfs.md — so its figures are lower bounds),
# the three policies on 2 threads. Prints the simulator's tables (completion spread,
# bandwidth, warm-up, halves, trend per simulated second with its standard error,
# stationary, MSER's settle point, events, wall, events/s) and then one markdown row per
# policy with the wall time of the whole command.
#
#   scripts/dfs-steady-384.sh [INTERVALS=576] [JOBS=2] [LATLAB=target/debug/latlab]
#
# FLESnet runs at --offered-load 0.7: below the ~77 % the modelled network carries, so its
# builders' queues are stationary (at the default 0.8 they fill until discards start, which
# takes seconds of simulated time at 384 nodes; docs/dfs.md "Steady state").
# Budget: ≤ 10 min on a 2-core host (nearly quiet: 4 min 26 s with the dev build, dfs at
# opt-level 2: 479 s of CPU in all, DFS's ~266 s on one thread the long pole). Every
# figure but the wall times is deterministic (seed 1).
set -euo pipefail
INTERVALS=${1:-576}
JOBS=${2:-2}
LATLAB=${3:-target/debug/latlab}
OUT=${OUT:-latlab-results/dfs-steady-384}
[ -x "$LATLAB" ] || { echo "$LATLAB not built: cargo build -p latlab" >&2; exit 2; }
mkdir -p "$OUT"
TS=$((INTERVALS * 960))
CMD=("$LATLAB" dfs sim --nodes 384 --mode all --jobs "$JOBS" --ts-per-interval 960
     --time-slices "$TS" --offered-load 0.7 -o "$OUT/run.json")
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: ${CMD[*]}"
start=$(date +%s.%N)
"${CMD[@]}"
end=$(date +%s.%N)
wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
echo
echo "| policy | simulated s | events | events/s (its thread) | p90 ms 1st/2nd half | trend ms/s ± se | stationary | settled (MSER cut s: mean ms after) | steady state | command wall s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for m in best-effort dfs flesnet; do
  python3 - "$OUT/run-$m.json" "$wall" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = r["data"]
w = r["counters"].get("wall_ms", 0) / 1e3
h = d.get("completion_halves_ms") or [{"p90": float("nan")}] * 2
t = d.get("trend") or {}
s = t.get("settle") or {}
settled = s.get("stationary") and s.get("reliable")
steady = "yes (whole run)" if t.get("stationary") else ("yes (after the cut)" if settled else "no")
cut = f"{s['from_ms'] / 1e3:.2f}: {s['mean_ms']:.3f}" + ("" if s.get("reliable") else " (cut at half: run too short)") if s else "-"
print(f"| {d['config']['mode']} | {d['duration_ms'] / 1e3:.3f} | {d['events']} | "
      f"{d['events'] / w if w else float('nan'):.0f} | {h[0]['p90']:.3f}/{h[1]['p90']:.3f} | "
      f"{t.get('slope_ms_per_s', float('nan')):.3f} ± {t.get('slope_se_ms_per_s', float('nan')):.3f} | "
      f"{'yes' if t.get('stationary') else 'no'} | {cut} | {steady} | {sys.argv[2]} |")
PY
done
