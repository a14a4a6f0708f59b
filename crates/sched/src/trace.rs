//! The execution map of a run: every block of CPU time and every activation, in ns from
//! the run's start, stored beside the result file as a tab-separated sidecar
//! (`<result>.trace.tsv`) because it is large, and the paper's text output built from it.
//!
//! Sidecar format, one record per line:
//! ```text
//! # latlab sched trace v1
//! B <thread> <cpu> <start_ns> <end_ns> <end: g|y|s|e>
//! A <thread> <index> <release_ns> <start_ns> <finish_ns|-> <deadline_ns> <cpu_ns> <waited 0|1> <frames>
//! ```

use crate::model::{Activation, Block};
use crate::recorder::EndReason;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Blocks and activations of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Every block, sorted by start.
    pub blocks: Vec<Block>,
    /// Every activation with its thread, in thread then index order.
    pub activations: Vec<(u32, Activation)>,
}

/// Errors reading a trace sidecar; each names the file and line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("{path}:{line}: not a latlab sched trace line ({detail})")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
}

impl Trace {
    /// The sidecar text. Pure.
    pub fn to_tsv(&self) -> String {
        let mut s = String::with_capacity(self.blocks.len() * 40 + 64);
        s.push_str("# latlab sched trace v1\n");
        for b in &self.blocks {
            let _ = writeln!(
                s,
                "B\t{}\t{}\t{}\t{}\t{}",
                b.thread,
                b.cpu,
                b.start_ns,
                b.end_ns,
                b.end.code()
            );
        }
        for (t, a) in &self.activations {
            let fin = a.finish_ns.map_or("-".to_owned(), |f| f.to_string());
            let _ = writeln!(
                s,
                "A\t{t}\t{}\t{}\t{}\t{fin}\t{}\t{}\t{}\t{}",
                a.index,
                a.release_ns,
                a.start_ns,
                a.deadline_ns,
                a.cpu_by_deadline_ns,
                u8::from(a.waited),
                a.frames
            );
        }
        s
    }

    /// Parses sidecar text; `path` is for messages.
    pub fn from_tsv(text: &str, path: &Path) -> Result<Trace, TraceError> {
        let mut t = Trace::default();
        for (i, line) in text.lines().enumerate() {
            let bad = |detail: &str| TraceError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                detail: detail.to_owned(),
            };
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            let num = |k: usize| -> Result<u64, TraceError> {
                f.get(k)
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| bad(&format!("field {} is not a number", k + 1)))
            };
            match f[0] {
                "B" if f.len() == 6 => {
                    let end = f[5]
                        .chars()
                        .next()
                        .and_then(EndReason::from_code)
                        .ok_or_else(|| bad("unknown end reason"))?;
                    t.blocks.push(Block {
                        thread: num(1)? as u32,
                        cpu: num(2)? as u32,
                        start_ns: num(3)?,
                        end_ns: num(4)?,
                        end,
                    });
                }
                "A" if f.len() == 10 => {
                    let finish_ns = if f[5] == "-" { None } else { Some(num(5)?) };
                    t.activations.push((
                        num(1)? as u32,
                        Activation {
                            index: num(2)?,
                            release_ns: num(3)?,
                            start_ns: num(4)?,
                            finish_ns,
                            deadline_ns: num(6)?,
                            cpu_by_deadline_ns: num(7)?,
                            waited: num(8)? == 1,
                            frames: num(9)? as u32,
                        },
                    ));
                }
                _ => return Err(bad("expected a B or A record with 6 or 10 fields")),
            }
        }
        Ok(t)
    }

    /// Reads a sidecar file.
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Trace::from_tsv(&text, path)
    }

    /// The blocks of one thread, in order.
    pub fn blocks_of(&self, thread: u32) -> impl Iterator<Item = &Block> + '_ {
        self.blocks.iter().filter(move |b| b.thread == thread)
    }

    /// The activations of one thread, in order.
    pub fn activations_of(&self, thread: u32) -> impl Iterator<Item = &Activation> + '_ {
        self.activations
            .iter()
            .filter(move |(t, _)| *t == thread)
            .map(|(_, a)| a)
    }
}

fn ms(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000, ns % 1_000_000)
}

/// The paper's text trace: `thread start finish duration gap` in ms (6 decimals), sorted by
/// start; the gap is measured from the end of the previous block on the same CPU (on a
/// uniprocessor, the previous block). With `raw`, a second section gives the same blocks
/// in TSC cycles, not rebased (`-c`), from `t0_tsc` and `hz`. Pure.
pub fn text_trace(trace: &Trace, raw: Option<(u64, u64)>) -> String {
    let mut s = String::with_capacity(trace.blocks.len() * 48);
    let mut last_end: std::collections::BTreeMap<u32, u64> = Default::default();
    let mut blocks: Vec<&Block> = trace.blocks.iter().collect();
    blocks.sort_by_key(|b| (b.start_ns, b.thread));
    for b in &blocks {
        let gap = last_end
            .get(&b.cpu)
            .map_or(0, |&e| b.start_ns.saturating_sub(e));
        let _ = writeln!(
            s,
            "{} {} {} {} {}",
            b.thread,
            ms(b.start_ns),
            ms(b.end_ns),
            ms(b.end_ns - b.start_ns),
            ms(gap)
        );
        last_end.insert(b.cpu, b.end_ns);
    }
    if let Some((t0_tsc, hz)) = raw {
        s.push_str("# raw execution trace, TSC cycles: thread cpu start end\n");
        let cyc = |ns: u64| t0_tsc + (u128::from(ns) * u128::from(hz) / 1_000_000_000) as u64;
        for b in &blocks {
            let _ = writeln!(
                s,
                "raw: {} {} {} {}",
                b.thread,
                b.cpu,
                cyc(b.start_ns),
                cyc(b.end_ns)
            );
        }
    }
    s
}

/// `latlate: <µs>` lines, one per LAT wakeup of `thread`, as the paper printed them. Pure.
pub fn latlate_lines(trace: &Trace, thread: u32) -> String {
    let mut s = String::new();
    for a in trace.activations_of(thread) {
        let late = a.start_ns.saturating_sub(a.release_ns);
        let _ = writeln!(s, "latlate: {}.{:06}", late / 1000, (late % 1000) * 1000);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        Trace {
            blocks: vec![
                Block {
                    thread: 0,
                    cpu: 0,
                    start_ns: 442_323_192,
                    end_ns: 443_222_287,
                    end: EndReason::Yield,
                },
                Block {
                    thread: 1,
                    cpu: 0,
                    start_ns: 443_224_485,
                    end_ns: 444_123_644,
                    end: EndReason::Gap,
                },
            ],
            activations: vec![(
                2,
                Activation {
                    index: 0,
                    release_ns: 1_000,
                    start_ns: 98_843,
                    finish_ns: None,
                    deadline_ns: 1_000,
                    cpu_by_deadline_ns: 0,
                    waited: true,
                    frames: 0,
                },
            )],
        }
    }

    #[test]
    fn sidecar_round_trips_and_rejects_garbage() {
        let t = sample();
        let back = Trace::from_tsv(&t.to_tsv(), Path::new("x")).unwrap();
        assert_eq!(back, t);
        let e = Trace::from_tsv("B\t1\t2\n", Path::new("t.tsv")).unwrap_err();
        assert!(e.to_string().starts_with("t.tsv:1:"), "{e}");
    }

    #[test]
    fn text_trace_matches_the_papers_layout() {
        let s = text_trace(&sample(), None);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "0 442.323192 443.222287 0.899095 0.000000");
        // the paper's second line: gap 0.002198 ms after thread 0's block
        assert_eq!(lines[1], "1 443.224485 444.123644 0.899159 0.002198");
        let raw = text_trace(&sample(), Some((1_000, 1_000_000_000)));
        assert!(raw.contains("raw: 0 0 442324192 443223287"), "{raw}");
        assert_eq!(latlate_lines(&sample(), 2), "latlate: 97.843000\n");
    }
}
