//! Parsers of the benchmark clients' text output (pure; tested on captured output).

/// What `memcaslap` reported at the end of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct MemcaslapReport {
    /// Operations completed (`Ops:`).
    pub ops: u64,
    /// Operations per second (`TPS:`), the throughput.
    pub tps: f64,
    /// Run time in seconds (`Run time:`).
    pub run_time_s: f64,
    /// `get_misses:` (gets of keys not found).
    pub get_misses: u64,
    /// The latency of all operations, when memcaslap printed its statistics (`-S`).
    pub latency: Option<MemcaslapLatency>,
}

/// memcaslap's latency statistics of all operations (its `Total Statistics (N events)`
/// block, printed with `-S`): it keeps no percentiles, only these and log2 buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct MemcaslapLatency {
    /// Operations timed.
    pub events: u64,
    /// Geometric mean, µs (`Geo:`).
    pub geo_us: f64,
    /// Arithmetic mean, µs (`Avg:`).
    pub avg_us: f64,
}

/// What `wrk` reported.
#[derive(Clone, Debug, PartialEq)]
pub struct WrkReport {
    /// `Requests/sec:`.
    pub requests_per_sec: f64,
    /// Requests completed (`N requests in ...`).
    pub requests: u64,
    /// Socket errors of all kinds (connect, read, write, timeout); 0 when not printed.
    pub socket_errors: u64,
    /// `Non-2xx or 3xx responses:`; 0 when not printed.
    pub non_2xx: u64,
    /// The median latency in ns, when wrk printed its distribution (`--latency`).
    pub p50_ns: Option<u64>,
}

/// What `pgbench` reported at the end of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct PgbenchReport {
    /// Transactions per second without the initial connection time, the throughput.
    pub tps: f64,
    /// `number of transactions actually processed:`.
    pub transactions: u64,
    /// `number of failed transactions:` (PostgreSQL 15 and later; 0 when not printed).
    pub failed: u64,
}

fn num_after(line: &str, key: &str) -> Option<f64> {
    let rest = &line[line.find(key)? + key.len()..];
    let tok = rest.split_whitespace().next()?;
    let tok = tok.trim_end_matches(|c: char| !c.is_ascii_digit());
    tok.parse().ok()
}

/// Parses memcaslap's final summary line (`Run time: 2.0s Ops: 143740 TPS: 71862 ...`).
///
/// # Errors
/// A message quoting what was missing.
pub fn memcaslap(out: &str) -> Result<MemcaslapReport, String> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("Run time:") && l.contains("TPS:"))
        .ok_or_else(|| {
            "no 'Run time: ... TPS: ...' summary line in memcaslap's output".to_string()
        })?;
    let get = |k: &str| num_after(line, k).ok_or_else(|| format!("no '{k}' in '{}'", line.trim()));
    let get_misses = value_line(out, "get_misses:").unwrap_or(0);
    Ok(MemcaslapReport {
        ops: get("Ops:")? as u64,
        tps: get("TPS:")?,
        run_time_s: get("Run time:")?,
        get_misses,
        latency: memcaslap_latency(out),
    })
}

/// The `Total Statistics (N events)` block of memcaslap's output, when there is one.
fn memcaslap_latency(out: &str) -> Option<MemcaslapLatency> {
    let mut lines = out.lines().map(str::trim);
    let head = lines.find(|l| l.starts_with("Total Statistics ("))?;
    let events = head
        .trim_start_matches("Total Statistics (")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // The block ends at its first blank line.
    let block: Vec<&str> = lines.take_while(|l| !l.is_empty()).collect();
    let field = |k: &str| {
        block
            .iter()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    Some(MemcaslapLatency {
        events,
        geo_us: field("Geo:")?,
        avg_us: field("Avg:")?,
    })
}

/// A duration as wrk prints it (`111.00us`, `1.94ms`, `2.00s`), in ns.
fn wrk_duration_ns(s: &str) -> Option<u64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        return None;
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * scale).round() as u64)
}

/// The value on the first line of `out` that starts with `prefix` (leading blanks
/// ignored), when it parses.
fn value_line<T: std::str::FromStr>(out: &str, prefix: &str) -> Option<T> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Parses wrk's summary.
///
/// # Errors
/// A message quoting what was missing.
pub fn wrk(out: &str) -> Result<WrkReport, String> {
    let rps: f64 = value_line(out, "Requests/sec:")
        .ok_or_else(|| "no 'Requests/sec:' line in wrk's output".to_string())?;
    let requests = out
        .lines()
        .find(|l| l.contains(" requests in "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no 'N requests in' line in wrk's output".to_string())?;
    let socket_errors = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Socket errors:"))
        .map(|rest| {
            rest.split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    let non_2xx = value_line(out, "Non-2xx or 3xx responses:").unwrap_or(0);
    // `--latency`: "Latency Distribution" then "50%  111.00us" and the other quantiles.
    let p50_ns = out
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "Latency Distribution")
        .find_map(|l| l.strip_prefix("50%"))
        .and_then(|v| wrk_duration_ns(v.trim()));
    Ok(WrkReport {
        requests_per_sec: rps,
        requests,
        socket_errors,
        non_2xx,
        p50_ns,
    })
}

/// Parses pgbench's summary: the `tps = ... (without initial connection time)` line
/// (`excluding connections establishing` before PostgreSQL 14), the transactions processed
/// and the failed ones.
///
/// # Errors
/// A message quoting what was missing.
pub fn pgbench(out: &str) -> Result<PgbenchReport, String> {
    let tps_lines: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tps ="))
        .collect();
    let tps_line = tps_lines
        .iter()
        .find(|l| l.contains("without initial connection") || l.contains("excluding"))
        .or(tps_lines.first())
        .ok_or_else(|| "no 'tps = ...' line in pgbench's output".to_string())?;
    let tps = num_after(tps_line, "tps =").ok_or_else(|| format!("no number in '{tps_line}'"))?;
    let transactions = out
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("number of transactions actually processed:")
        })
        .and_then(|v| v.split(['/', ' ']).find(|w| !w.is_empty())?.parse().ok())
        .ok_or_else(|| {
            "no 'number of transactions actually processed:' line in pgbench's output".to_string()
        })?;
    let failed = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("number of failed transactions:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Ok(PgbenchReport {
        tps,
        transactions,
        failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_captured_memcaslap_output() {
        let r = memcaslap(include_str!("fixtures/memcaslap.txt")).unwrap();
        assert_eq!(r.ops, 48_024);
        assert_eq!(r.tps, 47_970.0);
        assert_eq!(r.run_time_s, 1.0);
        assert_eq!(r.get_misses, 0);
        // Without -S memcaslap times nothing.
        assert_eq!(r.latency, None);
    }

    #[test]
    fn memcaslap_statistics_give_the_total_blocks_latency() {
        // -S: Get, Set and Total blocks; the Total one counts every operation.
        let r = memcaslap(include_str!("fixtures/memcaslap-stats.txt")).unwrap();
        assert_eq!((r.ops, r.tps), (10_177, 10_176.0));
        let l = r.latency.unwrap();
        assert_eq!(l.events, 10_176);
        assert_eq!((l.geo_us, l.avg_us), (95.13, 97.0));
        // A block cut short (no Geo:) is no latency, not a zero.
        let cut = "Total Statistics (5 events)\n   Avg: 3\n\nRun time: 1.0s Ops: 5 TPS: 5\n";
        assert_eq!(memcaslap(cut).unwrap().latency, None);
    }

    #[test]
    fn parses_captured_wrk_output() {
        let r = wrk(include_str!("fixtures/wrk.txt")).unwrap();
        assert_eq!(r.requests_per_sec, 57_200.95);
        assert_eq!(r.requests, 62_935);
        assert_eq!((r.socket_errors, r.non_2xx), (0, 0));
        assert_eq!(r.p50_ns, None);
        // --latency adds the distribution; the median is its 50% line.
        let r = wrk(include_str!("fixtures/wrk-latency.txt")).unwrap();
        assert_eq!((r.requests, r.p50_ns), (9_391, Some(111_000)));
    }

    #[test]
    fn wrk_durations_carry_their_unit() {
        assert_eq!(wrk_duration_ns("111.00us"), Some(111_000));
        assert_eq!(wrk_duration_ns("1.94ms"), Some(1_940_000));
        assert_eq!(wrk_duration_ns("2.00s"), Some(2_000_000_000));
        assert_eq!(wrk_duration_ns("12.5"), None);
        assert_eq!(wrk_duration_ns("-1.0ms"), None);
    }

    #[test]
    fn parses_captured_pgbench_output() {
        let r = pgbench(include_str!("fixtures/pgbench.txt")).unwrap();
        assert_eq!(r.tps, 361.153593);
        assert_eq!((r.transactions, r.failed), (358, 0));
    }

    #[test]
    fn pgbench_before_15_reports_two_tps_lines() {
        // PostgreSQL 13: no failed-transaction line, connection time in a second tps line.
        let out = "number of transactions actually processed: 1200/1200\nlatency average = 3.3 ms\ntps = 1190.5 (including connections establishing)\ntps = 1204.25 (excluding connections establishing)\n";
        let r = pgbench(out).unwrap();
        assert_eq!((r.tps, r.transactions, r.failed), (1204.25, 1200, 0));
    }

    #[test]
    fn wrk_errors_are_summed() {
        let out = "  10 requests in 1.00s, 1KB read\n  Socket errors: connect 1, read 2, write 0, timeout 4\n  Non-2xx or 3xx responses: 3\nRequests/sec:     10.00\n";
        let r = wrk(out).unwrap();
        assert_eq!((r.socket_errors, r.non_2xx, r.requests), (7, 3, 10));
    }

    #[test]
    fn garbage_is_an_error_naming_the_line() {
        assert!(memcaslap("connect failed").unwrap_err().contains("TPS"));
        assert!(wrk("unable to connect")
            .unwrap_err()
            .contains("Requests/sec"));
        assert!(pgbench("connection to server failed")
            .unwrap_err()
            .contains("tps"));
        assert!(pgbench("tps = 5.0 (without initial connection time)")
            .unwrap_err()
            .contains("transactions actually processed"));
        assert!(memcaslap("Run time: 1.0s Ops: x TPS: 5")
            .unwrap_err()
            .contains("Ops:"));
    }
}
