//! Clap definitions of `latlab sched`. The run itself takes the Hourglass 0.5 command line,
//! which clap cannot express (per-thread options after `-t N`); it is collected verbatim
//! and parsed by `latlab_sched::cmdline`.

use super::common::{duration_arg, positive_duration_arg};
use clap::{Args, Subcommand};
use latlab_core::units::Nanos;
use std::path::PathBuf;

const SCHED_HELP: &str = "\
Hourglass options (paper, Appendix A; times like 3m, 1.5s, 1020ms, 87.0us):
  -n <threads>            number of threads (required unless --scenario)
  -d <time>               run length (default 10s)
  -c                      also print the raw trace in TSC cycles
  -e <records>            trace records in all (default 300000)
  -t <n> | -a             following per-thread options apply to thread n | all threads
per thread:
  -p <prio>               IDLE (SCHED_IDLE), LOW/NORMAL/HIGH/HIGHEST (nice 10/0/-10/-20),
                          RTLOW/RTMED/RTHIGH (SCHED_FIFO 10/50/95)
  -w <model>              CPU | CPU_SCAN <KB> | CPU_YIELD <amount> | CPU_SCAN_YIELD <KB> <amount>
                          | PERIODIC <amount> <period> | CPU_PERIODIC <amount> <period> | LAT <period>
  -i <timer>              NATIVE (nanosleep) | HR (clock_nanosleep ABSTIME) | TIMERFD | BUSY
  -s <time> / -f <time>   start / finish this far into the run
  -rh / -rs <amt> <per>   SCHED_DEADLINE reservation, hard / soft (SCHED_FLAG_RECLAIM)
  --cpu <n>               pin the thread to CPU n
latlab options:
  --gap <time>            gap threshold (default: 2 x the measured loop iteration)
  --timer-slack <time>    set every thread's timer slack (PR_SET_TIMERSLACK)
  --dma-latency <us>      hold /dev/cpu_dma_latency at <us> during the run (cyclictest holds 0)
  --scenario <file.toml>  take the thread set from a TOML file (see docs/sched.md)
  -o <file>               result file (default latlab-results/sched-<time>.json)
  --perfetto <file>       Perfetto JSON (default beside the result, .perfetto.json)
  --render <file>         timeline of the first 500 ms (default beside the result, .svg)
  --print-trace           print the text trace and latlate lines (always written to .txt)
  --explain               attribute every gap above the run's p99 gap and every missed
                          deadline to kernel events (IRQ, softirq, timer, IPI, preempting
                          task, workqueue, NMI, outside the kernel); needs root + tracefs,
                          else the gap half only, said in one line
  --explain-above <time>  the same with gaps at or above <time>, e.g. 50us
  -q                      print nothing but errors

Examples:
  latlab sched -n 3 -d 5s -t 0 -p LOW -t 1 -p NORMAL -t 2 -p HIGH
  latlab sched -d 60s -n 10 -a -p NORMAL -w CPU_YIELD 0.9ms
  latlab sched -d 20s -n 1 -t 0 -p RTHIGH -w PERIODIC 4ms 5ms -i HR
  latlab sched -n 2 -t 0 -p RTMED -w PERIODIC 3ms 8ms -i HR -t 1 -p RTLOW -w PERIODIC 17ms 33ms -i NATIVE
  latlab sched -n 2 -t 0 -w PERIODIC 3ms 8ms -rh 3.1ms 8ms -t 1 -w PERIODIC 17ms 33ms -rh 17.1ms 33ms
  latlab sched -d 5s -n 1 -t 0 -p RTHIGH -w LAT 1ms -i HR
  latlab sched -d 20s -n 1 -t 0 -p RTHIGH -w PERIODIC 4ms 5ms -i HR --cpu 1 --explain
  latlab sched --scenario periodic.toml -o run.json
  latlab sched render run.json -o run.png --from 1s --to 1.5s --cpus
  latlab sched analyze run.json
  latlab sched cache-cost --sizes 4,64,1024 --trials 5 --duration 1s

Exit codes: 0 ok, 1 run-time failure, 2 bad usage or input, 3 a priority or reservation
was refused (not permitted, or rejected by admission control).";

/// `latlab sched …`
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, after_help = SCHED_HELP)]
pub struct SchedArgs {
    /// render, analyze or cache-cost; without one, a run.
    #[command(subcommand)]
    pub command: Option<SchedCommand>,
    /// The Hourglass command line (see below).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "HOURGLASS OPTIONS"
    )]
    pub hourglass: Vec<String>,
}

/// Subcommands of `latlab sched`.
#[derive(Debug, Subcommand)]
pub enum SchedCommand {
    /// Draw a run's execution timeline (the paper's render_trace): a row per thread,
    /// grey blocks of CPU time, red ticks at deadline misses, optional per-CPU rows.
    #[command(after_help = "Examples:
  latlab sched render run.json -o run.svg
  latlab sched render run.json -o detail.png --from 1s --to 1.1s --cpus")]
    Render(RenderArgs),
    /// Infer scheduling behaviour from a run: context-switch cost, tick and interrupt
    /// load, quanta, dispatch latency, deadlines, response-time analysis.
    #[command(after_help = "Examples:
  latlab sched analyze run.json
  latlab sched analyze run.json --merge-gap 20us --json analysis.json")]
    Analyze(AnalyzeArgs),
    /// The indirect cost of a context switch versus working-set size (paper Fig. 5):
    /// C = ((W1 - W10)/W1)(T/N10), with 95% confidence intervals over trials.
    #[command(after_help = "Examples:
  latlab sched cache-cost
  latlab sched cache-cost --sizes 4,32,256,2048 --trials 5 --duration 1s --threads 10 --cpu 1")]
    CacheCost(CacheCostArgs),
}

/// Options of `latlab sched render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// A `sched.run` result file (its .trace.tsv must be beside it).
    #[arg(value_name = "RESULT")]
    pub result: PathBuf,
    /// Image to write: .svg or .png.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Window start, from the run's start.
    #[arg(long, default_value = "0s", value_parser = duration_arg)]
    pub from: Nanos,
    /// Window end (default: from + 500ms, at most the run's end).
    #[arg(long, value_parser = duration_arg)]
    pub to: Option<Nanos>,
    /// Add a row per CPU.
    #[arg(long)]
    pub cpus: bool,
    /// Image width in pixels.
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
}

/// Options of `latlab sched analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// A `sched.run` result file.
    #[arg(value_name = "RESULT")]
    pub result: PathBuf,
    /// Gaps shorter than this inside a thread's run are interruptions, longer ones mean it
    /// was descheduled (quantum boundaries).
    #[arg(long, default_value = "50us", value_parser = duration_arg)]
    pub merge_gap: Nanos,
    /// Leave the measured context-switch and interrupt overheads out of the response-time
    /// analysis.
    #[arg(long)]
    pub no_overheads: bool,
    /// Also write the analysis as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Options of `latlab sched cache-cost`.
#[derive(Debug, Args)]
pub struct CacheCostArgs {
    /// Working-set sizes in KiB, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "4,16,64,256,1024,4096")]
    pub sizes: Vec<u64>,
    /// Trials per size (each: one run with 1 thread, one with --threads).
    #[arg(long, default_value_t = 5)]
    pub trials: u32,
    /// Length of each run.
    #[arg(long, default_value = "1s", value_parser = positive_duration_arg)]
    pub duration: Nanos,
    /// Threads in the contended run.
    #[arg(long, default_value_t = 10)]
    pub threads: u32,
    /// CPU all threads are pinned to.
    #[arg(long, default_value_t = 1)]
    pub cpu: u32,
    /// Result file (default latlab-results/sched-cache-cost-<time>.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also draw cost versus size with the intervals (.svg or .png), as the paper's Fig. 5.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Options of `latlab experiment hourglass`.
#[derive(Debug, Args)]
pub struct HourglassExperimentArgs {
    /// Directory for results and figures (`-o` as in the other experiments; `--dir` still
    /// works).
    #[arg(
        long = "output",
        short = 'o',
        visible_alias = "dir",
        value_name = "DIR",
        default_value = "latlab-results/hourglass"
    )]
    pub dir: PathBuf,
    /// Length of each run (the paper used 20 s to 6 min).
    #[arg(long, default_value = "5s", value_parser = positive_duration_arg)]
    pub duration: Nanos,
    /// The CPU that stands in for the paper's uniprocessor (default: the last one).
    #[arg(long)]
    pub cpu: Option<u32>,
    /// A smaller cache-cost ladder (3 sizes, 2 trials).
    #[arg(long)]
    pub quick: bool,
    /// Do not attribute each run's tail to kernel events (`--explain` is on by default;
    /// without root or tracefs the runs say so and carry on with their own gaps).
    #[arg(long)]
    pub no_explain: bool,
    /// Only these scenarios, comma separated (5.1 … 5.6).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// No progress bar (there is none either when stderr is not a terminal).
    #[arg(short, long)]
    pub quiet: bool,
}
