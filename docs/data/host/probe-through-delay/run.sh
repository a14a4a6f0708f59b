#!/bin/bash
# latlab net probe (ping-pong) through latlab net delay, 0 vs 20 us alternated in 3
# rounds, on a client <-> delay <-> server namespace testbed built with ip(8) as
# latlab_net::delay::testbed::Testbed::build does (IPv6 off, offloads off, static
# neighbours). Run as root from the repository root: sudo docs/data/host/probe-through-delay/run.sh
# Placement (2 vCPUs): injector on CPU 1 (SCHED_FIFO 50, busy-polling); reflector
# (SCHED_FIFO 50, blocking) and the probe (SCHED_FIFO 40, busy-polling receive) on CPU 0,
# so the reflector preempts the spinning probe and CPU 0 never idles.
# Note: the reflector's stdin is a `sleep 100000`, which is left behind; kill it by its pid.
set -eu
L=${L:-target/debug/latlab}
OUT=${OUT:-.}
# added delays, alternated in every round (0ns must come first: it is the baseline)
DELAYS=${DELAYS:-"0ns 20us"}
C=latlab-p6c; D=latlab-p6d; S=latlab-p6s
CIP=10.198.9.1; SIP=10.198.9.2; XIP=10.198.9.3
cleanup() { for n in $C $D $S; do ip netns del $n 2>/dev/null || true; done; }
trap cleanup EXIT
cleanup
for n in $C $D $S; do ip netns add $n; ip netns exec $n ip link set lo up; done
ip link add p6c netns $C type veth peer name latlab-dc netns $D
ip link add latlab-ds netns $D type veth peer name p6s netns $S
for n in $C $D $S; do ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1; done
for x in "$C p6c" "$D latlab-dc" "$D latlab-ds" "$S p6s"; do
  set -- $x; ip -n $1 link set $2 up
  ip netns exec $1 ethtool -K $2 tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
done
ip -n $C addr add $CIP/24 dev p6c; ip -n $S addr add $SIP/24 dev p6s
ip -n $C neigh replace $SIP lladdr $(ip -n $S -o link show p6s | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2) dev p6c
ip -n $S neigh replace $CIP lladdr $(ip -n $C -o link show p6c | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2) dev p6s
if [ "${SERVER:-reflector}" = kernel ]; then
  # SERVER=kernel: no server process. The probe goes to XIP, which the server namespace
  # forwards straight back out of p6s (in the injector's send, on CPU 1), so no thread
  # is woken anywhere; the client receives it on a second socket bound to XIP. The client
  # sends XIP out of p6c (rule 100 ahead of the moved local table) and accepts it back.
  ip -n $C addr add $XIP/32 dev lo
  ip -n $C rule add pref 100 iif lo to $XIP lookup 100
  ip -n $C rule add pref 1000 lookup local
  ip -n $C rule del pref 0
  ip -n $C route add $XIP/32 dev p6c table 100
  ip -n $C neigh replace $XIP lladdr $(ip -n $S -o link show p6s | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2) dev p6c
  for k in all.rp_filter p6c.rp_filter; do ip netns exec $C sysctl -qw net.ipv4.conf.$k=0; done
  ip netns exec $C sysctl -qw net.ipv4.conf.p6c.accept_local=1
  ip netns exec $S sysctl -qw net.ipv4.ip_forward=1
  for k in all.send_redirects p6s.send_redirects all.rp_filter p6s.rp_filter; do ip netns exec $S sysctl -qw net.ipv4.conf.$k=0; done
  ip -n $S route add $XIP/32 dev p6s
  ip -n $S neigh replace $XIP lladdr $(ip -n $C -o link show p6c | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2) dev p6s
  TO=$XIP:7000; RXB="--rx-bind $XIP:7000"; REF=
else
  # the reflector (server) on CPU 0, blocking, SCHED_FIFO 50
  ip netns exec $S $L net reflect --bind $SIP:7000 --cpu 0 --fifo 50 --until-stdin-closes -q -o $OUT/reflect.json < <(sleep 100000) &
  REF=$!
  sleep 1
  TO=$SIP:7000; RXB=
fi
for round in 1 2 3; do
  for d in $DELAYS; do
    tag=$([ $d = 0ns ] && echo zero || echo d${d%us})
    $L net delay --netns $D --ifaces latlab-dc,latlab-ds --delay $d --direction ${DIRECTION:-a-to-b} \
       --cpu 1 --fifo 50 --duration 7s -q -o $OUT/delay-$tag-$round.json &
    DEL=$!
    sleep 1
    ip netns exec $C $L net probe --to $TO $RXB --mode pingpong --duration 4s --warmup 1s \
       --timestamps user --tx-cpu 0 --rx-cpu 0 --fifo 40 --rx-io busy -q -o $OUT/probe-$tag-$round.json
    wait $DEL
  done
done
[ -n "$REF" ] && kill $REF 2>/dev/null || true
wait || true
