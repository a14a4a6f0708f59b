//! The `dpdk-testpmd` command line of the testbed's DPDK network function (pure).

use serde::{Deserialize, Serialize};

/// DPDK's poll-mode driver for the two veths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pmd {
    /// `net_af_packet`: a `PACKET_MMAP` ring per port (the kernel stack still sees every
    /// frame; the NF namespace does not forward, so it drops them).
    AfPacket,
    /// `net_af_xdp`: an AF_XDP socket per port, the PMD's XDP program steers every frame
    /// of the veth to it (copy mode on veth).
    AfXdp,
}

impl Pmd {
    /// The name of the vdev driver.
    pub fn driver(self) -> &'static str {
        match self {
            Pmd::AfPacket => "net_af_packet",
            Pmd::AfXdp => "net_af_xdp",
        }
    }

    /// The name on the command line and in results (`af-packet`, `af-xdp`).
    pub fn name(self) -> &'static str {
        match self {
            Pmd::AfPacket => "af-packet",
            Pmd::AfXdp => "af-xdp",
        }
    }
}

/// Everything that goes on testpmd's command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestpmdConfig {
    /// The poll-mode driver.
    pub pmd: Pmd,
    /// Interface of port 0 (frames received there leave by port 1) and of port 1.
    pub ports: [String; 2],
    /// Destination MAC of the frames each port sends (`--eth-peer`): port 0's peer gets
    /// what port 1 received, port 1's peer what port 0 received.
    pub peers: [String; 2],
    /// CPU of the forwarding lcore (it busy-polls both ports).
    pub fwd_cpu: u32,
    /// CPU of the main lcore (it sleeps on its standard input while forwarding runs).
    pub main_cpu: u32,
    /// EAL `--file-prefix`: the runtime directory under `/var/run/dpdk/`, so that two
    /// instances never share one.
    pub file_prefix: String,
    /// Memory for the EAL in MiB (`-m`, anonymous memory: `--no-huge`).
    pub memory_mib: u32,
    /// mbufs in the pool (AF_XDP fills a 2048-descriptor ring per port).
    pub mbufs: u32,
    /// Frames per burst (`--burst`).
    pub burst: u32,
}

impl TestpmdConfig {
    /// The testbed's forwarder: port 0 on `port_a` (from the generator's port A), port 1
    /// on `port_b` (to the generator's port B), forwarding pinned to `fwd_cpu`, the
    /// sleeping main lcore on the same CPU.
    pub fn new(pmd: Pmd, ports: [String; 2], peers: [String; 2], fwd_cpu: u32) -> Self {
        TestpmdConfig {
            pmd,
            ports,
            peers,
            fwd_cpu,
            main_cpu: fwd_cpu,
            file_prefix: format!("latlab-{}", std::process::id()),
            memory_mib: 256,
            mbufs: 8192,
            burst: 32,
        }
    }

    /// The runtime directory EAL makes for `--file-prefix` as root (it leaves it behind
    /// when it exits; latlab removes it).
    pub fn runtime_dir(&self) -> std::path::PathBuf {
        std::path::Path::new("/var/run/dpdk").join(&self.file_prefix)
    }

    /// testpmd's arguments (EAL's, then `--`, then the application's): no hugepages and
    /// no PCI devices, two vdevs on the veths, MAC forwarding (each frame's destination
    /// MAC set to the peer of the port it leaves by, its source MAC to that port's own:
    /// io forwarding leaves frames unchanged, and the generator's port B would drop a
    /// frame addressed to the forwarder's port A), started at once, without a prompt.
    pub fn args(&self) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--lcores".into(),
            format!("0@{},1@{}", self.main_cpu, self.fwd_cpu),
            "--no-huge".into(),
            "-m".into(),
            self.memory_mib.to_string(),
            "--no-pci".into(),
            "--file-prefix".into(),
            self.file_prefix.clone(),
            "--log-level".into(),
            "lib.eal:error".into(),
        ];
        for (k, iface) in self.ports.iter().enumerate() {
            v.push("--vdev".into());
            v.push(format!("{}{k},iface={iface}", self.pmd.driver()));
        }
        v.push("--".into());
        v.extend([
            "--forward-mode=mac".to_string(),
            format!("--eth-peer=0,{}", self.peers[0]),
            format!("--eth-peer=1,{}", self.peers[1]),
            format!("--total-num-mbufs={}", self.mbufs),
            format!("--burst={}", self.burst),
            "--nb-cores=1".into(),
            "--no-lsc-interrupt".into(),
            "--auto-start".into(),
        ]);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pmd: Pmd) -> TestpmdConfig {
        let mut c = TestpmdConfig::new(
            pmd,
            ["latlab-na".into(), "latlab-nb".into()],
            ["aa:aa:aa:aa:aa:01".into(), "bb:bb:bb:bb:bb:02".into()],
            1,
        );
        c.file_prefix = "latlab-t".into();
        c
    }

    #[test]
    fn the_command_line_pins_forwards_by_mac_and_uses_the_veths() {
        let a = cfg(Pmd::AfPacket).args();
        let s = a.join(" ");
        assert!(
            s.starts_with("--lcores 0@1,1@1 --no-huge -m 256 --no-pci --file-prefix latlab-t"),
            "{s}"
        );
        assert!(
            s.contains(
                "--vdev net_af_packet0,iface=latlab-na --vdev net_af_packet1,iface=latlab-nb --"
            ),
            "{s}"
        );
        let app = &a[a.iter().position(|w| w == "--").unwrap() + 1..];
        assert!(app.contains(&"--forward-mode=mac".to_string()));
        assert!(app.contains(&"--eth-peer=0,aa:aa:aa:aa:aa:01".to_string()));
        assert!(app.contains(&"--eth-peer=1,bb:bb:bb:bb:bb:02".to_string()));
        assert!(app.contains(&"--auto-start".to_string()));
        assert!(
            !app.iter()
                .any(|w| w.starts_with("--stats-period") || w == "-i"),
            "no prompt and no periodic screen: testpmd waits on its standard input"
        );
        let x = cfg(Pmd::AfXdp).args().join(" ");
        assert!(
            x.contains("--vdev net_af_xdp0,iface=latlab-na --vdev net_af_xdp1,iface=latlab-nb"),
            "{x}"
        );
    }

    #[test]
    fn main_and_forwarding_lcores_follow_the_cpus() {
        let mut c = cfg(Pmd::AfPacket);
        c.main_cpu = 0;
        c.fwd_cpu = 3;
        assert_eq!(c.args()[1], "0@0,1@3");
        assert_eq!(Pmd::AfXdp.name(), "af-xdp");
        assert_eq!(
            c.runtime_dir(),
            std::path::Path::new("/var/run/dpdk/latlab-t")
        );
    }
}
