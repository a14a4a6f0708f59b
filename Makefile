# latlab — the two commands a new user runs:
#   make demo   install what is missing, build, run the default experiment, print where the results are
#   make test   install what the tests need, then fmt, clippy and the whole test suite
SHELL := /bin/bash
CARGO ?= cargo
# fonts for PNG figures (plotters lays text out with a TrueType font)
DEMO_PACKAGES := fonts-dejavu-core
TEST_PACKAGES := fonts-dejavu-core
# headless Chromium for the HTML report's browser test
TEST_PACKAGES += chromium
# latlab sched: cyclictest for scripts/sched-vs-cyclictest.sh (the LAT comparison)
TEST_PACKAGES += rt-tests
DEMO_PACKAGES += rt-tests
# latlab dfs run/bench: Open MPI, and libclang for rsmpi's bindgen (crate mpi-sys)
DEMO_PACKAGES += openmpi-bin libopenmpi-dev libclang-dev pkgconf
TEST_PACKAGES += openmpi-bin libopenmpi-dev libclang-dev pkgconf
# latlab dfs run/bench --transport ofi (default feature `ofi`): libfabric 1.17 headers and
# library, found through pkgconf; its tcp;ofi_rxm, sockets and shm providers run on any host
DEMO_PACKAGES += libfabric-dev
TEST_PACKAGES += libfabric-dev
# latlab net: namespaces and veth pairs through iproute2; sockperf for the ping-pong benchmark
TEST_PACKAGES += sockperf
# latlab explain: Debian's trace-cmd reads and decodes the reference instance the recorder is
# compared with (crates/cli/tests/it/kernel_truth.rs)
TEST_PACKAGES += trace-cmd
# pahole (Debian dwarves) reads the kernel's BTF independently: the sys test of
# latlab_sys::btf compares task_struct's offsets with it
TEST_PACKAGES += dwarves
# host breakdown, net delay and the where-time experiment: namespaces, offload control,
# real servers and benchmark clients (memcaslap is in libmemcached-tools; postgresql brings
# postgres, initdb and pgbench under /usr/lib/postgresql/<version>/bin)
DEMO_PACKAGES += iproute2 ethtool memcached libmemcached-tools nginx-light wrk postgresql
TEST_PACKAGES += iproute2 ethtool memcached libmemcached-tools nginx-light wrk postgresql
# latlab net forward --engine testpmd: DPDK's testpmd (in dpdk-dev, not in the runtime package
# dpdk) and its AF_PACKET and AF_XDP poll-mode drivers for the testbed's veths; trafgen
# (netsniff-ng) and xdp-trafficgen (xdp-tools) for scripts/pps-peers.sh
TEST_PACKAGES += dpdk-dev librte-net-af-packet23 librte-net-af-xdp23
# killer-us's rung 'testpmd (DPDK, busy)'
DEMO_PACKAGES += dpdk-dev librte-net-af-packet23
PEER_PACKAGES := dpdk-dev librte-net-af-packet23 netsniff-ng xdp-tools
DEMO_DIR ?= latlab-results/demo
# pin the demo's reader to the last CPU (CPU 0 usually takes more interrupts)
DEMO_CPU := $(shell echo $$(( $$(nproc) - 1 )))

.PHONY: demo test build deps-demo deps-test fmt-check clippy cycles unit bench bench-pingpong bench-pps bench-xdp doc clean

# The default experiment: How to Measure the Killer Microsecond on this host (every
# measurement method against the NF configuration ladder, on the namespace testbed as root,
# on loopback otherwise), with its HTML report. It first checks which CPUs are quiet and the
# highest rate the generator keeps on this host, and says what it chose; about 4-5 minutes.
demo: deps-demo build
	./target/release/latlab experiment killer-us --quick -o $(DEMO_DIR)/killer-us
	@echo
	@echo "demo results in $(DEMO_DIR)/killer-us/:"
	@echo "  HTML report:   $(DEMO_DIR)/killer-us/report.html  (open it in a browser; works offline)"
	@echo "  summary:       $(DEMO_DIR)/killer-us/summary.md"
	@echo "  result files:  $(DEMO_DIR)/killer-us/*.json  (latlab show / latlab compare / latlab check)"

build:
	$(CARGO) build --release --locked

deps-demo:
	@scripts/ensure-packages.sh $(DEMO_PACKAGES)

deps-test:
	@scripts/ensure-packages.sh $(TEST_PACKAGES)
	@scripts/ensure-rust-components.sh

test: deps-test fmt-check clippy cycles unit

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

# No import cycle between the modules of one crate (a child importing its parent counts).
cycles:
	@for src in crates/*/src; do python3 scripts/module-cycles.py $$src > /dev/null || { python3 scripts/module-cycles.py $$src; exit 1; }; done; echo "module cycles: none"

unit:
	$(CARGO) test --workspace --locked --no-fail-fast

# Criterion benchmarks of the hot path (figures in docs/benchmarks.md).
bench:
	$(CARGO) bench -p latlab-core --bench record -- --warm-up-time 1 --measurement-time 5
	taskset -c $(DEMO_CPU) $(CARGO) bench -p latlab-sys --bench tsc -- --warm-up-time 1 --measurement-time 4

# latlab net: packets per second of latlab's generator beside trafgen and xdp-trafficgen, and
# testpmd's forwarding rate beside latlab's forwarder (figures in docs/benchmarks.md)
bench-pps: build
	@scripts/ensure-packages.sh $(PEER_PACKAGES)
	scripts/pps-peers.sh

# AF_XDP figures: generator ceiling (busy, xdp, trafgen), 1 Mpps x 10 s through
# the AF_XDP forwarder, calibrate --io xdp (about 2-3 minutes; trafgen is netsniff-ng's)
bench-xdp: build
	@scripts/ensure-packages.sh netsniff-ng
	flock /tmp/latlab-testbed.lock scripts/xdp-bench.sh

# latlab net: ping-pong RTT beside sockperf on loopback (figures in docs/benchmarks.md)
bench-pingpong: build
	@scripts/ensure-packages.sh sockperf
	scripts/pingpong-vs-sockperf.sh 7 5

doc:
	$(CARGO) doc --workspace --no-deps

clean:
	$(CARGO) clean
