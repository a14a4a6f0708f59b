//! Exploratory run: `cargo run --release -p latlab-dfs --example simrun -- I C mode ts [drop]`.
use latlab_dfs::sim::{self, BandwidthDrop, DropWindow, SimConfig};
use latlab_dfs::Mode;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let i: usize = a[1].parse().unwrap();
    let c: usize = a[2].parse().unwrap();
    let mode = if a[3] == "dfs" {
        Mode::Dfs
    } else {
        Mode::BestEffort
    };
    let mut cfg = SimConfig::new(i, c, mode);
    cfg.time_slices = a[4].parse().unwrap();
    if a.len() > 5 {
        cfg.drops.push(BandwidthDrop {
            window: DropWindow::Intervals {
                first: 15,
                last: 25,
            },
            factor: 0.75,
        });
    }
    let t = std::time::Instant::now();
    let o = sim::run(&cfg).unwrap();
    let d = &o.data;
    println!(
        "wall {:?} events {} complete {} dur {:.2} ms",
        t.elapsed(),
        d.events,
        d.complete,
        d.duration_ms
    );
    println!(
        "completion ms {:?} var {:.4}",
        d.completion_ms, d.completion_var_ms2
    );
    println!(
        "bw {:.1} steady {:.1} nominal {:.1}",
        d.bandwidth_gbs, d.steady_bandwidth_gbs, d.nominal_gbs
    );
    println!("compute {:?}\nie {:?}\ndde {:?}", d.compute, d.ie, d.dde);
    for r in &d.intervals {
        println!(
            "{:3} prop {:?} act {:.3} spread {:.3} ssu {} drop {}",
            r.index,
            r.proposed_ms.map(|v| (v * 1000.0).round() / 1000.0),
            r.actual_ms,
            r.start_spread_ms,
            r.speedup,
            r.dropped
        );
    }
    let n = d.fill.len();
    println!(
        "fill samples {n}; mean fill mid {:?}",
        d.fill.get(n / 2).map(|f| f.mean)
    );
}
