//! The generator's bookkeeping, pure and driven by times in ns since the run started (so it
//! is tested with made-up times): the open-loop cursor that says which request is due and
//! whether it had to wait for a connection ([`Pacer`]), and what every send and answer adds
//! to the histograms, counters and self-check samples ([`Recorder`]). Everything is
//! allocated in the constructors; recording is stores and histogram increments.

use crate::probe::checks::{GAP_CAP, MIN_INTERVAL_SAMPLES, WINDOW, WINDOWS};
use crate::probe::{Schedule, SEND_GRACE};
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::parse::Percentile;
use latlab_core::units::Nanos;
use serde::{Deserialize, Serialize};

/// The open-loop cursor over the schedule. A request is due once its scheduled time has
/// come; when no connection can take it, it waits (the cursor stays) and it and every
/// request that falls due before the backlog is cleared are *late*: sent as soon as a
/// connection frees, their latency still measured from their scheduled time.
///
/// The schedule closes at its deadline, [`SEND_GRACE`] after its end: a generator that fell
/// behind (a server slower than the rate, or a rate beyond the generator) sends nothing
/// after it, and what the schedule still held is counted unsent ([`Pacer::unsent`]), so the
/// run ends at its duration plus the drain whatever the rate.
pub struct Pacer {
    schedule: Schedule,
    next_ns: u64,
    end_ns: u64,
    deadline_ns: u64,
    closed: bool,
    blocked: bool,
}

impl Pacer {
    /// The cursor at the start of `schedule`, which ends (exclusive) at `end_ns`.
    pub fn new(mut schedule: Schedule, end_ns: u64) -> Pacer {
        let next_ns = schedule.next_offset_ns();
        Pacer {
            schedule,
            next_ns,
            end_ns,
            deadline_ns: end_ns.saturating_add(SEND_GRACE.get()),
            closed: false,
            blocked: false,
        }
    }

    /// The scheduled time of the next request, unless the schedule has ended or closed.
    pub fn next_ns(&self) -> Option<u64> {
        (!self.closed && self.next_ns < self.end_ns).then_some(self.next_ns)
    }

    /// The scheduled time of the next request if it is due at `now`; from the deadline on,
    /// none (the schedule closes).
    pub fn due(&mut self, now: u64) -> Option<u64> {
        if now >= self.deadline_ns {
            self.closed = true;
        }
        self.next_ns().filter(|&t| t <= now)
    }

    /// No connection could take the due request.
    pub fn block(&mut self) {
        self.blocked = true;
    }

    /// The due request went out at `now`; returns whether it was late.
    pub fn sent(&mut self, now: u64) -> bool {
        let late = self.blocked;
        self.next_ns = self.schedule.next_offset_ns();
        if self.next_ns > now {
            self.blocked = false;
        }
        late
    }

    /// Counts (and passes) the requests scheduled before the end that were never sent.
    pub fn unsent(&mut self) -> u64 {
        if self.next_ns >= self.end_ns {
            return 0;
        }
        self.next_ns = self.end_ns;
        1 + self.schedule.count_before(self.end_ns, u64::MAX)
    }
}

/// What a request was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// memcached get.
    Get,
    /// memcached set.
    Set,
    /// HTTP GET.
    Http,
}

/// A request in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    /// When it was scheduled, ns since the start.
    pub sched_ns: u64,
    /// When it was sent.
    pub sent_ns: u64,
    /// What it was.
    pub kind: Kind,
    /// UDP: its request id.
    pub id: u16,
}

/// Every request's fate. They add up: `scheduled = sent + unsent` and
/// `sent = answered + errors + timed_out + lost + unanswered` ([`Counters::balanced`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Requests the schedule held before its end.
    pub scheduled: u64,
    /// Requests sent.
    pub sent: u64,
    /// Of them, scheduled in the warm-up.
    pub sent_warmup: u64,
    /// Of them, sent late because every connection was busy when they fell due.
    pub late: u64,
    /// Requests answered without an error (latency recorded when measured).
    pub answered: u64,
    /// Of them, memcached gets that missed.
    pub misses: u64,
    /// Requests the server answered with an error.
    pub errors: u64,
    /// UDP requests unanswered after the timeout.
    pub timed_out: u64,
    /// Requests outstanding on a connection that closed or sent something unreadable.
    pub lost: u64,
    /// Requests still unanswered when the drain time ended.
    pub unanswered: u64,
    /// Requests scheduled before the end but never sent (the connections stayed busy, or
    /// every connection was gone).
    pub unsent: u64,
    /// Connections re-established after the server closed one.
    pub reconnects: u64,
    /// UDP datagrams that matched no request in flight (late answers after a timeout).
    pub stray: u64,
}

impl Counters {
    /// Whether every request is accounted for.
    pub fn balanced(&self) -> bool {
        self.scheduled == self.sent + self.unsent
            && self.sent
                == self.answered + self.errors + self.timed_out + self.lost + self.unanswered
    }

    /// Adds another thread's counters.
    pub fn add(&mut self, o: &Counters) {
        self.scheduled += o.scheduled;
        self.sent += o.sent;
        self.sent_warmup += o.sent_warmup;
        self.late += o.late;
        self.answered += o.answered;
        self.misses += o.misses;
        self.errors += o.errors;
        self.timed_out += o.timed_out;
        self.lost += o.lost;
        self.unanswered += o.unanswered;
        self.unsent += o.unsent;
        self.reconnects += o.reconnects;
        self.stray += o.stray;
    }

    /// As the result's counters: name and value.
    pub fn entries(&self) -> [(&'static str, u64); 13] {
        [
            ("scheduled", self.scheduled),
            ("sent", self.sent),
            ("sent_warmup", self.sent_warmup),
            ("late", self.late),
            ("answered", self.answered),
            ("misses", self.misses),
            ("errors", self.errors),
            ("timed_out", self.timed_out),
            ("lost", self.lost),
            ("unanswered", self.unanswered),
            ("unsent", self.unsent),
            ("reconnects", self.reconnects),
            ("stray", self.stray),
        ]
    }
}

/// Histogram names of a load result.
pub mod series {
    /// Latency from the scheduled send time (coordinated-omission free).
    pub const SCHED: &str = "request.sched";
    /// Latency from the actual send.
    pub const ACTUAL: &str = "request.actual";
    /// memcached gets, from the scheduled time.
    pub const GET: &str = "get.sched";
    /// memcached sets, from the scheduled time.
    pub const SET: &str = "set.sched";
    /// How late the generator sent (actual − scheduled).
    pub const LATENESS: &str = "generator.lateness";
    /// Every series, in the order tables show them.
    pub const ALL: [&str; 5] = [SCHED, ACTUAL, GET, SET, LATENESS];
}

/// The histograms, counters and samples of one generator thread.
pub struct Recorder {
    /// Histograms, named as [`series`].
    pub hists: Vec<(&'static str, LatencyHistogram)>,
    /// Every request's fate.
    pub counters: Counters,
    warmup_ns: u64,
    interval_ns: u64,
    interval: LatencyHistogram,
    interval_idx: u64,
    /// Medians of the measured intervals with enough samples, in time order.
    pub interval_medians: Vec<u64>,
    window: Vec<u64>,
    window_every: u64,
    answered_measured: u64,
    gaps: Vec<u64>,
    gap_stride: u64,
    prev_sent: u64,
    measured_sent: u64,
    first_sched: u64,
    last_sent: u64,
    /// The send time of the last request, warm-up or measured.
    last_any_sent: u64,
}

const IDX_SCHED: usize = 0;
const IDX_ACTUAL: usize = 1;
const IDX_GET: usize = 2;
const IDX_SET: usize = 3;
const IDX_LATENESS: usize = 4;

impl Recorder {
    /// An empty recorder for a run of `expected` measured requests after `warmup`, with
    /// stationarity intervals of `interval`.
    pub fn new(hist: HistConfig, warmup: Nanos, interval: Nanos, expected: u64) -> Recorder {
        let h = || LatencyHistogram::new(hist).expect("validated histogram configuration");
        let blocks = expected.div_ceil(WINDOW as u64).max(1);
        Recorder {
            hists: series::ALL.iter().map(|n| (*n, h())).collect(),
            counters: Counters::default(),
            warmup_ns: warmup.get(),
            interval_ns: interval.get().max(1),
            interval: h(),
            interval_idx: 0,
            interval_medians: Vec::with_capacity((expected.min(1 << 20) as usize).min(100_000)),
            window: Vec::with_capacity(WINDOW * WINDOWS),
            window_every: blocks.div_ceil(WINDOWS as u64).max(1),
            answered_measured: 0,
            gaps: Vec::with_capacity(GAP_CAP),
            gap_stride: expected.div_ceil(GAP_CAP as u64).max(1),
            prev_sent: 0,
            measured_sent: 0,
            first_sched: 0,
            last_sent: 0,
            last_any_sent: 0,
        }
    }

    /// A request scheduled at `sched` went out at `sent`, `late` as the pacer said.
    pub fn sent(&mut self, sched: u64, sent: u64, late: bool) {
        let c = &mut self.counters;
        c.scheduled += 1;
        c.sent += 1;
        c.late += u64::from(late);
        self.hists[IDX_LATENESS]
            .1
            .record(Nanos(sent.saturating_sub(sched)));
        self.last_any_sent = sent;
        if sched < self.warmup_ns {
            c.sent_warmup += 1;
            return;
        }
        if self.measured_sent == 0 {
            self.first_sched = sched;
        } else if self.measured_sent % self.gap_stride == 0 && self.gaps.len() < GAP_CAP {
            self.gaps.push(sent.saturating_sub(self.prev_sent));
        }
        self.prev_sent = sent;
        self.last_sent = sent;
        self.measured_sent += 1;
    }

    /// `r` was answered at `now` with `a`.
    pub fn answered(&mut self, r: &Req, now: u64, a: super::reply::Answer) {
        if a.error {
            self.counters.errors += 1;
            return;
        }
        self.counters.answered += 1;
        self.counters.misses += u64::from(a.miss);
        if r.sched_ns < self.warmup_ns {
            return;
        }
        let lat = now.saturating_sub(r.sched_ns);
        self.hists[IDX_SCHED].1.record(Nanos(lat));
        self.hists[IDX_ACTUAL]
            .1
            .record(Nanos(now.saturating_sub(r.sent_ns)));
        match r.kind {
            Kind::Get => self.hists[IDX_GET].1.record(Nanos(lat)),
            Kind::Set => self.hists[IDX_SET].1.record(Nanos(lat)),
            Kind::Http => {}
        }
        let idx = (r.sched_ns - self.warmup_ns) / self.interval_ns;
        if idx > self.interval_idx {
            self.close_interval();
            self.interval_idx = idx;
        }
        self.interval.record(Nanos(lat));
        let k = self.answered_measured;
        if (k / WINDOW as u64) % self.window_every == 0
            && self.window.len() < self.window.capacity()
        {
            self.window.push(lat);
        }
        self.answered_measured += 1;
    }

    fn close_interval(&mut self) {
        if self.interval.count() >= MIN_INTERVAL_SAMPLES
            && self.interval_medians.len() < self.interval_medians.capacity()
        {
            self.interval_medians
                .push(self.interval.value_at(Percentile::LADDER[0]));
        }
        self.interval.reset();
    }

    /// Ends the run: the last interval closes; `unsent` and `unanswered` are counted.
    pub fn finish(&mut self, unsent: u64, unanswered: u64) {
        self.close_interval();
        self.counters.scheduled += unsent;
        self.counters.unsent += unsent;
        self.counters.unanswered += unanswered;
    }

    /// The sampled gaps between measured sends, ns.
    pub fn gaps_ns(&self) -> Vec<f64> {
        self.gaps.iter().map(|&g| g as f64).collect()
    }

    /// The latency windows for the independence check (consecutive answers).
    pub fn windows(&self) -> &[u64] {
        &self.window
    }

    /// Measured sends, the scheduled time of the first and the send time of the last.
    pub fn send_span(&self) -> (u64, u64, u64) {
        (self.measured_sent, self.first_sched, self.last_sent)
    }

    /// When the last request of any phase went out, ns since the start.
    pub fn last_send_ns(&self) -> u64 {
        self.last_any_sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Arrivals;
    use crate::rpc::reply::Answer;

    fn hist() -> HistConfig {
        HistConfig {
            lowest_ns: 1,
            highest_ns: 10_000_000_000,
            sigfig: 3,
        }
    }

    /// One connection that takes one request at a time and a server that answers each
    /// after `service` ns: a simulated run on made-up times.
    fn simulate(gap: u64, service: u64, end: u64) -> Recorder {
        simulate_until(gap, service, end, end + 10 * service)
    }

    /// [`simulate`], the loop running until `until` (ns).
    fn simulate_until(gap: u64, service: u64, end: u64, until: u64) -> Recorder {
        let milli = 1_000_000_000_000 / gap;
        let mut pacer = Pacer::new(Schedule::of(Arrivals::Constant, milli, 1), end);
        let mut rec = Recorder::new(hist(), Nanos(0), Nanos(1_000_000), end / gap);
        let mut busy: Option<(Req, u64)> = None;
        let mut now = 0;
        while now < until {
            if let Some((r, done)) = busy {
                if done <= now {
                    rec.answered(&r, now, Answer::OK);
                    busy = None;
                }
            }
            while let Some(sched) = pacer.due(now) {
                if busy.is_some() {
                    pacer.block();
                    break;
                }
                let late = pacer.sent(now);
                rec.sent(sched, now, late);
                let r = Req {
                    sched_ns: sched,
                    sent_ns: now,
                    kind: Kind::Get,
                    id: 0,
                };
                busy = Some((r, now + service));
            }
            now += 100;
        }
        let unanswered = u64::from(busy.is_some());
        rec.finish(pacer.unsent(), unanswered);
        rec
    }

    #[test]
    fn a_server_that_keeps_up_has_no_late_requests() {
        let rec = simulate(10_000, 2_000, 1_000_000);
        let c = &rec.counters;
        assert!(c.balanced(), "{c:?}");
        assert_eq!((c.scheduled, c.late, c.unsent), (100, 0, 0));
        assert_eq!(rec.hists[IDX_SCHED].1.max(), 2_000);
    }

    #[test]
    fn a_slow_server_makes_late_requests_measured_from_their_schedule() {
        // one request every 10 µs, each takes 25 µs: the backlog grows
        let rec = simulate(10_000, 25_000, 1_000_000);
        let c = &rec.counters;
        assert!(c.balanced(), "{c:?}");
        assert_eq!(c.scheduled, 100);
        assert!(c.late > 0 && c.unsent > 0, "{c:?}");
        assert_eq!(c.sent, c.answered + c.unanswered);
        // queueing: the last answered request waited far longer than one service time
        let h = &rec.hists[IDX_SCHED].1;
        assert!(h.max() > 10 * 25_000, "{}", h.max());
        let actual = &rec.hists[IDX_ACTUAL].1;
        assert!(
            actual.equivalent(actual.max(), 25_000),
            "from the actual send there is no queue: {}",
            actual.max()
        );
    }

    /// A server ten times slower than the rate, simulated long past the end: nothing goes
    /// out after the deadline, and the rest of the schedule is counted unsent.
    #[test]
    fn a_schedule_closes_at_its_deadline_and_counts_the_rest_unsent() {
        // one request every 10 µs for 20 ms (2 000), each served in 1 ms: 20 fit in the
        // schedule, a hundred more before the deadline
        let (gap, service, end) = (10_000, 1_000_000, 20_000_000);
        let rec = simulate_until(gap, service, end, end + 4 * SEND_GRACE.get());
        let c = &rec.counters;
        assert!(c.balanced(), "{c:?}");
        assert_eq!(c.scheduled, 2_000);
        let deadline = end + SEND_GRACE.get();
        let (_, _, last_sent) = rec.send_span();
        assert!(last_sent < deadline, "{last_sent}");
        // one send per service time until the deadline, the rest unsent
        assert_eq!(c.sent, deadline / service, "{c:?}");
        assert_eq!(c.unsent, 2_000 - c.sent);
        // a closed schedule has no next request and nothing more to count
        let mut p = Pacer::new(Schedule::of(Arrivals::Constant, 100_000_000, 1), end);
        assert_eq!(p.due(deadline - 1), Some(0));
        assert_eq!(p.due(deadline), None);
        assert_eq!(p.next_ns(), None);
        assert_eq!(p.unsent(), 2_000);
        assert_eq!(p.unsent(), 0);
    }

    #[test]
    fn errors_and_warmup_are_counted_not_recorded() {
        let mut rec = Recorder::new(hist(), Nanos(1_000), Nanos(1_000_000), 10);
        let r = |s| Req {
            sched_ns: s,
            sent_ns: s,
            kind: Kind::Set,
            id: 0,
        };
        rec.sent(500, 500, false);
        rec.sent(2_000, 2_100, true);
        rec.sent(3_000, 3_000, false);
        rec.answered(&r(500), 900, Answer::OK);
        rec.answered(
            &r(2_000),
            2_500,
            Answer {
                miss: true,
                ..Answer::OK
            },
        );
        rec.answered(
            &r(3_000),
            3_100,
            Answer {
                error: true,
                ..Answer::OK
            },
        );
        rec.finish(2, 0);
        let c = &rec.counters;
        assert!(c.balanced(), "{c:?}");
        assert_eq!(
            (
                c.sent_warmup,
                c.late,
                c.answered,
                c.misses,
                c.errors,
                c.unsent
            ),
            (1, 1, 2, 1, 1, 2)
        );
        assert_eq!(rec.hists[IDX_SCHED].1.count(), 1);
        assert_eq!(rec.hists[IDX_SET].1.count(), 1);
        assert_eq!(rec.hists[IDX_LATENESS].1.count(), 3);
    }
}
