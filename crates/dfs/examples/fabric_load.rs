//! Throughput against offered load of the packet-level Dragonfly fabric, and its speed.
//!
//! `cargo run -p latlab-dfs --example fabric_load -- [NODES] [SHAPE n:RxC:G] [DURATION_US] [MSG_BYTES]
//! [BUFFER_PACKETS]`
//! prints, per pattern and routing, accepted throughput (share of injection bandwidth),
//! mean message latency and fabric events per wall-clock second (docs/benchmarks.md).

use latlab_dfs::sim::fabric::traffic::{run, Load, Pattern};
use latlab_dfs::sim::fabric::{FabricParams, Routing};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nodes: usize = args.first().map_or(128, |s| s.parse().expect("NODES"));
    let shape: Vec<usize> = args
        .get(1)
        .map_or("4:16x6:10", |s| s.as_str())
        .split([':', 'x'])
        .map(|v| v.parse().expect("SHAPE n:RxC:G"))
        .collect();
    let dur_us: i64 = args.get(2).map_or(200, |s| s.parse().expect("DURATION_US"));
    let msg: u64 = args.get(3).map_or(65536, |s| s.parse().expect("MSG_BYTES"));
    let buffer: u32 = args
        .get(4)
        .map_or(4, |s| s.parse().expect("BUFFER_PACKETS"));
    for pattern in [
        Pattern::UniformRandom,
        Pattern::AllToAll,
        Pattern::NextGroup,
    ] {
        for routing in [Routing::Minimal, Routing::Ugal] {
            let p = FabricParams {
                nodes_per_router: shape[0],
                chassis_routers: shape[1],
                group_chassis: shape[2],
                global_per_router: shape[3],
                routing,
                buffer_packets: buffer,
                alloc_window: buffer,
                ..FabricParams::default()
            };
            for offered in [0.1, 0.3, 0.5, 0.7, 0.9, 1.0] {
                let wall = std::time::Instant::now();
                let a = run(
                    p,
                    &Load {
                        nodes,
                        node_gbs: 4.0,
                        offered,
                        msg_bytes: msg,
                        duration_ns: dur_us * 1000,
                        pattern,
                        seed: 1,
                    },
                )
                .expect("fabric");
                let s = wall.elapsed().as_secs_f64();
                println!(
                    "{pattern:?}\t{routing:?}\toffered {offered:.1}\taccepted {:.3}\tlatency {:.1} us\t{:.2} M events/s",
                    a.accepted,
                    a.mean_latency_ns / 1e3,
                    a.events as f64 / s / 1e6
                );
            }
        }
    }
}
