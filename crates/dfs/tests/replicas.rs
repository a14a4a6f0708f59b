//! Property: DDE replicas given the same history propose identical meta-data, whatever the
//! order in which the inputs' reports reach them and whatever constant offset separates
//! their clocks (§III-D: replicas never talk to each other, inputs take the first proposal).

use latlab_dfs::dde::Dde;
use latlab_dfs::ie::{ActualMeta, Proposal, Report};
use latlab_dfs::params::{DfsParams, SsuCriterion};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
struct Rep {
    report: Report,
    /// receive time at replica A
    lt: i64,
}

fn history() -> impl Strategy<Value = (usize, Vec<Rep>, u64)> {
    (1usize..5, 1u64..25, any::<u64>()).prop_flat_map(|(inputs, intervals, seed)| {
        let n = inputs * intervals as usize;
        (
            Just(inputs),
            prop::collection::vec(
                (
                    0i64..2_000_000,
                    900_000i64..1_300_000,
                    1_000i64..50_000,
                    0i64..5_000,
                ),
                n,
            ),
            Just(intervals),
            Just(seed),
        )
            .prop_map(|(inputs, raw, intervals, seed)| {
                let mut reps = Vec::new();
                for j in 0..intervals {
                    for i in 0..inputs {
                        let (jit, dur, lat, extra) = raw[j as usize * inputs + i];
                        let start = j as i64 * 1_200_000 + jit;
                        let pd = (j >= 2).then_some(1_000_000 + (seed % 7) as i64 * 10_000);
                        reps.push(Rep {
                            report: Report {
                                input: i,
                                actual: ActualMeta {
                                    index: j,
                                    start_ts: 0,
                                    rounds: 1,
                                    start,
                                    duration: dur,
                                    proposed_duration: pd,
                                    proposed_start: pd.map(|_| start),
                                    median_latency: lat,
                                },
                                request: j + 2,
                            },
                            lt: 5_000_000 + start + dur + lat + extra,
                        });
                    }
                }
                (inputs, reps, seed)
            })
    })
}

/// Shuffles the inputs' reports while keeping each input's own reports in order.
fn interleave(reps: &[Rep], inputs: usize, seed: u64) -> Vec<Rep> {
    let mut queues: Vec<std::collections::VecDeque<Rep>> = vec![Default::default(); inputs];
    for r in reps {
        queues[r.report.input].push_back(r.clone());
    }
    let mut out = Vec::new();
    let mut s = seed | 1;
    while queues.iter().any(|q| !q.is_empty()) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let i = (s % inputs as u64) as usize;
        if let Some(r) = queues[i].pop_front() {
            out.push(r);
        }
    }
    out
}

fn run(dde: &mut Dde, reps: &[Rep], shift: i64) -> BTreeMap<(usize, u64), Proposal> {
    let mut sent = BTreeMap::new();
    for r in reps {
        for (i, p) in dde.on_report(&r.report, r.lt + shift) {
            sent.entry((i, p.index)).or_insert(p);
        }
    }
    sent
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn replicas_with_same_history_propose_identically(
        (inputs, reps, seed) in history(),
        shift in -1_000_000_000i64..1_000_000_000,
        hist_cnt in 1usize..6,
        mean in any::<bool>(),
    ) {
        let params = DfsParams {
            hist_cnt,
            ssu_criterion: if mean { SsuCriterion::MeanDeviation } else { SsuCriterion::Variance },
            ..DfsParams::default()
        };
        let mut a = Dde::new(inputs, params);
        let mut b = Dde::new(inputs, params);
        let sent_a = run(&mut a, &reps, 0);
        let sent_b = run(&mut b, &interleave(&reps, inputs, seed), shift);
        // what the inputs receive is identical (already in each input's clock)
        prop_assert_eq!(&sent_a, &sent_b);
        // and the replicas' own meta-data differ exactly by their clock offset
        prop_assert_eq!(a.proposals().len(), b.proposals().len());
        for (j, pa) in a.proposals() {
            let pb = b.proposals()[j];
            prop_assert_eq!(pa.start + shift, pb.start);
            prop_assert_eq!(pa.duration, pb.duration);
            prop_assert_eq!(pa.ssu.speedup, pb.ssu.speedup);
        }
        // every interval with a complete history window got a proposal
        let intervals = reps.len() as u64 / inputs as u64;
        prop_assert_eq!(a.counters().proposals, intervals);
        prop_assert_eq!(b.counters().proposals, intervals);
    }
}
