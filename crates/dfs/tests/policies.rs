//! The simulator's node stalls, speed spread and FLESnet policy: FLESnet builds or discards
//! every time-slice, discards only when the detector outruns the builders, stalls are
//! reproducible from the seed, and stragglers drive best-effort inputs apart.

use latlab_dfs::sim::{self, NoiseTrace, SimConfig};
use latlab_dfs::Mode;

fn small(mode: Mode) -> SimConfig {
    let mut c = SimConfig::new(4, 4, mode);
    c.params.ts_per_intvl = 40;
    c.time_slices = 800;
    c
}

#[test]
fn flesnet_builds_or_discards_every_time_slice() {
    // at 50 % of nominal the builders keep up: nothing discarded, everything built
    let mut cfg = small(Mode::Flesnet);
    cfg.tsm.offered_load = 0.5;
    let d = sim::run(&cfg).unwrap().data;
    assert!(d.complete, "{d:?}");
    assert_eq!((d.discarded, d.compute.completed), (0, 800));
    assert_eq!(d.compute.stored, 800 * 4);
    // at twice nominal the detector outruns the network: the manager discards
    cfg.tsm.offered_load = 2.0;
    cfg.tsm.max_in_flight = 2;
    let d = sim::run(&cfg).unwrap().data;
    assert!(d.complete, "{d:?}");
    assert!(d.discarded > 0, "nothing discarded at twice nominal");
    assert_eq!(d.compute.completed + d.discarded, 800);
    assert_eq!(d.compute.stored, d.compute.completed * 4);
}

#[test]
fn stalls_are_reproducible_and_change_the_run() {
    let mut cfg = small(Mode::BestEffort);
    cfg.stalls = None;
    let quiet = sim::run(&cfg).unwrap().data;
    // a heavy trace: 2,000 stalls per second of 50-100 µs (~15 % of the time)
    cfg.stalls = Some(
        NoiseTrace::parse_text("duration_ns 1000000000\n50000 100000 2000\n", "heavy").unwrap(),
    );
    let a = sim::run(&cfg).unwrap().data;
    let b = sim::run(&cfg).unwrap().data;
    assert_eq!(a, b, "same seed, same run");
    assert!(a.complete);
    assert_ne!(a.completion_ms, quiet.completion_ms);
    // stalled inputs send nothing meanwhile: the run takes longer than without stalls
    assert!(
        a.duration_ms > quiet.duration_ms,
        "{} vs {}",
        a.duration_ms,
        quiet.duration_ms
    );
    cfg.seed = 2;
    let c = sim::run(&cfg).unwrap().data;
    assert_ne!(
        a.completion_ms, c.completion_ms,
        "another seed, other stalls"
    );
}

#[test]
fn a_speed_spread_spreads_best_effort_completion() {
    let mut cfg = small(Mode::BestEffort);
    cfg.stalls = None;
    cfg.net.noise = 0.0;
    let even = sim::run(&cfg).unwrap().data;
    cfg.speed_spread = 0.3;
    let spread = sim::run(&cfg).unwrap().data;
    assert!(spread.complete);
    // the slowest input sets the pace; the others run ahead until credits stop them, so
    // their contributions arrive earlier and the completion duration grows
    assert!(
        spread.completion_ms.median > even.completion_ms.median,
        "{:?} vs {:?}",
        spread.completion_ms,
        even.completion_ms
    );
    assert!(spread.completion_halves_ms.is_some());
}

#[test]
fn a_warm_start_spreads_the_first_time_slices_and_changes_nothing_without_it() {
    for mode in [Mode::BestEffort, Mode::Dfs, Mode::Flesnet] {
        let mut cfg = small(mode);
        cfg.stalls = None;
        cfg.net.noise = 0.0;
        if mode == Mode::Flesnet {
            cfg.tsm.offered_load = 0.5;
        }
        let cold = sim::run(&cfg).unwrap().data;
        // an explicit 0 is the default: the same run, draw for draw
        cfg.start_spread_ns = 0;
        assert_eq!(
            sim::run(&cfg).unwrap().data.completion_ms,
            cold.completion_ms
        );
        cfg.start_spread_ns = 5_000_000;
        let warm = sim::run(&cfg).unwrap().data;
        assert!(warm.complete, "{mode:?}");
        // the first block's time-slices wait for inputs that start up to 5 ms late: its
        // longest completion is ms long, against the lockstep start's µs
        let first = |d: &latlab_dfs::sim::SimData| d.completion_blocks[0].max_ms;
        assert!(
            first(&warm) > 1.0 && first(&warm) > 10.0 * first(&cold),
            "{mode:?}: warm {} ms, cold {} ms",
            first(&warm),
            first(&cold)
        );
    }
}
