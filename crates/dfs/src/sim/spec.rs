//! The text forms of the simulator's perturbations, as `latlab dfs sim` takes them:
//! a slow node `ROLE:INDEX:FACTOR`, a bandwidth drop `FIRST-LAST:FACTOR` (intervals) or
//! `FROM-TO:FACTOR` (times), a DDE fault `REPLICA@TIME`. An error says the expected form.

use super::config::{BandwidthDrop, DdeFault, DropWindow, Role, SlowNode};
use latlab_core::parse::parse_duration;
use std::str::FromStr;

impl FromStr for SlowNode {
    type Err = String;

    fn from_str(s: &str) -> Result<SlowNode, String> {
        let err =
            || "expected input:INDEX:FACTOR or compute:INDEX:FACTOR, e.g. input:3:0.5".to_string();
        let parts: Vec<&str> = s.split(':').collect();
        let [role, idx, fac] = parts[..] else {
            return Err(err());
        };
        let role = match role {
            "input" => Role::Input,
            "compute" => Role::Compute,
            _ => return Err(err()),
        };
        Ok(SlowNode {
            role,
            index: idx.parse().map_err(|_| err())?,
            factor: fac.parse().map_err(|_| err())?,
        })
    }
}

impl FromStr for BandwidthDrop {
    type Err = String;

    fn from_str(s: &str) -> Result<BandwidthDrop, String> {
        let err = || {
            "expected FIRST-LAST:FACTOR (intervals, e.g. 15-25:0.75) or FROM-TO:FACTOR (times, e.g. 10ms-20ms:0.5)".to_string()
        };
        let (win, fac) = s.rsplit_once(':').ok_or_else(err)?;
        let factor: f64 = fac.parse().map_err(|_| err())?;
        let (a, b) = win.split_once('-').ok_or_else(err)?;
        let window = match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(first), Ok(last)) if first <= last => DropWindow::Intervals { first, last },
            (Ok(_), Ok(_)) => return Err(err()),
            _ => {
                let from = parse_duration(a).map_err(|_| err())?;
                let to = parse_duration(b).map_err(|_| err())?;
                if to.get() <= from.get() {
                    return Err(err());
                }
                DropWindow::Time {
                    from_ns: from.get() as i64,
                    to_ns: to.get() as i64,
                }
            }
        };
        Ok(BandwidthDrop { window, factor })
    }
}

impl FromStr for DdeFault {
    type Err = String;

    fn from_str(s: &str) -> Result<DdeFault, String> {
        let err = || "expected REPLICA@TIME, e.g. 0@50ms".to_string();
        let (r, t) = s.split_once('@').ok_or_else(err)?;
        Ok(DdeFault {
            replica: r.parse().map_err(|_| err())?,
            kill_ns: parse_duration(t).map_err(|_| err())?.get() as i64,
            restart_ns: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_drops_slow_nodes_and_kills() {
        assert_eq!(
            "15-25:0.75".parse::<BandwidthDrop>().unwrap().window,
            DropWindow::Intervals {
                first: 15,
                last: 25
            }
        );
        assert_eq!(
            "10ms-20ms:0.5".parse::<BandwidthDrop>().unwrap().window,
            DropWindow::Time {
                from_ns: 10_000_000,
                to_ns: 20_000_000
            }
        );
        assert!("25-15:0.5".parse::<BandwidthDrop>().is_err());
        assert!("15-25".parse::<BandwidthDrop>().is_err());
        assert_eq!(
            "compute:2:0.5".parse::<SlowNode>().unwrap().role,
            Role::Compute
        );
        assert!("router:2:0.5".parse::<SlowNode>().is_err());
        assert_eq!("1@5ms".parse::<DdeFault>().unwrap().kill_ns, 5_000_000);
        assert!("1".parse::<DdeFault>().is_err());
    }
}
