//! Command-line definitions of `latlab net …` and `latlab experiment killer-us`.

pub use super::common::ArrivalsArg;
use super::common::{
    ci_target_arg, duration_arg, positive_duration_arg, DirectionArg, NetExplainArgs, OutputArgs,
};
use crate::exit::usage;
use clap::{Args, Subcommand, ValueEnum};
use latlab_core::hist::HistConfig;
use latlab_core::parse::{parse_rate, Rate};
use latlab_core::units::Nanos;
use latlab_net::calibrate::CalibrateConfig;
use latlab_net::killer_us::{KillerUsAsk, KillerUsConfig};
use latlab_net::nf::{Directions, IoMode, NfConfig, Role};
use latlab_net::probe::{Mode, ProbeConfig};
use latlab_net::run::{NfJob, ProbeJob};
use std::net::SocketAddr;
use std::path::PathBuf;

fn rate_arg(s: &str) -> Result<Rate, String> {
    parse_rate(s).map_err(|e| e.to_string())
}

fn delay_arg(s: &str) -> Result<latlab_net::nf::DelaySpec, String> {
    latlab_net::nf::DelaySpec::parse(s)
}

/// `--timestamps`: the sources, and whether they were asked for as `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimestampsArg {
    /// The sources.
    pub sources: latlab_net::probe::Sources,
    /// Given as `all` (hardware then optional).
    pub all: bool,
}

fn sources_arg(s: &str) -> Result<TimestampsArg, String> {
    Ok(TimestampsArg {
        sources: latlab_net::probe::Sources::parse(s)?,
        all: s.split(',').any(|p| p.trim() == "all"),
    })
}

/// A comma-separated CPU list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<u32>);

fn cpu_list_arg(s: &str) -> Result<CpuList, String> {
    s.split(',')
        .map(|c| {
            c.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{s}' is not a CPU list; expected e.g. 1 or 0,1"))
        })
        .collect::<Result<Vec<u32>, String>>()
        .map(CpuList)
}

/// `latlab net …`
#[derive(Debug, Subcommand)]
pub enum NetCommand {
    /// Network function: return each probe to its sender, writing its residence time
    /// into the probe.
    #[command(after_help = "Examples:
  latlab net reflect --bind 127.0.0.1:7000
  latlab net reflect --io busy --cpu 1 --fifo 50 --duration 60s -o nf.json
  latlab net reflect --delay 10us                       (known added delay, for calibration)
  latlab net reflect --delay exp:20us --io busy
  latlab net reflect --io busy --cpu 1 --explain        (why the busy thread lost its CPU)

Only datagrams with the probe's magic and version are answered, never with more bytes
than they had; everything else is counted by reason (malformed_* counters).")]
    Reflect(ReflectArgs),
    /// Network function: the paper's port forwarder. Probes received on port A go to the
    /// next hop of B out of port B, and the other way round, each direction on its own
    /// thread.
    #[command(after_help = "Examples:
  latlab net forward --testbed --io busy --cpu 0      (inside the testbed's NF namespace)
  latlab net forward --a 10.0.0.2:7000 --a-to 10.0.1.1:7001 --b 10.0.1.2:7000 --b-to 10.0.0.1:7001
  latlab net forward --testbed --direction a-to-b --delay 10us
  latlab net forward --testbed --generator 1          (the forwarder of generator namespace latlab-gen1)")]
    Forward(ForwardArgs),
    /// Generator and receiver: open-loop probes at a rate (or ping-pong), latency from
    /// the scheduled and the actual send, with user, kernel and hardware timestamps.
    #[command(after_help = "Examples:
  latlab net probe --to 127.0.0.1:7000 --rate 10kpps --duration 10s
  latlab net probe --testbed --rate 100kpps --duration 120s --warmup 30s --tx-cpu 1 --rx-cpu 1
  latlab net probe --to 127.0.0.1:7000 --mode pingpong --duration 5s
  latlab net probe --to 10.0.0.2:7000 --timestamps all --arrivals poisson --flows 4 --plot
  latlab net probe --to 127.0.0.1:7000 --ci-width p99:5us --duration 60s --interval 500ms
  latlab net probe --testbed --rate 20kpps --explain            (why the samples above p99 were slow)
  latlab net probe --to 127.0.0.1:7000 --explain-above 50us
  mpirun -n 3 latlab net probe --agents --testbed --rate 20kpps --arrivals poisson
                                  (rank 0 coordinates; ranks 1 and 2 generate from latlab-gen, latlab-gen1)

Latency from the scheduled send time (user.sched) includes the generator's own lateness
(generator.lateness); user.actual starts at the send call. With kernel timestamps each
probe is split into segment.* histograms that add up to segment.end_to_end.
A run ends at --warmup + --duration (+100 ms) whatever the rate, then waits --drain for the
last answers: a generator slower than --rate stops there and counts the rest of its
schedule as unsent (scheduled = sent + send_errors + unsent).
Self-checks (throughput, schedule, arrivals, independence, stationarity, and the --ci-width rule)
are judged after the run and stored in the result; a failed one says which and why.")]
    Probe(ProbeArgs),
    /// Build, remove or inspect the namespace testbed (generator ⇄ NF over veth pairs).
    #[command(after_help = "Examples:
  sudo latlab net testbed up
  sudo latlab net testbed up --generators 2        (two generator namespaces, for --agents)
  latlab net testbed status
  sudo latlab net testbed down

Layout: namespace latlab-gen (latlab-ga 10.201.1.1, latlab-gb 10.201.2.1) and namespace
latlab-nf (latlab-na 10.201.1.2, latlab-nb 10.201.2.2); NF ports UDP 7000, receiver 7001.")]
    Testbed(TestbedArgs),
    /// Run the forwarder with known added delays and report, per timestamp source and
    /// percentile, the measured shift against the injected one.
    #[command(after_help = "Examples:
  sudo latlab net calibrate
  sudo latlab net calibrate --delays 0ns,10us,50us --duration 10s --rate 20kpps
  latlab net calibrate --loopback                    (no testbed: reflector on loopback)
  sudo latlab net calibrate --explain                (p99 error with and without guest stalls)
  sudo latlab net calibrate --io xdp --no-rt-throttle  (the AF_XDP path: NF and generator)")]
    Calibrate(CalibrateArgs),

    /// A latency injector: a bump in the wire between two interfaces that forwards every
    /// frame, both directions, after an added delay (constant or from a distribution),
    /// keeping order and counting every drop.
    #[command(after_help = "Examples:
  latlab net delay --ifaces veth-a,veth-b --delay 20us --cpu 1
  latlab net delay --ifaces eth1,eth2 --delay normal:50us,5us --duration 60s
  latlab net delay --netns latlab-d --ifaces latlab-dc,latlab-ds --delay 100us --direction a-to-b
  latlab net delay --testbed --delay 20us          (verify on this host: shift and base latency)
  latlab net delay --testbed --delay 20us --compare-netem

The element busy-polls AF_PACKET sockets on one pinned CPU (needs root). Frames are held
for the delay in a bounded queue per direction (--capacity): when delay x rate exceeds
it, frames are dropped and counted. It runs until --duration or Ctrl-C, then writes its
result (base latency, counters). --testbed builds client/delay/server namespaces itself
and measures UDP round trips at 0 and at --delay (applied client to server only).")]
    Delay(super::net_delay::DelayArgs),
    /// Open-loop requests against a real server — memcached (ASCII over TCP or UDP, get/set
    /// mix) or HTTP/1.1 keep-alive GET — with latency from each request's scheduled send
    /// time (no coordinated omission).
    #[command(after_help = "Examples:
  latlab net load --target memcached://127.0.0.1:11211 --rate 20krps --duration 30s
  latlab net load --target memcached+udp://127.0.0.1:11211 --get-ratio 0.5 --value-size 16-512
  latlab net load --target http://127.0.0.1:8080/ --rate 5krps --connections 16 --pipeline 1
  latlab net load --netns latlab-wtc --target memcached://10.203.2.2:11211 --arrivals poisson
  latlab net load --serve memcached --serve-cpu 0 --rate 15krps -d 30s      (latlab runs memcached)
  latlab net load --serve nginx --serve-cpu 0 --rate 4krps -c 4 --pipeline 4

Requests go out on an absolute schedule (constant or seeded Poisson) to the next connection
with fewer than --pipeline requests outstanding. A request that falls due while every
connection is full is sent as soon as one frees and counted as late; its latency is still
taken from its scheduled time (request.sched; request.actual starts at the send). Every
request is accounted for: scheduled = sent + unsent, sent = answered + errors + timed_out
+ lost + unanswered. The run ends at --warmup + --duration (+100 ms) whatever the rate, then
waits up to --drain for the answers still outstanding: what the schedule held and no
connection could take by then is unsent. A target that refuses the connection exits with 2.

--serve starts the server itself (memcached with one thread, or nginx with one worker
serving a 704-byte page) listening on --target's address (default memcached://127.0.0.1:21211
or http://127.0.0.1:28080/), pinned to --serve-cpu and inside --serve-netns when given, and
stops it (SIGTERM, SIGKILL after 10 s) before the result is written; the result records it.
Ctrl-C or SIGTERM mid-run stops it too and ends with 128 + the signal, writing no result.
A server program that is not installed exits with 2, naming its Debian package.")]
    Load(super::net_load::LoadArgs),
}

/// `--no-rt-throttle` of the commands whose threads may spin under `SCHED_FIFO`.
#[derive(Debug, Args)]
pub struct RtThrottleArgs {
    /// Switch real-time throttling off for this run (kernel.sched_rt_runtime_us = -1) and
    /// restore it after: a SCHED_FIFO thread that spins is otherwise stopped ~50 ms every
    /// second. Needs root; pin the spinning threads (they can starve their CPU meanwhile).
    #[arg(long)]
    pub no_rt_throttle: bool,
}

/// Common options of the network functions.
#[derive(Debug, Args)]
pub struct NfArgs {
    /// I/O mode: blocking receive (as netperf), busy polling with recvmmsg/sendmmsg
    /// and SO_BUSY_POLL, or xdp: kernel bypass over AF_XDP sockets on the interfaces of
    /// the NF's addresses (needs root and native XDP, e.g. the testbed's veths).
    #[arg(long, value_enum, default_value_t = IoArg::Blocking)]
    pub io: IoArg,
    /// CPUs for the NF threads, comma separated (thread order A→B, B→A; one CPU pins all).
    #[arg(long, value_parser = cpu_list_arg)]
    pub cpu: Option<CpuList>,
    /// SCHED_FIFO priority of the NF threads (needs root or CAP_SYS_NICE).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,
    #[command(flatten)]
    pub rt: RtThrottleArgs,
    /// Added processing time per probe, busy-waited on the TSC: 10us, exp:10us,
    /// uniform:5us-15us.
    #[arg(long, default_value = "0", value_parser = delay_arg)]
    pub delay: latlab_net::nf::DelaySpec,
    /// Datagrams per recvmmsg/sendmmsg call in busy mode.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub batch: u32,
    /// SO_BUSY_POLL in µs for busy mode (0 leaves it unset).
    #[arg(long, default_value_t = 50)]
    pub busy_poll: u32,
    /// Stop after this long (default: run until Ctrl-C or SIGTERM, or until stdin closes
    /// with --until-stdin-closes); every way writes the result.
    #[arg(long, value_parser = positive_duration_arg)]
    pub duration: Option<Nanos>,
    /// Stop when standard input reaches end of file (for orchestration), then write the
    /// result.
    #[arg(long)]
    pub until_stdin_closes: bool,
    #[command(flatten)]
    pub explain: NetExplainArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub idle: super::common::IdleArgs,
    #[command(flatten)]
    pub isolate: super::common::IsolateArg,
}

/// I/O mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IoArg {
    /// Blocking receive, one datagram per call.
    Blocking,
    /// Busy polling with batches.
    Busy,
    /// Kernel bypass: AF_XDP sockets, busy-polled rings.
    Xdp,
}

/// Options of `latlab net reflect`.
#[derive(Debug, Args)]
pub struct ReflectArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:7000")]
    pub bind: SocketAddr,
    #[command(flatten)]
    pub nf: NfArgs,
}

/// Options of `latlab net forward`.
#[derive(Debug, Args)]
pub struct ForwardArgs {
    /// Use the testbed's addresses (run inside namespace latlab-nf).
    #[arg(long, conflicts_with_all = ["a", "a_to", "b", "b_to"])]
    pub testbed: bool,
    /// With --testbed: the generator this forwarder serves (0 is latlab-gen, j is
    /// latlab-gen{j} of `latlab net testbed up --generators N`).
    #[arg(long, default_value_t = 0, requires = "testbed", value_parser = clap::value_parser!(u16).range(0..64))]
    pub generator: u16,
    /// Port A: address to listen on.
    #[arg(long)]
    pub a: Option<SocketAddr>,
    /// Next hop of probes received on A (sent out of B).
    #[arg(long)]
    pub a_to: Option<SocketAddr>,
    /// Port B: address to listen on.
    #[arg(long)]
    pub b: Option<SocketAddr>,
    /// Next hop of probes received on B (sent out of A).
    #[arg(long)]
    pub b_to: Option<SocketAddr>,
    /// Directions to run.
    #[arg(long, value_enum, default_value_t = DirectionArg::Both)]
    pub direction: DirectionArg,
    /// Which forwarder: latlab's own over sockets, or DPDK's dpdk-testpmd on the testbed's
    /// veths (needs --testbed and root; probes then go from latlab-ga to 10.201.2.1:7001,
    /// see docs/net.md).
    #[arg(long, value_enum, default_value_t = EngineArg::Latlab)]
    pub engine: EngineArg,
    /// DPDK poll-mode driver of --engine testpmd.
    #[arg(long, value_enum, default_value_t = PmdArg::AfPacket)]
    pub pmd: PmdArg,
    #[command(flatten)]
    pub nf: NfArgs,
}

impl ForwardArgs {
    /// The name of `--pmd`.
    pub fn pmd_name(&self) -> &'static str {
        latlab_net::testpmd::Pmd::from(self.pmd).name()
    }
}

/// The forwarder of `latlab net forward`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// latlab's forwarder over UDP sockets.
    Latlab,
    /// DPDK's dpdk-testpmd in MAC-forwarding mode (one busy lcore).
    Testpmd,
}

/// DPDK poll-mode driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PmdArg {
    /// net_af_packet: a PACKET_MMAP ring per veth.
    AfPacket,
    /// net_af_xdp: an AF_XDP socket per veth (copy mode on veth).
    AfXdp,
}

impl From<PmdArg> for latlab_net::testpmd::Pmd {
    fn from(p: PmdArg) -> Self {
        match p {
            PmdArg::AfPacket => latlab_net::testpmd::Pmd::AfPacket,
            PmdArg::AfXdp => latlab_net::testpmd::Pmd::AfXdp,
        }
    }
}

/// Probe mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Open loop at --rate.
    Open,
    /// Closed loop, one probe in flight.
    Pingpong,
}

/// Options of `latlab net probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Where probes go (a reflector or forwarder port).
    #[arg(long)]
    pub to: Option<SocketAddr>,
    /// Use the testbed: send from latlab-ga to the forwarder, receive on latlab-gb (runs
    /// itself inside namespace latlab-gen).
    #[arg(long, conflicts_with_all = ["to", "bind", "rx_bind"])]
    pub testbed: bool,
    /// Generate from many agents under mpirun: rank 0 coordinates, ranks 1..K-1 split
    /// --rate and --flows among them (with --testbed: rank i probes from generator
    /// namespace i-1 of `latlab net testbed up --generators K-1`). Open loop only.
    #[arg(long)]
    pub agents: bool,
    /// Local address of the TX socket.
    #[arg(long)]
    pub bind: Option<SocketAddr>,
    /// Receive on a separate socket at this address (where a forwarder delivers);
    /// default: answers come back to the TX socket (reflector).
    #[arg(long)]
    pub rx_bind: Option<SocketAddr>,
    /// Send only out of this interface (`SO_BINDTODEVICE`), whatever the routing rules
    /// say: through testpmd, `--tx-device latlab-ga` keeps a probe to the generator's own
    /// port-B address off the loopback path.
    #[arg(long, value_name = "IFACE", conflicts_with = "testbed")]
    pub tx_device: Option<String>,
    /// Open loop or ping-pong.
    #[arg(long, value_enum, default_value_t = ModeArg::Open)]
    pub mode: ModeArg,
    /// Send rate (open loop): 10kpps, 1.5Mpps, 100Mbps.
    #[arg(long, default_value = "10kpps", value_parser = rate_arg)]
    pub rate: Rate,
    /// Arrival process (open loop).
    #[arg(long, value_enum, default_value_t = ArrivalsArg::Constant)]
    pub arrivals: ArrivalsArg,
    /// Number of flows (probes go round-robin over them; per-flow histograms). Default: 1,
    /// with --agents one per agent (an explicit --flows must be at least the agents).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub flows: Option<u16>,
    /// Ethernet frame size in bytes, without FCS (64..=1514).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Measured duration.
    #[arg(long, short = 'd', default_value = "5s", value_parser = positive_duration_arg)]
    pub duration: Nanos,
    /// Warm-up before the measured phase (sent and counted, not recorded).
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub warmup: Nanos,
    /// How long to wait for answers after the last send.
    #[arg(long, default_value = "200ms", value_parser = duration_arg)]
    pub drain: Nanos,
    /// Timestamp sources: user, kernel, hardware, comma separated, or all (all continues
    /// without hardware when the interface cannot; naming hardware fails instead).
    #[arg(long, default_value = "user,kernel", value_parser = sources_arg)]
    pub timestamps: TimestampsArg,
    /// Send and receive path together: blocking (sockets, blocking receive), busy
    /// (sockets, busy-polled receive) or xdp (AF_XDP sockets for both, latlab's own
    /// Ethernet/IPv4/UDP headers, user timestamps only; needs root and native XDP).
    #[arg(long, value_enum, default_value_t = IoArg::Blocking)]
    pub io: IoArg,
    /// Override of the receive path alone (default: what --io says).
    #[arg(long, value_enum)]
    pub rx_io: Option<IoArg>,
    /// Pin the TX thread to this CPU.
    #[arg(long)]
    pub tx_cpu: Option<u32>,
    /// Pin the RX thread to this CPU.
    #[arg(long)]
    pub rx_cpu: Option<u32>,
    /// SCHED_FIFO priority of the TX and RX threads.
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,
    #[command(flatten)]
    pub rt: RtThrottleArgs,
    /// Interval of the time series (interval log).
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub interval: Nanos,
    /// Seed of the Poisson schedule.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop rule (open loop): at the end of each measured --interval, stop once the 95 %
    /// confidence interval of the percentile (of user.sched) is no wider than WIDTH, e.g.
    /// p99:5us; --duration is then the maximum, and the result says which ended the run.
    #[arg(long, value_name = "pNN:WIDTH", value_parser = ci_target_arg)]
    pub ci_width: Option<latlab_core::selfcheck::CiTarget>,
    /// Significant digits of the histograms (1-5).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=5))]
    pub sigfig: u8,
    /// The network function's configuration as JSON, recorded in the result (orchestrators
    /// such as calibrate and killer-us record theirs through the child job instead).
    #[arg(long, hide = true)]
    pub nf_config: Option<String>,
    /// Also draw the CCDF of the sources; FILE defaults to the result's name with .svg.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub plot: Option<Option<PathBuf>>,
    #[command(flatten)]
    pub explain: NetExplainArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub idle: super::common::IdleArgs,
    #[command(flatten)]
    pub isolate: super::common::IsolateArg,
}

/// Testbed action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TestbedAction {
    /// Build it (idempotent).
    Up,
    /// Remove everything it made.
    Down,
    /// Show what exists.
    Status,
}

/// Options of `latlab net testbed`.
#[derive(Debug, Args)]
pub struct TestbedArgs {
    /// What to do.
    #[arg(value_enum)]
    pub action: TestbedAction,
    /// `up`: generator namespaces, each with its own veth pairs into the NF (one per agent
    /// of `latlab net probe --agents`); 1 is the classic testbed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub generators: u16,
}

/// Options of `latlab net calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Added delays to inject, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0ns,10us,50us", value_parser = duration_arg)]
    pub delays: Vec<Nanos>,
    /// Measured duration per delay.
    #[arg(long, short = 'd', default_value = "5s", value_parser = positive_duration_arg)]
    pub duration: Nanos,
    /// Warm-up per delay.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub warmup: Nanos,
    /// Probe rate.
    #[arg(long, default_value = "10kpps", value_parser = rate_arg)]
    pub rate: Rate,
    /// NF I/O mode (busy spins under SCHED_FIFO: real-time throttling stops it ~50 ms
    /// every second unless kernel.sched_rt_runtime_us is -1). xdp: the NF and the
    /// generator both over AF_XDP, user (TSC) timestamps only.
    #[arg(long, value_enum, default_value_t = IoArg::Blocking)]
    pub io: IoArg,
    /// Switch real-time throttling off for the whole calibration (kernel.sched_rt_runtime_us
    /// = -1) and restore it after; needs root. Use it with `--io busy` or `--io xdp`.
    #[arg(long)]
    pub no_rt_throttle: bool,
    /// Rounds over all delays; histograms of a delay are merged over rounds.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Use a reflector on loopback instead of the testbed (no root needed).
    #[arg(long)]
    pub loopback: bool,
    /// Directory for the result files (default latlab-results/calibrate-<time>/).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub explain: NetExplainArgs,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub idle: super::common::IdleArgs,
    /// Leave the CPUs' idle policy as it is. By default, as root, a calibration holds
    /// /dev/cpu_dma_latency at 0 µs (as cyclictest does): it measures the instrument, and
    /// an idle vCPU that halts between probes adds its wake-up to every delay it checks.
    #[arg(long, conflicts_with = "dma_latency")]
    pub idle_as_is: bool,
}

impl CalibrateArgs {
    /// The `/dev/cpu_dma_latency` target to hold for the calibration: `--dma-latency`,
    /// else 0 µs as root unless `--idle-as-is`; none without root (the hold needs it).
    pub fn dma_latency(&self, root: bool) -> Option<u32> {
        self.idle.for_check(root, self.idle_as_is)
    }
}

/// Options of `latlab experiment killer-us`.
#[derive(Debug, Args)]
pub struct KillerUsArgs {
    /// The whole experiment within 2 minutes: runs of up to 5 s (up to 20 s where the
    /// chosen rate needs it for p99.99 and the budget allows), shortened so that every
    /// run fits; a run whose generator fell behind is repeated only while time is left.
    #[arg(long)]
    pub quick: bool,
    /// Measured duration per run (default: --quick's budget decides; 60 s otherwise).
    #[arg(long, short = 'd', value_parser = positive_duration_arg)]
    pub duration: Option<Nanos>,
    /// Probe rate. Without it the experiment tries 20, 10, 5, 2 and 1 kpps before the
    /// ladder and runs at the highest rate at which the generator keeps its schedule here.
    #[arg(long, value_parser = rate_arg)]
    pub rate: Option<Rate>,
    /// Use a reflector on loopback instead of the testbed (no root needed; no one-way
    /// path, the NF shares the host stack with the generator).
    #[arg(long)]
    pub loopback: bool,
    /// Output directory (default latlab-results/killer-us-<time>/).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Do not attribute each run's tail (by default, as root, every probe records kernel
    /// events and the summary says how much of each tail lay outside the kernel).
    #[arg(long)]
    pub no_explain: bool,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub idle: super::common::IdleArgs,
}

/// Bytes of a default probe on the wire: a 64-byte frame and its 4-byte FCS (what a
/// bit rate given to `--rate` is divided by).
const PROBE_WIRE_BYTES: u64 = 68;

/// `--rate` in thousandths of packets per second, for packets of `wire_bytes`.
fn milli_pps(rate: &Rate, wire_bytes: u64) -> anyhow::Result<u64> {
    rate.milli_pps(Some(wire_bytes))
        .map_err(|e| usage(format!("--rate: {e}")))
}

impl From<IoArg> for IoMode {
    fn from(a: IoArg) -> IoMode {
        match a {
            IoArg::Blocking => IoMode::Blocking,
            IoArg::Busy => IoMode::Busy,
            IoArg::Xdp => IoMode::Xdp,
        }
    }
}

impl NfArgs {
    /// The NF run these options describe, for `role`.
    pub fn job(&self, role: Role) -> NfJob {
        NfJob {
            nf: NfConfig {
                role,
                io: self.io.into(),
                cpus: self.cpu.clone().map(|c| c.0).unwrap_or_default(),
                fifo: self.fifo,
                delay: self.delay,
                batch: self.batch as usize,
                busy_poll_us: self.busy_poll,
            },
            duration: self.duration,
            until_stdin_closes: self.until_stdin_closes,
            explain: self.explain.spec(),
        }
    }
}

impl TryFrom<&ForwardArgs> for Role {
    type Error = anyhow::Error;

    fn try_from(a: &ForwardArgs) -> anyhow::Result<Role> {
        let directions = match a.direction {
            DirectionArg::Both => Directions::Both,
            DirectionArg::AToB => Directions::AToB,
            DirectionArg::BToA => Directions::BToA,
        };
        if a.testbed {
            return Ok(latlab_net::testbed::forward_role_of(
                usize::from(a.generator),
                directions,
            ));
        }
        let need = |v: Option<SocketAddr>, f: &str| {
            v.ok_or_else(|| usage(format!("{f} is required (or --testbed)")))
        };
        Ok(Role::Forward {
            a: need(a.a, "--a")?,
            a_to: need(a.a_to, "--a-to")?,
            b: need(a.b, "--b")?,
            b_to: need(a.b_to, "--b-to")?,
            directions,
        })
    }
}

impl TryFrom<&ProbeArgs> for ProbeJob {
    type Error = anyhow::Error;

    /// [`ProbeArgs::job`] of a run from one generator.
    fn try_from(a: &ProbeArgs) -> anyhow::Result<ProbeJob> {
        a.job(None)
    }
}

impl ProbeArgs {
    /// Resolves the options into the probe's configuration, for a run from one generator
    /// (`agents` `None`) or from that many agents, and checks it with
    /// [`ProbeConfig::validate`] (the library's one set of checks), so that a bad value is
    /// a usage error before anything runs. Without --flows a run has one flow per agent
    /// (one flow from one generator); a --flows given is kept as it is, for the split to
    /// refuse when it is fewer than the agents.
    pub fn job(&self, agents: Option<usize>) -> anyhow::Result<ProbeJob> {
        let a = self;
        let mut cfg = if a.testbed {
            latlab_net::testbed::probe_config()
        } else {
            let to =
                a.to.ok_or_else(|| usage("--to is required (or --testbed)"))?;
            let mut c = ProbeConfig::new(to);
            if let Some(b) = a.bind {
                c.tx_bind = b;
            }
            c.rx_bind = a.rx_bind;
            c.tx_device.clone_from(&a.tx_device);
            c
        };
        cfg.mode = match a.mode {
            ModeArg::Open => Mode::OpenLoop,
            ModeArg::Pingpong => Mode::Pingpong,
        };
        cfg.milli_pps = milli_pps(&a.rate, a.size as u64 + 4)?;
        cfg.arrivals = a.arrivals.into();
        cfg.flows = match a.flows {
            Some(f) => f,
            None => u16::try_from(agents.unwrap_or(1).max(1)).unwrap_or(u16::MAX),
        };
        cfg.frame = a.size;
        cfg.duration = a.duration;
        cfg.warmup = a.warmup;
        cfg.drain = a.drain;
        cfg.sources = a.timestamps.sources;
        // `all` means every source this host can give; naming `hardware` insists on it
        cfg.hardware_optional = a.timestamps.all;
        cfg.tx_io = a.io.into();
        cfg.rx_io = a.rx_io.unwrap_or(a.io).into();
        cfg.tx_cpu = a.tx_cpu;
        cfg.rx_cpu = a.rx_cpu;
        cfg.fifo = a.fifo;
        cfg.interval = a.interval;
        cfg.seed = a.seed;
        cfg.ci_width = a.ci_width;
        cfg.explain = a.explain.spec();
        cfg.hist = HistConfig {
            sigfig: a.sigfig,
            ..cfg.hist
        };
        let nf = match &a.nf_config {
            Some(s) => Some(
                serde_json::from_str::<serde_json::Value>(s)
                    .map_err(|e| usage(format!("--nf-config: not JSON: {e}")))?,
            ),
            None => None,
        };
        let cfg = cfg.validated().map_err(|e| usage(e.to_string()))?;
        Ok(ProbeJob {
            nf,
            ..ProbeJob::new(cfg)
        })
    }
}

impl TryFrom<&CalibrateArgs> for CalibrateConfig {
    type Error = anyhow::Error;

    fn try_from(a: &CalibrateArgs) -> anyhow::Result<CalibrateConfig> {
        Ok(CalibrateConfig {
            delays: a.delays.clone(),
            duration: a.duration,
            warmup: a.warmup,
            milli_pps: milli_pps(&a.rate, PROBE_WIRE_BYTES)?,
            nf_io: a.io.into(),
            loopback: a.loopback,
            rounds: a.rounds,
            quiet: a.quiet,
            explain: a.explain.spec(),
        })
    }
}

impl TryFrom<&KillerUsArgs> for KillerUsConfig {
    type Error = anyhow::Error;

    /// Resolves the options with the experiment's defaults
    /// ([`KillerUsConfig::resolve`]); without root the experiment runs on loopback, and the
    /// configuration's notes say what that loses.
    fn try_from(a: &KillerUsArgs) -> anyhow::Result<KillerUsConfig> {
        let ask = KillerUsAsk {
            quick: a.quick,
            duration: a.duration,
            milli_pps: a
                .rate
                .as_ref()
                .map(|r| milli_pps(r, PROBE_WIRE_BYTES))
                .transpose()?,
            loopback: a.loopback,
            quiet: a.quiet,
            explain: !a.no_explain,
        };
        Ok(KillerUsConfig::resolve(ask, latlab_sys::netns::is_root()))
    }
}
