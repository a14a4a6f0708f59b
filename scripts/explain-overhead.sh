#!/bin/bash
# paired sched runs, explain off/on interleaved; prints per run: mode, calib p50/p99 ns, blocks, cpu share, wall, user+sys
BIN=$1; N=${2:-3}; D=${3:-3s}
dir=$(mktemp -d); cd "$dir"
for i in $(seq 1 $N); do
 for mode in off on; do
  ex=""; [ $mode = on ] && ex="--explain"
  /usr/bin/time -f "%e %U %S" -o t.txt $BIN sched -d $D -n 1 -t 0 -w CPU --cpu 1 $ex -q -o o-$mode-$i.json 2>/dev/null
  python3 - o-$mode-$i.json "$(cat t.txt)" $mode "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json,sys
r=json.load(open(sys.argv[1])); d=r['data']; c=d['calibrations'][0]; t=d['threads'][0]
w,u,s=map(float,sys.argv[2].split())
a=r.get('explain')
print(f"{sys.argv[3]:3} load {sys.argv[4]:>5} loop p50 {c['p50_ns']:.1f} p99 {c['p99_ns']:.1f} ns; blocks {r['counters']['trace.blocks.t0']}; cpu share {t['cpu_received_ns']/d['spec']['duration_ns']*100:.1f}%; wall {w:.2f}s cpu {u+s:.2f}s" + (f"; explained {a['explained_ns']/max(a['excess_ns'],1)*100:.1f}% of {a['windows']} windows, lost {a['lost_events']}, events {d['explain']['kernel_events']}" if a else ""))
PY
 done
done
