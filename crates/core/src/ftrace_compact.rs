//! Kernel trace pages decoded as they arrive into a compact store. Pure.
//!
//! Keeping `trace_pipe_raw`'s pages until a run ends costs memory in proportion to the
//! run (a busy 60 s run is gigabytes), and decoding them afterwards into events with
//! their own strings costs several times more. [`CompactDecoder`] takes the pages while
//! the run goes on, in chunks of any size, and keeps per event only what the attribution
//! reads: its timestamp (8 bytes) and the index of its *kind* (4 bytes). A kind is the
//! event's payload with every field that the attribution does not read zeroed
//! ([`KEPT_FIELDS`]; the timestamps, pointers and counters that differ from one event to
//! the next go), so the few thousand distinct kinds of a run (each IRQ's entry, each pair
//! of tasks a switch names, each hrtimer function) are stored once, and the payload
//! decodes later exactly as the full one would have.
//!
//! Feeding the same bytes in any chunking gives the same [`CompactTrace`]; lost-event
//! counts come from the pages' commit words as in [`crate::ftrace_raw::decode_page`].

use crate::ftrace_raw::{common_type, decode_page, EventFormat, PageLayout};
use std::collections::HashMap;

/// The fields the attribution reads, per event name; every other field of a payload
/// (except `common_type`) is zeroed before the payload is stored as a kind. Events not
/// listed keep only `common_type` (their name is all that is read).
pub const KEPT_FIELDS: &[(&str, &[&str])] = &[
    ("irq_handler_entry", &["irq", "name"]),
    ("irq_handler_exit", &["irq"]),
    ("softirq_entry", &["vec"]),
    ("softirq_exit", &["vec"]),
    ("nmi_handler", &["handler", "delta_ns"]),
    ("hrtimer_expire_entry", &["function"]),
    ("workqueue_execute_start", &["function"]),
    (
        "sched_switch",
        &[
            "prev_comm",
            "prev_pid",
            "prev_prio",
            "prev_state",
            "next_comm",
            "next_pid",
            "next_prio",
        ],
    ),
    ("sched_wakeup", &["comm", "pid", "prio", "target_cpu"]),
    ("napi_poll", &["dev_name", "work"]),
];

/// One kept field: where it is, and whether it is a `__data_loc` (whose string is kept
/// too).
#[derive(Clone, Copy, Debug)]
struct Keep {
    offset: usize,
    size: usize,
    data_loc: bool,
}

/// `payload` with every field but `common_type` and `keep` zeroed, into `out`.
fn project(payload: &[u8], keep: &[Keep], out: &mut Vec<u8>) {
    out.clear();
    out.resize(payload.len(), 0);
    let mut copy = |a: usize, n: usize| {
        if let Some(src) = payload.get(a..a + n) {
            out[a..a + n].copy_from_slice(src);
        }
    };
    copy(0, 2.min(payload.len()));
    for k in keep {
        copy(k.offset, k.size);
        if k.data_loc {
            if let Some(w) = payload.get(k.offset..k.offset + 4) {
                let loc = u32::from_le_bytes(w.try_into().expect("4 bytes"));
                copy((loc & 0xffff) as usize, (loc >> 16) as usize);
            }
        }
    }
}

/// One CPU's events, in the order its pages gave them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactCpu {
    /// The CPU.
    pub cpu: u32,
    /// Each event's timestamp (the trace clock: raw TSC with `x86-tsc`).
    pub tsc: Vec<u64>,
    /// Each event's kind, an index into [`CompactTrace::kinds`].
    pub kind: Vec<u32>,
}

/// What a [`CompactDecoder`] collected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactTrace {
    /// Per CPU, in the order the CPUs were given.
    pub cpus: Vec<CompactCpu>,
    /// The distinct kinds: payloads with the unread fields zeroed (see the module docs),
    /// each starting with its `common_type`.
    pub kinds: Vec<Vec<u8>>,
    /// Events lost, as the pages' commit words count them.
    pub lost: u64,
    /// Records of a `common_type` no format names, plus pages that ended early.
    pub malformed: u64,
}

impl CompactTrace {
    /// Events kept, all CPUs.
    pub fn events(&self) -> u64 {
        self.cpus.iter().map(|c| c.tsc.len() as u64).sum()
    }

    /// Bytes held (vectors' capacity and the kinds), for reports of memory use.
    pub fn heap_bytes(&self) -> usize {
        let per_cpu: usize = self
            .cpus
            .iter()
            .map(|c| c.tsc.capacity() * 8 + c.kind.capacity() * 4)
            .sum();
        per_cpu + self.kinds.iter().map(|k| k.capacity() + 24).sum::<usize>()
    }
}

/// Decodes pages as they arrive; see the module docs.
#[derive(Debug)]
pub struct CompactDecoder {
    layout: PageLayout,
    page_size: usize,
    keep: HashMap<u16, Vec<Keep>>,
    index: HashMap<Vec<u8>, u32>,
    out: CompactTrace,
    /// Per CPU (same order as `out.cpus`): the bytes of a page not yet complete.
    pending: Vec<Vec<u8>>,
    scratch: Vec<u8>,
}

impl CompactDecoder {
    /// A decoder for `cpus`' pages of `page_size` bytes, whose events `formats` name.
    pub fn new(
        layout: PageLayout,
        page_size: usize,
        formats: &[EventFormat],
        cpus: &[u32],
    ) -> CompactDecoder {
        let keep = formats
            .iter()
            .map(|f| {
                let names = KEPT_FIELDS
                    .iter()
                    .find(|(n, _)| *n == f.name)
                    .map_or(&[][..], |(_, k)| *k);
                let ks = names
                    .iter()
                    .filter_map(|n| f.field(n))
                    .map(|fd| Keep {
                        offset: fd.offset,
                        size: fd.size,
                        data_loc: fd.is_data_loc(),
                    })
                    .collect();
                (f.id, ks)
            })
            .collect();
        CompactDecoder {
            layout,
            page_size: page_size.max(layout.data_offset).max(1),
            keep,
            index: HashMap::new(),
            out: CompactTrace {
                cpus: cpus
                    .iter()
                    .map(|&cpu| CompactCpu {
                        cpu,
                        ..CompactCpu::default()
                    })
                    .collect(),
                ..CompactTrace::default()
            },
            pending: vec![Vec::new(); cpus.len()],
            scratch: Vec::with_capacity(128),
        }
    }

    /// The page size the byte stream is cut into.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Takes the next `bytes` of CPU `cpu`'s page stream (pages back to back, each
    /// [`CompactDecoder::page_size`] bytes; a chunk may end mid-page). Bytes of a CPU
    /// not given to [`CompactDecoder::new`] are counted as one malformed record.
    pub fn push(&mut self, cpu: u32, mut bytes: &[u8]) {
        let Some(i) = self.out.cpus.iter().position(|c| c.cpu == cpu) else {
            self.out.malformed += 1;
            return;
        };
        let ps = self.page_size;
        if !self.pending[i].is_empty() {
            let need = ps - self.pending[i].len();
            let take = need.min(bytes.len());
            self.pending[i].extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending[i].len() < ps {
                return;
            }
            let page = std::mem::take(&mut self.pending[i]);
            self.page(i, &page);
            self.pending[i] = page;
            self.pending[i].clear();
        }
        let mut pages = bytes.chunks_exact(ps);
        for page in &mut pages {
            self.page(i, page);
        }
        self.pending[i].extend_from_slice(pages.remainder());
    }

    fn page(&mut self, i: usize, page: &[u8]) {
        let Self {
            layout,
            keep,
            index,
            out,
            scratch,
            ..
        } = self;
        let CompactTrace {
            cpus,
            kinds,
            malformed,
            ..
        } = out;
        let c = &mut cpus[i];
        let info = decode_page(page, layout, &mut |tsc, payload| {
            let Some(k) = common_type(payload).and_then(|id| keep.get(&id)) else {
                *malformed += 1;
                return;
            };
            project(payload, k, scratch);
            let id = match index.get(scratch.as_slice()) {
                Some(&id) => id,
                None => {
                    let id = kinds.len() as u32;
                    kinds.push(scratch.clone());
                    index.insert(scratch.clone(), id);
                    id
                }
            };
            c.tsc.push(tsc);
            c.kind.push(id);
        });
        out.lost += info.lost;
        out.malformed += u64::from(info.truncated);
    }

    /// Events kept so far.
    pub fn events(&self) -> u64 {
        self.out.events()
    }

    /// Ends the stream: a CPU's incomplete last page is decoded as it is (its missing
    /// bytes read as padding), and the store is returned.
    pub fn finish(mut self) -> CompactTrace {
        for i in 0..self.pending.len() {
            if self.pending[i].is_empty() {
                continue;
            }
            let mut page = std::mem::take(&mut self.pending[i]);
            page.resize(self.page_size, 0);
            self.page(i, &page);
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftrace_raw::tests::Page;
    use crate::ftrace_raw::{MISSED_EVENTS, MISSED_STORED};
    use proptest::prelude::*;

    /// The common fields the tests use: the type, and the pid the store drops.
    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

    fn formats() -> Vec<EventFormat> {
        let f = |name: &str, id: u16, fields: &str| {
            EventFormat::parse(&format!(
                "name: {name}\nID: {id}\nformat:\n{COMMON}\n{fields}"
            ))
            .unwrap()
        };
        vec![
            f(
                "irq_handler_entry",
                225,
                "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
                 \tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n",
            ),
            f(
                "hrtimer_expire_entry",
                459,
                "\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\
                 \tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n\
                 \tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n",
            ),
            f(
                "local_timer_entry",
                165,
                "\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n",
            ),
        ]
    }

    /// An event of one of [`formats`]: `(delta, which, a, b)`.
    fn payload(which: u8, a: u32, b: u32) -> Vec<u8> {
        let mut p;
        match which % 4 {
            0 => {
                p = vec![0u8; 16];
                p[0..2].copy_from_slice(&225u16.to_le_bytes());
                p[8..12].copy_from_slice(&(a % 3).to_le_bytes());
                let name = format!("irq{}", a % 3);
                p[12..16].copy_from_slice(&(16u32 | ((name.len() as u32 + 1) << 16)).to_le_bytes());
                p.extend_from_slice(name.as_bytes());
                p.push(0);
            }
            1 => {
                p = vec![0u8; 32];
                p[0..2].copy_from_slice(&459u16.to_le_bytes());
                p[8..16].copy_from_slice(&u64::from(b).to_le_bytes()); // a pointer: dropped
                p[16..24].copy_from_slice(&u64::from(a).to_le_bytes()); // now: dropped
                p[24..32].copy_from_slice(&(0xffff_0000 + u64::from(a % 2)).to_le_bytes());
            }
            2 => {
                p = vec![0u8; 12];
                p[0..2].copy_from_slice(&165u16.to_le_bytes());
                p[8..12].copy_from_slice(&236u32.to_le_bytes());
            }
            _ => {
                p = vec![0u8; 8];
                p[0..2].copy_from_slice(&999u16.to_le_bytes()); // unknown: malformed
            }
        }
        p[4..8].copy_from_slice(&b.to_le_bytes()); // common_pid: dropped
        p
    }

    /// One 4 KiB page of events after `ts`, `lost` stored when non-zero.
    fn page(ts: u64, events: &[(u32, Vec<u8>)], lost: u64) -> Vec<u8> {
        let mut pg = Page::new(ts);
        for (delta, p) in events {
            pg.event(*delta, p);
        }
        match lost {
            0 => pg.finish(0, None),
            n => pg.finish(MISSED_EVENTS | MISSED_STORED, Some(n)),
        }
    }

    fn decoder() -> CompactDecoder {
        CompactDecoder::new(PageLayout::default(), 4096, &formats(), &[0, 3])
    }

    #[test]
    fn unread_fields_are_dropped_and_kinds_shared() {
        let mut d = decoder();
        let evs = vec![
            (1, payload(0, 1, 7)),
            (2, payload(0, 4, 8)), // same irq (4 % 3 == 1), other pid: same kind
            (3, payload(1, 3, 5)),
            (4, payload(1, 5, 6)), // same function (odd), other pointer/now: same kind
            (5, payload(2, 0, 0)),
            (6, payload(3, 0, 0)),
        ];
        d.push(3, &page(100, &evs, 9));
        d.push(7, &[0u8; 10]); // not a traced CPU
        let t = d.finish();
        assert_eq!(t.cpus[1].tsc, vec![101, 103, 106, 110, 115]);
        assert_eq!(t.cpus[1].kind, vec![0, 0, 1, 1, 2]);
        assert!(t.cpus[0].tsc.is_empty());
        assert_eq!((t.lost, t.malformed, t.kinds.len()), (9, 2, 3));
        // the IRQ kind keeps its number and its name, not the pid
        let k = &t.kinds[0];
        assert_eq!(&k[4..8], &[0, 0, 0, 0]);
        assert_eq!(&k[8..12], &1u32.to_le_bytes());
        assert_eq!(&k[16..20], b"irq1");
        // the hrtimer kind keeps the function only
        assert_eq!(&t.kinds[1][8..24], &[0u8; 16]);
    }

    /// Each event's timestamp and kind bytes.
    type Events = Vec<(u64, Vec<u8>)>;

    /// Per CPU, each event's timestamp and kind bytes; the loss and malformed counts.
    fn resolved(t: &CompactTrace) -> (Vec<Events>, u64, u64) {
        let cpus = t
            .cpus
            .iter()
            .map(|c| {
                c.tsc
                    .iter()
                    .zip(&c.kind)
                    .map(|(&ts, &k)| (ts, t.kinds[k as usize].clone()))
                    .collect()
            })
            .collect();
        (cpus, t.lost, t.malformed)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The same pages cut into any chunks, the CPUs' chunks interleaved (an
        /// incomplete last page included), give the same events as each CPU's whole
        /// stream pushed at once.
        #[test]
        fn any_chunking_gives_the_same_store(
            pages in proptest::collection::vec(
                (proptest::collection::vec((0u32..1000, 0u8..4, any::<u32>(), any::<u32>()), 0..60),
                 0u64..3, any::<bool>()),
                1..5),
            cuts in proptest::collection::vec(1usize..9000, 1..20),
            cut_tail in 0usize..4096,
        ) {
            let mut streams: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
            for (i, (evs, lost, other)) in pages.iter().enumerate() {
                let evs: Vec<(u32, Vec<u8>)> =
                    evs.iter().map(|&(d, w, a, b)| (d, payload(w, a, b))).collect();
                // at most ~4 KiB of events per page
                let mut n = 0;
                let fit: Vec<_> = evs.into_iter().take_while(|(_, p)| {
                    n += p.len() + 8;
                    n < 4000
                }).collect();
                streams[usize::from(*other)].extend(page(i as u64 * 10_000, &fit, *lost));
            }
            let tail = streams[0].len().saturating_sub(cut_tail);
            streams[0].truncate(tail.max(1));
            let mut whole = decoder();
            whole.push(0, &streams[0]);
            whole.push(3, &streams[1]);
            let whole = whole.finish();
            // the two CPUs' chunks interleaved, as the reader's rounds give them
            let mut chunked = decoder();
            let mut at = [0usize; 2];
            let mut k = 0;
            while at[0] < streams[0].len() || at[1] < streams[1].len() {
                let side = k % 2;
                let end = (at[side] + cuts[k % cuts.len()]).min(streams[side].len());
                chunked.push([0u32, 3][side], &streams[side][at[side]..end]);
                at[side] = end;
                k += 1;
            }
            prop_assert_eq!(resolved(&chunked.finish()), resolved(&whole));
        }
    }
}
