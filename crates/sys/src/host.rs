//! Host provenance: `uname`, CPU model, online CPUs, SMT, clocksource, cpufreq governors,
//! the kernel command line (with `isolcpus=`/`nohz_full=`), the hypervisor, and an RFC 3339
//! UTC timestamp for the run.
//!
//! Readers of `/proc` and `/sys` degrade to empty/`None` when a file is missing; the parsing
//! is in pure functions.

use latlab_core::results::provenance::{HostInfo, Provenance, ThreadPlacement, Timebase};

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// A NUL-terminated C char array as a `String` (lossy UTF-8).
fn c_chars(field: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

struct Uname {
    sysname: String,
    nodename: String,
    release: String,
    version: String,
    machine: String,
}

fn uname() -> Option<Uname> {
    // SAFETY: `utsname` is plain C char arrays; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `utsname`; `uname` fills it with NUL-terminated strings.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    Some(Uname {
        sysname: c_chars(&u.sysname),
        nodename: c_chars(&u.nodename),
        release: c_chars(&u.release),
        version: c_chars(&u.version),
        machine: c_chars(&u.machine),
    })
}

/// The 1-minute load average from `/proc/loadavg` text. Pure.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The 1-minute load average now (`/proc/loadavg`), if the kernel says.
pub fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| parse_loadavg(&t))
}

/// Steal time per CPU from `/proc/stat` text: `(cpu, steal)` for every `cpuN` line, in
/// the kernel's USER_HZ ticks (the 8th value; a line without it is skipped). Pure.
pub fn parse_steal(stat: &str) -> Vec<(u32, u64)> {
    stat.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu = f.next()?.strip_prefix("cpu")?.parse::<u32>().ok()?;
            let steal = f.nth(7)?.parse::<u64>().ok()?;
            Some((cpu, steal))
        })
        .collect()
}

/// Steal time per CPU now, ns (`/proc/stat`, USER_HZ from `sysconf(_SC_CLK_TCK)`); empty
/// when the kernel does not say.
pub fn steal_ns() -> Vec<(u32, u64)> {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as u64 } else { 100 };
    std::fs::read_to_string("/proc/stat")
        .map(|t| parse_steal(&t))
        .unwrap_or_default()
        .into_iter()
        .map(|(c, t)| (c, t * (1_000_000_000 / hz)))
        .collect()
}

/// The first `model name` in `/proc/cpuinfo` text (x86), else `Model`/`Hardware`/
/// `cpu model` (other architectures). Pure.
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "Hardware", "cpu model"] {
        let found = cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_owned())
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The value of `key=value` on a kernel command line (the last occurrence wins, as for
/// most kernel parameters); `key` may be given with or without the trailing `=`.
/// `None` if absent or given without a value. Pure.
pub fn cmdline_param(cmdline: &str, key: &str) -> Option<String> {
    let key = key.strip_suffix('=').unwrap_or(key);
    cmdline
        .split_whitespace()
        .filter_map(|tok| {
            let (k, v) = tok.split_once('=')?;
            (k == key).then(|| v.trim_matches('"').to_owned())
        })
        .next_back()
}

/// Names the hypervisor from its 12-byte CPUID leaf 0x40000000 vendor signature
/// (EBX, ECX, EDX): `KVM`, `Hyper-V`, `VMware`, `Xen`, `QEMU TCG`, else the signature
/// itself trimmed of NULs and spaces. Pure.
pub fn hypervisor_name(signature: &[u8; 12]) -> String {
    match signature {
        b"KVMKVMKVM\0\0\0" => "KVM".to_owned(),
        b"Microsoft Hv" => "Hyper-V".to_owned(),
        b"VMwareVMware" => "VMware".to_owned(),
        b"XenVMMXenVMM" => "Xen".to_owned(),
        b"TCGTCGTCGTCG" => "QEMU TCG".to_owned(),
        other => String::from_utf8_lossy(other)
            .trim_matches(|c: char| c == '\0' || c.is_whitespace())
            .to_owned(),
    }
}

#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<String> {
    use crate::cpuid::{cpuid, hypervisor_present};
    if !hypervisor_present() {
        return None;
    }
    let r = cpuid(0x4000_0000);
    let mut sig = [0u8; 12];
    sig[0..4].copy_from_slice(&r.ebx.to_le_bytes());
    sig[4..8].copy_from_slice(&r.ecx.to_le_bytes());
    sig[8..12].copy_from_slice(&r.edx.to_le_bytes());
    let name = hypervisor_name(&sig);
    Some(if name.is_empty() {
        "unknown hypervisor".to_owned()
    } else {
        name
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<String> {
    None
}

/// The hypervisor: from CPUID (when CPUID.1:ECX bit 31 says one is present), else
/// `/sys/hypervisor/type`, else `None` (bare metal, as far as can be told).
pub fn virtualization() -> Option<String> {
    cpuid_hypervisor().or_else(|| read_trimmed("/sys/hypervisor/type"))
}

/// The distinct cpufreq governors of the CPUs, in CPU order of first appearance; empty when
/// no CPU exposes cpufreq (common in VMs).
fn governors() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") else {
        return Vec::new();
    };
    let mut cpus: Vec<u32> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    for cpu in cpus {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor");
        if let Some(g) = read_trimmed(&path) {
            if !out.contains(&g) {
                out.push(g);
            }
        }
    }
    out
}

/// The host's static facts (see [`HostInfo`]); whatever cannot be read is left empty/`None`.
pub fn host_info() -> HostInfo {
    let u = uname();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cmdline = read_trimmed("/proc/cmdline").unwrap_or_default();
    let smt_active =
        read_trimmed("/sys/devices/system/cpu/smt/active").and_then(|s| match s.as_str() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        });
    HostInfo {
        hostname: u.as_ref().map(|u| u.nodename.clone()).unwrap_or_default(),
        kernel: u
            .as_ref()
            .map(|u| format!("{} {}", u.sysname, u.release))
            .unwrap_or_default(),
        kernel_version: u.as_ref().map(|u| u.version.clone()).unwrap_or_default(),
        arch: u
            .as_ref()
            .map(|u| u.machine.clone())
            .unwrap_or_else(|| std::env::consts::ARCH.to_owned()),
        cpu_model: parse_cpu_model(&cpuinfo).unwrap_or_default(),
        cpus_online: crate::sched::online_cpus(),
        smt_active,
        clocksource: read_trimmed(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        ),
        governors: governors(),
        isolcpus: cmdline_param(&cmdline, "isolcpus"),
        nohz_full: cmdline_param(&cmdline, "nohz_full"),
        cmdline,
        virtualization: virtualization(),
    }
}

/// Days since 1970-01-01 to the proleptic Gregorian (year, month, day) (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Seconds since the Unix epoch as RFC 3339 UTC, e.g. `2026-11-22T14:03:05Z`. Pure.
pub fn rfc3339_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// The current UTC time as RFC 3339 with whole seconds (from `SystemTime`).
pub fn utc_now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339_from_unix(secs)
}

/// Assembles a run's [`Provenance`] from this host's [`host_info`], the run's idle record
/// ([`crate::idle::record`]: the idle states since [`crate::idle::mark_start`] and any
/// `--dma-latency` hold) and what the caller established. Called when the run has ended.
pub fn provenance(
    timebase: Timebase,
    threads: Vec<ThreadPlacement>,
    memory_locked: bool,
    started_utc: String,
) -> Provenance {
    Provenance {
        host: host_info(),
        timebase,
        threads,
        memory_locked,
        started_utc,
        idle: crate::idle::record(),
        isolation: crate::isolate::record(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn steal_is_the_eighth_value_of_each_cpu_line() {
        let stat = "cpu  1427850 16550 232248 373386 13979 0 15458 2018 0 0\n\
                    cpu0 712416 7766 104855 203514 4717 0 5015 1005 0 0\n\
                    cpu1 715433 8784 127392 169871 9261 0 10442 1013 0 0\n\
                    cpu2 1 2 3\n\
                    intr 123 4 5 6 7 8 9 10 11\n";
        assert_eq!(parse_steal(stat), vec![(0, 1005), (1, 1013)]);
        assert!(parse_steal("").is_empty());
    }

    use super::*;

    #[test]
    fn loadavg_parsed() {
        assert_eq!(parse_loadavg("10.94 10.79 9.68 3/512 12345\n"), Some(10.94));
        assert_eq!(parse_loadavg(""), None);
        assert!(loadavg().is_some_and(|l| l >= 0.0));
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(86_399), "1970-01-01T23:59:59Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(rfc3339_from_unix(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(946_684_799), "1999-12-31T23:59:59Z");
        assert_eq!(rfc3339_from_unix(1_709_164_800), "2024-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_234_567_890), "2009-02-13T23:31:30Z");
        assert_eq!(rfc3339_from_unix(4_107_542_400), "2100-03-01T00:00:00Z"); // 2100 not leap
        assert_eq!(rfc3339_from_unix(1_795_356_185), "2026-11-22T14:03:05Z");
        assert_eq!(rfc3339_from_unix(253_402_300_799), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn utc_now_is_well_formed() {
        let s = utc_now_rfc3339();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.ends_with('Z') && s.as_bytes()[10] == b'T');
        assert!(s.as_str() > "2020");
    }

    #[test]
    fn cmdline_params() {
        let c = "BOOT_IMAGE=/vmlinuz-6.8 root=UUID=abc ro quiet isolcpus=nohz,domain,2-3 \
                 nohz_full=2-3 rcu_nocbs=2-3 nohz_fullx=9";
        assert_eq!(
            cmdline_param(c, "isolcpus").as_deref(),
            Some("nohz,domain,2-3")
        );
        assert_eq!(cmdline_param(c, "nohz_full=").as_deref(), Some("2-3"));
        assert_eq!(cmdline_param(c, "root").as_deref(), Some("UUID=abc"));
        assert_eq!(cmdline_param(c, "ro"), None);
        assert_eq!(cmdline_param(c, "nohz"), None);
        assert_eq!(cmdline_param("", "isolcpus"), None);
        assert_eq!(
            cmdline_param("isolcpus=1 isolcpus=5", "isolcpus").as_deref(),
            Some("5")
        );
    }

    #[test]
    fn cpu_model_parsed() {
        let s = "processor\t: 0\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9R14 96-Core Processor\n";
        assert_eq!(
            parse_cpu_model(s).as_deref(),
            Some("AMD EPYC 9R14 96-Core Processor")
        );
        assert_eq!(
            parse_cpu_model("Hardware\t: BCM2835\n").as_deref(),
            Some("BCM2835")
        );
        assert_eq!(parse_cpu_model(""), None);
    }

    #[test]
    fn hypervisor_names() {
        assert_eq!(hypervisor_name(b"KVMKVMKVM\0\0\0"), "KVM");
        assert_eq!(hypervisor_name(b"Microsoft Hv"), "Hyper-V");
        assert_eq!(hypervisor_name(b"VMwareVMware"), "VMware");
        assert_eq!(hypervisor_name(b"XenVMMXenVMM"), "Xen");
        assert_eq!(hypervisor_name(b"TCGTCGTCGTCG"), "QEMU TCG");
        assert_eq!(hypervisor_name(b" lrpepyh  vr"), "lrpepyh  vr");
        assert_eq!(hypervisor_name(b"ACRNACRN\0\0\0\0"), "ACRNACRN");
    }

    #[test]
    fn host_info_reads_this_host() {
        let h = host_info();
        assert!(!h.hostname.is_empty());
        assert!(h.kernel.starts_with("Linux "), "{}", h.kernel);
        assert_eq!(h.arch, std::env::consts::ARCH);
        assert!(h.cpus_online >= 1);
        let p = provenance(Timebase::default(), Vec::new(), false, "x".into());
        assert_eq!(p.host.hostname, h.hostname);
        assert_eq!(p.started_utc, "x");
    }
}
