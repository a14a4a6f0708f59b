#!/bin/bash
# How much of --explain's cost on a blocking loopback ping-pong is the kernel's price of
# running any BPF program at the recorder's tracepoints, and how much is the recorder's own
# work (issue 13: median RTT shift <= 0.5 us). Per round, three runs in a rotating order:
#   off    no tracing
#   hooks  empty tp_btf programs (return at once) on every tracepoint the BPF recorder
#          attaches (latlab_sys::ktrace::DEFAULT_EVENTS), held by scripts/bpf/event-cost.c's
#          hold mode: the tracepoint machinery alone (static key, __bpf_trace_run, the
#          indirect call into the program and its return)
#   on     --explain --explain-recorder bpf (the recorder: the same hooks, plus its records,
#          the reader thread and the attribution after the run)
# Reflector CPU 0 FIFO 50, probe CPU 1 FIFO 40, /dev/cpu_dma_latency held at 0 for the
# whole script (as scripts/explain-pingpong-overhead.sh's "held"). Prints per round the
# medians and, per traced mode, the median shift against the same round's off run with a
# sign-test interval and a bootstrap 95 % interval.
#
# usage: scripts/explain-hook-floor.sh [BIN] [ROUNDS] [DURATION]
#   BIN       the latlab binary (default: target/release/latlab)
#   ROUNDS    rounds of off/hooks/on (default 12)
#   DURATION  measured time of each run after a 1 s warm-up (default 2s)
# Needs root, gcc and linux/bpf.h (Debian gcc, linux-libc-dev). About 20 s a round.
set -euo pipefail
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { sed -n 17,20p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(readlink -f "${1:-$here/target/release/latlab}")
ROUNDS=${2:-12}
DUR=${3:-2s}
[ -x "$BIN" ] || { echo "no latlab binary at $BIN (cargo build --release -p latlab)" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer, got '$ROUNDS'" >&2; exit 2; }
[[ "$DUR" =~ ^[0-9]+(ms|s)$ ]] || { echo "DURATION must be like 2s or 500ms, got '$DUR'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (SCHED_FIFO, bpf)" >&2; exit 3; }
command -v gcc >/dev/null && [ -e /usr/include/linux/bpf.h ] ||
    { echo "needs gcc and /usr/include/linux/bpf.h (Debian gcc, linux-libc-dev)" >&2; exit 3; }
[ -w /dev/cpu_dma_latency ] || { echo "needs a writable /dev/cpu_dma_latency" >&2; exit 3; }

# the tracepoints of latlab_sys::ktrace::DEFAULT_EVENTS
TPS="irq_handler_entry irq_handler_exit softirq_entry softirq_exit local_timer_entry
local_timer_exit reschedule_entry reschedule_exit call_function_entry call_function_exit
call_function_single_entry call_function_single_exit irq_work_entry irq_work_exit
x86_platform_ipi_entry x86_platform_ipi_exit nmi_handler sched_switch hrtimer_expire_entry
hrtimer_expire_exit workqueue_execute_start workqueue_execute_end"

dir=$(mktemp -d /tmp/latlab-hook-floor.XXXXXX)
gcc -O2 -Wall -o "$dir/event-cost" "$here/scripts/bpf/event-cost.c" -lpthread
holder="" reflector="" hooks=""
cleanup() {
    exec 3>&- 4>&- 2>/dev/null || true
    for p in $hooks $reflector $holder; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
cd "$dir"
python3 -c 'import os,struct,time; f=os.open("/dev/cpu_dma_latency",os.O_WRONLY); os.write(f,struct.pack("i",0)); time.sleep(86400)' &
holder=$!
echo "# hook floor, $(date -u +%FT%TZ), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $BIN, $ROUNDS rounds of $DUR, idle held at 0"
echo "(files in $dir)"
mkfifo ctl
"$BIN" net reflect --bind 127.0.0.1:7481 --cpu 0 --fifo 50 --until-stdin-closes -q -o nf.json <ctl >/dev/null &
reflector=$!
exec 3>ctl
sleep 1

modes=(off hooks on)
for i in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2; do
        m=${modes[$(((k + i) % 3))]}
        ex=()
        if [ "$m" = hooks ]; then
            mkfifo "hold-$i"
            # shellcheck disable=SC2086
            "$dir/event-cost" hold $TPS <"hold-$i" >"held-$i.txt" &
            hooks=$!
            exec 4>"hold-$i"
            for _ in $(seq 50); do grep -q held "held-$i.txt" 2>/dev/null && break; sleep 0.1; done
            grep -q held "held-$i.txt" || { echo "the hooks were not attached" >&2; exit 1; }
        fi
        [ "$m" = on ] && ex=(--explain --explain-recorder bpf)
        "$BIN" net probe --to 127.0.0.1:7481 --mode pingpong --duration "$DUR" --warmup 1s \
            --tx-cpu 1 --rx-cpu 1 --fifo 40 --timestamps user "${ex[@]}" -q -o "pp-$m-$i.json" \
            >/dev/null 2>"err-$m-$i.txt" || { echo "probe failed ($m $i):" >&2; cat "err-$m-$i.txt" >&2; exit 1; }
        if [ "$m" = hooks ]; then
            exec 4>&-
            wait "$hooks"
            hooks=""
        fi
    done
done
exec 3>&-
wait "$reflector"
reflector=""

LATLAB_BIN=$BIN LATLAB_SCRIPTS=$here/scripts python3 - "$ROUNDS" <<'PY'
import os, statistics, sys
rounds = int(sys.argv[1])
BIN = os.environ["LATLAB_BIN"]

sys.path.insert(0, os.environ["LATLAB_SCRIPTS"])
from pairstats import boot, sign_interval
from pairstats import quantiles as _quantiles

def quantiles(path):
    return _quantiles(BIN, path)

print("\n| round | order | median off / hooks / on | hooks − off | on − off | on − hooks |")
print("|---|---|---|---|---|---|")
modes = ["off", "hooks", "on"]
d = {"hooks": [], "on": [], "on-hooks": []}
for i in range(1, rounds + 1):
    p = {m: quantiles(f"pp-{m}-{i}.json")[0] for m in modes}
    order = ", ".join(modes[(k + i) % 3] for k in range(3))
    d["hooks"].append(p["hooks"] - p["off"])
    d["on"].append(p["on"] - p["off"])
    d["on-hooks"].append(p["on"] - p["hooks"])
    print(f"| {i} | {order} | {p['off']:.2f} / {p['hooks']:.2f} / {p['on']:.2f} µs | "
          f"{d['hooks'][-1]:+.2f} µs | {d['on'][-1]:+.2f} µs | {d['on-hooks'][-1]:+.2f} µs |")
print()
for k, what in (("hooks", "empty hooks − off (the tracepoints' floor)"),
                ("on", "`--explain` − off (what issue 13 bounds by 0.5 µs)"),
                ("on-hooks", "`--explain` − empty hooks (the recorder's own work)")):
    lo, hi, cover = sign_interval(d[k])
    blo, bhi = boot(d[k])
    print(f"- {what}: median **{statistics.median(d[k]):+.2f} µs**, sign-test "
          f"[{lo:+.2f}, {hi:+.2f}] µs (coverage {cover * 100:.1f} %), bootstrap 95 % [{blo:+.2f}, {bhi:+.2f}]")
PY
