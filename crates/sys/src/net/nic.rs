//! A NIC's timestamping: its capabilities (`ETHTOOL_GET_TS_INFO`), its driver
//! (`ETHTOOL_GDRVINFO`) and switching hardware timestamping on (`SIOCSHWTSTAMP`), through
//! interface ioctls on a throwaway socket.

use super::sof;
use std::io;
use std::os::fd::AsRawFd;

/// `SIOCETHTOOL`.
const SIOCETHTOOL: libc::c_ulong = 0x8946;
/// `SIOCSHWTSTAMP`.
const SIOCSHWTSTAMP: libc::c_ulong = 0x89b0;
/// `ETHTOOL_GDRVINFO`.
const ETHTOOL_GDRVINFO: u32 = 0x3;
/// `ETHTOOL_GET_TS_INFO`.
const ETHTOOL_GET_TS_INFO: u32 = 0x41;

/// A NIC's timestamping capabilities (`ETHTOOL_GET_TS_INFO`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TsInfo {
    /// `SOF_TIMESTAMPING_*` flags the device supports.
    pub so_timestamping: u32,
    /// Index of its PTP hardware clock (`/dev/ptpN`), if any.
    pub phc_index: Option<u32>,
    /// Bit mask of supported `HWTSTAMP_TX_*` types.
    pub tx_types: u32,
    /// Bit mask of supported `HWTSTAMP_FILTER_*` RX filters.
    pub rx_filters: u32,
}

impl TsInfo {
    /// Whether the device timestamps in hardware both ways.
    pub fn hardware_capable(&self) -> bool {
        let need = sof::TX_HARDWARE | sof::RX_HARDWARE | sof::RAW_HARDWARE;
        self.so_timestamping & need == need
    }

    /// The supported `SOF_TIMESTAMPING_*` capabilities by name.
    pub fn capability_names(&self) -> Vec<&'static str> {
        const NAMES: [(u32, &str); 9] = [
            (sof::TX_HARDWARE, "hardware-transmit"),
            (sof::TX_SOFTWARE, "software-transmit"),
            (sof::RX_HARDWARE, "hardware-receive"),
            (sof::RX_SOFTWARE, "software-receive"),
            (sof::SOFTWARE, "software-system-clock"),
            (sof::RAW_HARDWARE, "hardware-raw-clock"),
            (sof::OPT_ID, "opt-id"),
            (sof::TX_SCHED, "tx-sched"),
            (sof::OPT_TSONLY, "opt-tsonly"),
        ];
        NAMES
            .iter()
            .filter(|(f, _)| self.so_timestamping & f != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

#[repr(C)]
struct Ifreq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

fn ifreq(ifname: &str, data: *mut libc::c_void) -> io::Result<Ifreq> {
    let b = ifname.as_bytes();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ || b.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{ifname}' is not a valid interface name"),
        ));
    }
    let mut name = [0u8; libc::IFNAMSIZ];
    name[..b.len()].copy_from_slice(b);
    Ok(Ifreq {
        name,
        data,
        _pad: [0; 16],
    })
}

/// Runs an interface ioctl whose `ifr_data` points to `buf`, on a throwaway socket.
fn if_ioctl(ifname: &str, request: libc::c_ulong, buf: &mut [u8]) -> io::Result<()> {
    let sock = std::net::UdpSocket::bind("0.0.0.0:0")?;
    let mut req = ifreq(ifname, buf.as_mut_ptr().cast())?;
    // SAFETY: `req` is a valid `struct ifreq` layout (name then the data pointer, padded
    // to the kernel's size) whose data pointer refers to `buf`, which is large enough for
    // the structure the request reads and writes and outlives the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), request, &mut req as *mut Ifreq) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The timestamping capabilities of interface `ifname` in the current network namespace.
pub fn ts_info(ifname: &str) -> io::Result<TsInfo> {
    // struct ethtool_ts_info { u32 cmd, so_timestamping; s32 phc_index; u32 tx_types;
    //   u32 tx_reserved[3]; u32 rx_filters; u32 rx_reserved[3]; }
    let mut buf = [0u8; 44];
    buf[0..4].copy_from_slice(&ETHTOOL_GET_TS_INFO.to_ne_bytes());
    if_ioctl(ifname, SIOCETHTOOL, &mut buf)?;
    let u = |o: usize| u32::from_ne_bytes(buf[o..o + 4].try_into().unwrap_or([0; 4]));
    let phc = i32::from_ne_bytes(buf[8..12].try_into().unwrap_or([0; 4]));
    Ok(TsInfo {
        so_timestamping: u(4),
        phc_index: u32::try_from(phc).ok(),
        tx_types: u(12),
        rx_filters: u(28),
    })
}

/// The driver name of interface `ifname` (`ETHTOOL_GDRVINFO`), e.g. `veth`.
pub fn driver_name(ifname: &str) -> io::Result<String> {
    let mut buf = [0u8; 196];
    buf[0..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
    if_ioctl(ifname, SIOCETHTOOL, &mut buf)?;
    let d = &buf[4..36];
    let end = d.iter().position(|&c| c == 0).unwrap_or(d.len());
    Ok(String::from_utf8_lossy(&d[..end]).into_owned())
}

/// Turns on hardware timestamping of all TX packets and all RX packets on `ifname`
/// (`SIOCSHWTSTAMP` with `HWTSTAMP_TX_ON`, `HWTSTAMP_FILTER_ALL`); needs `CAP_NET_ADMIN`.
/// Returns the RX filter the driver actually applied.
pub fn enable_hw_timestamping(ifname: &str) -> io::Result<i32> {
    // struct hwtstamp_config { int flags; int tx_type; int rx_filter; }
    let mut buf = [0u8; 12];
    buf[4..8].copy_from_slice(&1i32.to_ne_bytes());
    buf[8..12].copy_from_slice(&1i32.to_ne_bytes());
    if_ioctl(ifname, SIOCSHWTSTAMP, &mut buf)?;
    Ok(i32::from_ne_bytes(buf[8..12].try_into().unwrap_or([0; 4])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_no_hardware_timestamping() {
        let info = ts_info("lo").unwrap();
        assert!(!info.hardware_capable());
        assert!(info.capability_names().contains(&"software-receive"));
        assert!(ts_info("no-such-if0").is_err());
        assert!(ts_info("").is_err());
    }
}
