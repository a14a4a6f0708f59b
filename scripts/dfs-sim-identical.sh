#!/usr/bin/env bash
# Checks that two latlab builds simulate identically: runs four `dfs sim` configurations
# (64 nodes all policies; 192 nodes with a slow node, speed spread, interval drop and
# FLESnet; a time drop with a DDE kill; a small Dragonfly) with each binary and compares
# the result files field by field, ignoring only the command line, provenance, wall time,
# the trend analysis (derived from the compared completion blocks) and the event count,
# which must satisfy old events == new events + new superseded_events (the stale
# completions the old lazy queue popped). Prints one line per result file and a
# markdown table of user CPU seconds per configuration; exit 1 on any difference.
#
#   scripts/dfs-sim-identical.sh OLD_LATLAB NEW_LATLAB [OUT_DIR=/tmp/dfs-sim-identical]
#
# ~1 min of CPU per binary on this 2-core guest.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_LATLAB NEW_LATLAB [OUT_DIR]" >&2; exit 2; }
OLD=$1
NEW=$2
OUT=${3:-/tmp/dfs-sim-identical}
for b in "$OLD" "$NEW"; do [ -x "$b" ] || { echo "$b: not an executable" >&2; exit 2; }; done
CONFIGS=(
  "small|--nodes 64 --mode all --jobs 1"
  "med|--nodes 192 --mode all --jobs 1 --ts-per-interval 960 --time-slices 7680 --speed-spread 0.02 --drop 3-4:0.75 --slow input:3:0.9 --offered-load 0.7"
  "drop|--nodes 64 --mode both --jobs 1 --drop 1ms-3ms:0.5 --dde-replicas 2 --kill-dde 1@2ms"
  "fab|--nodes 32 --mode all --jobs 1 --network dragonfly --time-slices 640"
)
rm -rf "$OUT"
for side in old new; do
  bin=$OLD; [ $side = new ] && bin=$NEW
  mkdir -p "$OUT/$side"
  for c in "${CONFIGS[@]}"; do
    name=${c%%|*}
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U" -o "$OUT/$side/$name.user" "$bin" dfs sim ${c#*|} -o "$OUT/$side/$name.json" > /dev/null
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
# trend: derived from completion_blocks (compared) by a test that may itself change
SKIP = {"command_line", "provenance", "wall_ms", "events", "superseded_events", "trend"}
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in SKIP}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
bad = 0
for f in sorted(glob.glob(f"{out}/old/*.json")):
    name = os.path.basename(f)
    a, b = json.load(open(f)), json.load(open(f"{out}/new/{name}"))
    same = strip(a) == strip(b)
    eo, en = a["data"]["events"], b["data"]["events"]
    es = b["data"].get("superseded_events", 0)
    ok = same and eo == en + es
    bad += not ok
    print(f"{name}: {'identical' if same else 'DIFFERENT'}; events old {eo} = new {en} + superseded {es}: {eo == en + es}")
print()
print("| configuration | old user s | new user s |")
print("|---|---|---|")
for f in sorted(glob.glob(f"{out}/old/*.user")):
    n = os.path.basename(f)[:-5]
    print(f"| {n} | {open(f).read().strip()} | {open(f'{out}/new/{n}.user').read().strip()} |")
sys.exit(1 if bad else 0)
PY
