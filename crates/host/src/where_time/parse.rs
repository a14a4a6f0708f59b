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
    })
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
    Ok(WrkReport {
        requests_per_sec: rps,
        requests,
        socket_errors,
        non_2xx,
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
    }

    #[test]
    fn parses_captured_wrk_output() {
        let r = wrk(include_str!("fixtures/wrk.txt")).unwrap();
        assert_eq!(r.requests_per_sec, 57_200.95);
        assert_eq!(r.requests, 62_935);
        assert_eq!((r.socket_errors, r.non_2xx), (0, 0));
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
