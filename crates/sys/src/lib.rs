//! # latlab-sys
//!
//! The quarantine for `unsafe` code and raw system calls. Every other latlab crate denies
//! `unsafe_code`; whatever needs an instruction intrinsic (`rdtsc`, `rdtscp`, `cpuid`) or a
//! libc call (`clock_gettime`, `sched_setaffinity`, `mlockall`, `uname`, `klogctl`, ...) lives
//! here, behind a safe wrapper. Each `unsafe` block carries a `// SAFETY:` comment that says
//! why it is sound.
//!
//! - [`tsc`]: reading the time-stamp counter, its capabilities, its rate (as the kernel tells
//!   it and as calibrated), and [`tsc::Clock`], the timebase the measuring loops use;
//! - [`clocks`]: `clock_gettime`/`gettimeofday` as nanosecond readings;
//! - [`sched`]: CPU pinning, `SCHED_FIFO`, `mlockall`, with errors that name a remedy;
//! - [`rt`]: `SCHED_IDLE`, nice, `SCHED_DEADLINE` (with reclaiming), timer slack, yield;
//! - [`idle`]: the CPUs' idle states and the PM QoS target (`/dev/cpu_dma_latency`), and
//!   [`idle::DmaLatencyHold`], which holds that target for a run (`--dma-latency`);
//! - [`rt_throttle`]: real-time throttling off for one run (`--no-rt-throttle`), restored after;
//! - [`timer`]: relative/absolute sleeps and `timerfd`;
//! - `mpi_rma` (feature `mpi`): MPI one-sided windows (`MPI_Put`) behind a safe API;
//! - `ofi` (feature `ofi`): libfabric RDM endpoints (`fi_write`, `fi_send`) behind a safe API;
//! - [`net`]: socket timestamping (`SO_TIMESTAMPING`, error queue), `recvmmsg`/`sendmmsg`,
//!   busy polling and NIC timestamping capabilities;
//! - [`futex`], [`ipc`]: futex wait/wake, eventfd, pipes and the null system call;
//! - [`isolate`]: CPUs isolated at run time (`--isolate`): IRQs, workqueues, tasks and
//!   kernel threads moved off, timer and vmstat knobs, all through the journal;
//! - [`journal`]: the undo journal every change to the system goes through, written to disk
//!   before each change, so that a latlab killed by SIGKILL is undone by the next one;
//! - [`janitor`]: a child process that deletes the namespaces latlab created if latlab is
//!   killed before it could (SIGKILL included);
//! - [`netns`]: entering a named network namespace from one thread, building namespaces
//!   and veths, running `ip` (and `ip netns exec`);
//! - [`netstat`]: network drop counters, interrupts, sysctls, interfaces and routes from
//!   `/proc`, `/sys` and `ip route`;
//! - [`packet`]: non-blocking `AF_PACKET` sockets for raw frames;
//! - [`xdp`]: `AF_XDP` sockets and the XDP program steering latlab's frames to them;
//! - [`poll`]: a preallocated `ppoll` set with a nanosecond timeout;
//! - [`btf`]: the running kernel's BTF and the `task_struct` fields a BPF recorder reads;
//! - [`ktrace`]: kernel events (IRQs, softirqs, switches, …) on the TSC timeline from a
//!   private tracefs instance;
//! - [`signal`]: a stop flag raised by SIGINT/SIGTERM;
//! - [`host`]: host provenance (`uname`, CPU model, clocksource, governors, command line,
//!   hypervisor) and an RFC 3339 UTC timestamp.
//!
//! Parsing of `/proc` and `/sys` text is kept in pure functions taking `&str`, so that it is
//! unit-tested without the OS.
#![allow(unsafe_code)]

pub mod bpf;
pub mod btf;
pub mod clocks;
pub mod flock;
pub mod futex;
pub mod host;
pub mod idle;
pub mod ipc;
pub mod isolate;
pub mod janitor;
pub mod journal;
pub mod ktrace;
#[cfg(feature = "mpi")]
pub mod mpi_rma;
pub mod net;
pub mod netns;
pub mod netstat;
#[cfg(feature = "ofi")]
pub mod ofi;
pub mod packet;
pub mod poll;
pub mod process;
pub mod rt;
pub mod rt_throttle;
pub mod sched;
pub mod signal;
mod sockopt;
pub mod supervise;
pub mod timer;
pub mod tsc;
pub mod xdp;

#[cfg(target_arch = "x86_64")]
pub(crate) mod cpuid {
    //! `cpuid` behind a safe function.

    /// The four registers a `cpuid` leaf returns.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct Regs {
        pub(crate) eax: u32,
        pub(crate) ebx: u32,
        pub(crate) ecx: u32,
        pub(crate) edx: u32,
    }

    /// Executes `cpuid` with `leaf` in EAX and 0 in ECX.
    // Newer toolchains mark `__cpuid_count` safe; the MSRV (1.80) still needs `unsafe`.
    #[allow(unused_unsafe)]
    pub(crate) fn cpuid(leaf: u32) -> Regs {
        // SAFETY: `cpuid` exists on every x86_64 CPU, has no memory effects and cannot fault
        // for any leaf (unsupported leaves return other leaves' data, which callers guard
        // against by checking the maximum leaf first).
        let r = unsafe { core::arch::x86_64::__cpuid_count(leaf, 0) };
        Regs {
            eax: r.eax,
            ebx: r.ebx,
            ecx: r.ecx,
            edx: r.edx,
        }
    }

    /// The highest basic leaf (`cpuid 0` EAX).
    pub(crate) fn max_basic_leaf() -> u32 {
        cpuid(0).eax
    }

    /// Whether CPUID.1:ECX bit 31 ("running under a hypervisor") is set.
    pub(crate) fn hypervisor_present() -> bool {
        max_basic_leaf() >= 1 && cpuid(1).ecx & (1 << 31) != 0
    }

    /// The highest extended leaf (`cpuid 0x80000000` EAX).
    pub(crate) fn max_extended_leaf() -> u32 {
        cpuid(0x8000_0000).eax
    }

    /// The highest hypervisor leaf (`cpuid 0x40000000` EAX), only when a hypervisor is
    /// present (on bare metal that leaf returns unrelated data).
    pub(crate) fn max_hypervisor_leaf() -> Option<u32> {
        hypervisor_present().then(|| cpuid(0x4000_0000).eax)
    }
}
