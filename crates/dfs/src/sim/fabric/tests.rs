//! Validation of the fabric on small Dragonflies: shapes, not exact numbers (docs/dfs.md,
//! "Dragonfly fabric: validation", has the numbers these runs give).

use super::traffic::{self, Accepted, Load, Pattern};
use super::*;

/// 4 groups of 8 routers (4 × 2) with 2 nodes each: 64 nodes; one global link per router,
/// so 2 links between each pair of groups — global bandwidth is the scarce resource, as in
/// the Dragonfly papers' balanced-at-saturation configurations.
fn small(routing: Routing) -> FabricParams {
    FabricParams {
        nodes_per_router: 2,
        chassis_routers: 4,
        group_chassis: 2,
        global_per_router: 1,
        routing,
        ..FabricParams::default()
    }
}

fn point(routing: Routing, pattern: Pattern, offered: f64) -> Accepted {
    traffic::run(
        small(routing),
        &Load {
            nodes: 64,
            node_gbs: 4.0,
            offered,
            msg_bytes: 16 * 1024,
            duration_ns: 120_000,
            pattern,
            seed: 7,
        },
    )
    .unwrap()
}

fn curve(routing: Routing, pattern: Pattern) -> Vec<(f64, Accepted)> {
    [0.1, 0.3, 0.6, 0.9, 1.0]
        .iter()
        .map(|&o| (o, point(routing, pattern, o)))
        .collect()
}

fn print(name: &str, c: &[(f64, Accepted)]) {
    for (o, a) in c {
        eprintln!(
            "{name}: offered {o:.2} accepted {:.3} latency {:.1} us",
            a.accepted,
            a.mean_latency_ns / 1e3
        );
    }
}

/// Linear (accepted ≈ offered) at low load, then a plateau: accepted stops following the
/// offered load and latency grows.
fn assert_linear_then_saturating(c: &[(f64, Accepted)]) {
    for (o, a) in &c[..2] {
        assert!(
            (a.accepted - o).abs() < 0.15 * o,
            "not linear at {o}: {a:?}"
        );
    }
    for w in c.windows(2) {
        assert!(
            w[1].1.accepted > w[0].1.accepted - 0.05,
            "throughput collapsed: {w:?}"
        );
    }
    let (o, last) = c[c.len() - 1];
    assert!(last.accepted < 0.9 * o, "no saturation: {last:?}");
    assert!(last.mean_latency_ns > 3.0 * c[0].1.mean_latency_ns);
}

#[test]
fn uniform_random_is_linear_then_saturates() {
    let c = curve(Routing::Minimal, Pattern::UniformRandom);
    print("uniform random, minimal", &c);
    assert_linear_then_saturating(&c);
}

#[test]
fn all_to_all_is_linear_then_saturates() {
    let c = curve(Routing::Ugal, Pattern::AllToAll);
    print("all-to-all, ugal", &c);
    assert_linear_then_saturating(&c);
}

#[test]
fn ugal_beats_minimal_on_next_group_traffic() {
    let min = point(Routing::Minimal, Pattern::NextGroup, 0.6);
    let ugal = point(Routing::Ugal, Pattern::NextGroup, 0.6);
    eprintln!("next group at 0.6: minimal {min:?}, ugal {ugal:?}");
    // minimal: 16 nodes share 2 global links (2 × 4.7 GB/s of 64 GB/s offered)
    assert!(min.accepted < 0.25, "{min:?}");
    assert!(ugal.accepted > 1.5 * min.accepted, "{ugal:?} vs {min:?}");
    // and on benign traffic UGAL costs (almost) nothing
    let m = point(Routing::Minimal, Pattern::UniformRandom, 0.3);
    let u = point(Routing::Ugal, Pattern::UniformRandom, 0.3);
    assert!(u.accepted > 0.9 * m.accepted, "{u:?} vs {m:?}");
}

/// Backlogged messages from `sources` to their destinations; the victim's (first pair)
/// bytes delivered by `until`.
fn victim_rate(p: FabricParams, pairs: &[(usize, usize)], until: i64) -> f64 {
    let mut f = Fabric::new(p, vec![4.0; 64], vec![4.0; 64], 1).unwrap();
    let msg = 64 * 1024;
    let mut done = Vec::new();
    for (k, &(s, d)) in pairs.iter().enumerate() {
        f.start(s, d, msg, (k, 0), 0);
    }
    let mut victim = 0u64;
    while let Some(t) = f.next_time() {
        if t > until {
            break;
        }
        f.advance(t, &mut done);
        for c in done.drain(..) {
            let (s, d) = pairs[c.tag.0];
            if c.tag.0 == 0 {
                victim += msg;
            }
            f.start(s, d, msg, (c.tag.0, c.tag.1 + 1), t);
        }
    }
    victim as f64 / until as f64
}

/// The victim's rate alone, sharing the incast's path, and apart from it.
fn incast(p: FabricParams) -> (f64, f64, f64) {
    // routers hold nodes (2r, 2r+1); routers 0..4 are one chassis (rank-1 all-to-all).
    // victim: node 0 (router 0) -> node 2 (router 1). Incast: node 1 (router 0, same
    // rank-1 link 0->1 as the victim) and nodes on routers 2..5 -> node 3 (router 1).
    let victim = (0, 2);
    let alone = victim_rate(p, &[victim], 300_000);
    let incast: Vec<(usize, usize)> = std::iter::once(victim)
        .chain([1, 4, 5, 6, 7, 8, 9, 10, 11].iter().map(|&s| (s, 3)))
        .collect();
    let shared = victim_rate(p, &incast, 300_000);
    // control: the same incast, victim going to a node on another router (no shared link)
    let control: Vec<(usize, usize)> = std::iter::once((0, 12))
        .chain(incast[1..].iter().copied())
        .collect();
    let apart = victim_rate(p, &control, 300_000);
    eprintln!(
        "window {}: victim GB/s alone {alone:.2}, sharing the incast's path {shared:.2}, apart {apart:.2}",
        p.alloc_window
    );
    assert!(
        alone > 3.0,
        "an idle fabric should carry the NIC rate: {alone}"
    );
    assert!(
        apart > 0.8 * alone,
        "victim off the tree slowed too: {apart} vs {alone}"
    );
    (alone, shared, apart)
}

#[test]
fn incast_slows_a_victim_sharing_its_path() {
    // strict FIFOs: the incast's packets at the head of router 1's input block the victim's
    let (alone, shared, _) = incast(FabricParams {
        alloc_window: 1,
        ..small(Routing::Minimal)
    });
    assert!(
        shared < 0.6 * alone,
        "no head-of-line blocking: {shared} vs {alone}"
    );
    // the allocator may pass blocked packets, but the incast still holds the shared
    // buffer's credits on the link they share (the congestion tree)
    let (alone, shared, _) = incast(small(Routing::Minimal));
    assert!(
        shared < 0.85 * alone,
        "no congestion tree: {shared} vs {alone}"
    );
}

#[test]
fn the_simulator_runs_on_the_fabric_deterministically() {
    use crate::params::Mode;
    use crate::sim::{run, SimConfig};
    // node stalls (on by default) and the speed spread act above the network: they must
    // reach the fabric's runs as they reach the fluid model's
    for mode in [Mode::BestEffort, Mode::Dfs, Mode::Flesnet] {
        let mut cfg = SimConfig::new(8, 8, mode);
        cfg.time_slices = 400;
        cfg.params.ts_per_intvl = 40;
        cfg.speed_spread = 0.1;
        cfg.fabric = Some(small(Routing::Ugal));
        assert!(cfg.stalls.is_some());
        let a = run(&cfg).unwrap().data;
        let b = run(&cfg).unwrap().data;
        assert!(
            a.complete,
            "{mode:?} did not build or discard every time-slice"
        );
        assert_eq!(a.completion_ms, b.completion_ms);
        assert_eq!(a.events, b.events);
        let calm = run(&SimConfig {
            stalls: None,
            speed_spread: 0.0,
            ..cfg.clone()
        })
        .unwrap()
        .data;
        assert_ne!(
            (a.events, a.duration_ms),
            (calm.events, calm.duration_ms),
            "{mode:?}: stalls and speed spread changed nothing on the fabric"
        );
        let fluid = run(&SimConfig {
            fabric: None,
            ..cfg.clone()
        })
        .unwrap()
        .data;
        // 64 KiB contributions are 16 packets of several hops each
        assert!(
            a.events > 10 * fluid.events,
            "{} vs {}",
            a.events,
            fluid.events
        );
        // the fabric's links never carry more than the NICs offer
        assert!(
            a.bandwidth_gbs <= 8.0 * cfg.net.inj_gbs,
            "{}",
            a.bandwidth_gbs
        );
    }
    let mut cfg = SimConfig::new(8, 8, Mode::Dfs);
    cfg.fabric = Some(FabricParams {
        global_per_router: 0,
        ..small(Routing::Minimal)
    });
    cfg.topology.inputs = 20; // 28 nodes: two groups of 16 without global links
    let e = run(&cfg).unwrap_err();
    assert!(e.to_string().contains("--dragonfly-shape"), "{e}");
}
