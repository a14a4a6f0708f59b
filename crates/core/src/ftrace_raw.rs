//! The kernel's binary trace format as `per_cpu/cpuN/trace_pipe_raw` returns it. Pure.
//!
//! A read of `trace_pipe_raw` returns one ring-buffer page (4 KiB on x86): a header
//! (`events/header_page`: `u64 timestamp` at 0, `local_t commit` at 8, data from 16), then
//! events packed up to `commit` bytes. Each event starts with a 32-bit word, `type_len`
//! in its low 5 bits and `time_delta` in its high 27 (`events/header_event`):
//!
//! - `type_len` 1..=28: a data event of `type_len × 4` bytes after the word;
//! - 0: a data event whose length (plus 4) is the next word, its data after that;
//! - 29: padding (a discarded event, or with delta 0 the end of the page's data);
//! - 30: time extend, `delta = next_word << 27 | time_delta`;
//! - 31: absolute time stamp, same encoding (its top 5 bits come from the page's).
//!
//! Each event's time is the page's timestamp plus the deltas before it, in the
//! instance's trace clock (raw TSC with `x86-tsc`). The commit word's bit 31 says events
//! were lost before this page, bit 30 that their count is stored after the data.
//!
//! A data event's payload starts with `common_type` (u16), which names the event by the
//! `ID:` of its `events/<group>/<name>/format` file; [`EventFormat::parse`] reads those
//! files (name, id, every field's offset, size and sign, `__data_loc` strings).

/// The page header's layout (`events/header_page`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Size of the `commit` field, bytes (8 on 64-bit kernels).
    pub commit_size: usize,
    /// Where the events start.
    pub data_offset: usize,
}

impl Default for PageLayout {
    fn default() -> Self {
        PageLayout {
            commit_size: 8,
            data_offset: 16,
        }
    }
}

/// Why a format text was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trace format: {0}")]
pub struct FormatError(pub String);

impl PageLayout {
    /// Parses `events/header_page`; refuses a layout other than a `u64 timestamp` at 0
    /// followed by the commit word and the data.
    ///
    /// # Errors
    /// [`FormatError`] naming the field that does not fit.
    pub fn parse(text: &str) -> Result<PageLayout, FormatError> {
        let fields = parse_fields(text);
        let get = |n: &str| {
            fields
                .iter()
                .find(|f| f.name == n)
                .ok_or_else(|| FormatError(format!("header_page has no field '{n}'")))
        };
        let (ts, commit, data) = (get("timestamp")?, get("commit")?, get("data")?);
        if ts.offset != 0 || ts.size != 8 {
            return Err(FormatError(
                "header_page timestamp is not a u64 at 0".into(),
            ));
        }
        if commit.offset != 8 || !(commit.size == 4 || commit.size == 8) {
            return Err(FormatError(format!(
                "header_page commit at {} of size {}",
                commit.offset, commit.size
            )));
        }
        if data.offset < 8 + commit.size {
            return Err(FormatError("header_page data overlaps the header".into()));
        }
        Ok(PageLayout {
            commit_size: commit.size,
            data_offset: data.offset,
        })
    }
}

/// One field of an event's format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its name (`prev_comm`).
    pub name: String,
    /// Its C type as written (`char prev_comm[16]`'s `char`, `__data_loc char[]`).
    pub ctype: String,
    /// Offset in the payload, bytes.
    pub offset: usize,
    /// Size, bytes.
    pub size: usize,
    /// Whether it is signed.
    pub signed: bool,
}

impl Field {
    /// Whether the field is a `__data_loc` (a u32 of offset | length << 16 pointing into
    /// the payload).
    pub fn is_data_loc(&self) -> bool {
        self.ctype.starts_with("__data_loc")
    }
}

/// An event's `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Its name (`sched_switch`).
    pub name: String,
    /// Its `common_type` id.
    pub id: u16,
    /// Its fields, common ones included.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parses a `format` file.
    ///
    /// # Errors
    /// [`FormatError`] when the name or id is missing.
    pub fn parse(text: &str) -> Result<EventFormat, FormatError> {
        let mut name = None;
        let mut id = None;
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("name:") {
                name = Some(n.trim().to_string());
            } else if let Some(i) = line.strip_prefix("ID:") {
                id = i.trim().parse::<u16>().ok();
            }
        }
        let name = name.ok_or_else(|| FormatError("format without a name".into()))?;
        let id = id.ok_or_else(|| FormatError(format!("format of {name} without an ID")))?;
        Ok(EventFormat {
            name,
            id,
            fields: parse_fields(text),
        })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// An integer field of `payload`, sign-extended when signed; `None` when the field is
    /// absent, not 1/2/4/8 bytes or outside the payload.
    pub fn int(&self, payload: &[u8], name: &str) -> Option<i64> {
        let f = self.field(name)?;
        let b = payload.get(f.offset..f.offset + f.size)?;
        Some(match (f.size, f.signed) {
            (1, true) => i64::from(b[0] as i8),
            (1, false) => i64::from(b[0]),
            (2, true) => i64::from(i16::from_le_bytes([b[0], b[1]])),
            (2, false) => i64::from(u16::from_le_bytes([b[0], b[1]])),
            (4, true) => i64::from(i32::from_le_bytes(b.try_into().ok()?)),
            (4, false) => i64::from(u32::from_le_bytes(b.try_into().ok()?)),
            (8, _) => i64::from_le_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// A string field of `payload`: a fixed `char[N]` up to its first NUL, or a
    /// `__data_loc` string. `None` when absent or out of the payload.
    pub fn str<'a>(&self, payload: &'a [u8], name: &str) -> Option<&'a [u8]> {
        let f = self.field(name)?;
        let raw = if f.is_data_loc() {
            let loc = u32::from_le_bytes(payload.get(f.offset..f.offset + 4)?.try_into().ok()?);
            let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
            payload.get(off..off + len)?
        } else {
            payload.get(f.offset..f.offset + f.size)?
        };
        Some(match raw.iter().position(|&c| c == 0) {
            Some(n) => &raw[..n],
            None => raw,
        })
    }
}

/// The `field:… offset:N; size:N; signed:N;` lines of a format text.
fn parse_fields(text: &str) -> Vec<Field> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("field:") else {
            continue;
        };
        let mut parts = rest.split(';').map(str::trim);
        let Some(decl) = parts.next() else { continue };
        let (mut offset, mut size, mut signed) = (None, None, false);
        for p in parts {
            if let Some(v) = p.strip_prefix("offset:") {
                offset = v.trim().parse().ok();
            } else if let Some(v) = p.strip_prefix("size:") {
                size = v.trim().parse().ok();
            } else if let Some(v) = p.strip_prefix("signed:") {
                signed = v.trim() == "1";
            }
        }
        let (Some(offset), Some(size)) = (offset, size) else {
            continue;
        };
        // `char prev_comm[16]`, `__data_loc char[] name`, `u64 timestamp`.
        let decl = decl.trim();
        let last = decl.rsplit(' ').next().unwrap_or(decl);
        let name = last.split('[').next().unwrap_or(last).to_string();
        let ctype = decl[..decl.len() - last.len()].trim().to_string();
        out.push(Field {
            name,
            ctype,
            offset,
            size,
            signed,
        });
    }
    out
}

/// Bit 31 of the commit word: events were lost before this page.
pub const MISSED_EVENTS: u64 = 1 << 31;
/// Bit 30: their count is stored after the page's data.
pub const MISSED_STORED: u64 = 1 << 30;

/// What one page held besides its events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageInfo {
    /// Events lost before this page: the stored count, or 1 when the kernel only flagged
    /// a loss without room to store its count (at least one was lost).
    pub lost: u64,
    /// Whether the page ended early (an event ran past the data, a bad length): the rest
    /// of it was skipped.
    pub truncated: bool,
}

/// Decodes one page, calling `each(ts, payload)` per data event in order. Pure.
pub fn decode_page(page: &[u8], layout: &PageLayout, each: &mut dyn FnMut(u64, &[u8])) -> PageInfo {
    let mut info = PageInfo::default();
    if page.len() < layout.data_offset {
        info.truncated = true;
        return info;
    }
    let mut ts = u64::from_le_bytes(page[0..8].try_into().expect("8 bytes"));
    let commit = if layout.commit_size == 8 {
        u64::from_le_bytes(page[8..16].try_into().expect("8 bytes"))
    } else {
        u64::from(u32::from_le_bytes(page[8..12].try_into().expect("4 bytes")))
    };
    let size = (commit & !(MISSED_EVENTS | MISSED_STORED) & 0xffff_ffff) as usize;
    let data_end = (layout.data_offset + size).min(page.len());
    if commit & MISSED_EVENTS != 0 {
        info.lost = 1;
        if commit & MISSED_STORED != 0 {
            if let Some(b) = page.get(data_end..data_end + 8) {
                info.lost = u64::from_le_bytes(b.try_into().expect("8 bytes")).max(1);
            }
        }
    }
    let data = &page[..data_end];
    let mut p = layout.data_offset;
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
    };
    while p + 4 <= data_end {
        let w = word(p).expect("checked");
        let type_len = w & 0x1f;
        let delta = u64::from(w >> 5);
        match type_len {
            29 => {
                if delta == 0 {
                    break; // the rest of the page is padding
                }
                let Some(len) = word(p + 4) else {
                    info.truncated = true;
                    break;
                };
                // A discarded event's delta is not time (the kernel sets it to 1).
                p += 4 + len as usize;
            }
            30 | 31 => {
                let Some(hi) = word(p + 4) else {
                    info.truncated = true;
                    break;
                };
                let v = (u64::from(hi) << 27) | delta;
                if type_len == 30 {
                    ts = ts.wrapping_add(v);
                } else {
                    const MSB: u64 = !((1u64 << 59) - 1);
                    ts = (v & !MSB) | (ts & MSB);
                }
                p += 8;
            }
            _ => {
                let (start, len) = if type_len == 0 {
                    match word(p + 4) {
                        Some(l) if l >= 4 => (p + 8, l as usize - 4),
                        _ => {
                            info.truncated = true;
                            break;
                        }
                    }
                } else {
                    (p + 4, type_len as usize * 4)
                };
                let Some(payload) = data.get(start..start + len) else {
                    info.truncated = true;
                    break;
                };
                ts = ts.wrapping_add(delta);
                each(ts, payload);
                p = start + len;
            }
        }
    }
    info
}

/// The `common_type` of a payload.
pub fn common_type(payload: &[u8]) -> Option<u16> {
    Some(u16::from_le_bytes(payload.get(0..2)?.try_into().ok()?))
}

/// A sorted kernel symbol table (`/proc/kallsyms`' text symbols), for the `%ps` fields
/// (hrtimer, work and NMI handler functions) that the binary format holds as addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbols {
    entries: Vec<(u64, String)>,
}

impl Symbols {
    /// Parses `/proc/kallsyms` (`ffffffff81000000 T _stext [module]`), keeping text
    /// symbols (`t`/`T`) with a non-zero address.
    pub fn parse(text: &str) -> Symbols {
        let mut entries: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let addr = u64::from_str_radix(w.next()?, 16).ok()?;
                let kind = w.next()?;
                let name = w.next()?;
                (addr != 0 && (kind == "t" || kind == "T")).then(|| (addr, name.to_string()))
            })
            .collect();
        entries.sort_unstable();
        entries.dedup_by_key(|e| e.0);
        Symbols { entries }
    }

    /// How many symbols.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The name of the function at or before `addr` (as `%ps` prints it, without the
    /// offset); the address in hex when no symbol precedes it.
    pub fn name(&self, addr: u64) -> String {
        match self.entries.partition_point(|e| e.0 <= addr) {
            0 => format!("0x{addr:x}"),
            i => self.entries[i - 1].1.clone(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
        \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
        \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
        \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\n\
        print fmt: \"prev_comm=%s\", REC->prev_comm\n";

    const IRQ: &str = "name: irq_handler_entry\nID: 225\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
        \tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n";

    #[test]
    fn the_header_page_and_formats_parse() {
        assert_eq!(
            PageLayout::parse(HEADER_PAGE).unwrap(),
            PageLayout {
                commit_size: 8,
                data_offset: 16
            }
        );
        assert!(PageLayout::parse("field: u64 timestamp; offset:0; size:8;").is_err());
        let f = EventFormat::parse(SWITCH).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        let c = f.field("prev_comm").unwrap();
        assert_eq!((c.offset, c.size, c.ctype.as_str()), (8, 16, "char"));
        assert!(f.field("prev_state").unwrap().signed);
        let i = EventFormat::parse(IRQ).unwrap();
        assert!(i.field("name").unwrap().is_data_loc());
        assert!(EventFormat::parse("name: x\n").is_err());
    }

    #[test]
    fn fields_are_read_from_a_payload() {
        let i = EventFormat::parse(IRQ).unwrap();
        let mut p = vec![0u8; 16];
        p[0..2].copy_from_slice(&225u16.to_le_bytes());
        p[8..12].copy_from_slice(&(-3i32).to_le_bytes());
        p[12..16].copy_from_slice(&(16u32 | (6 << 16)).to_le_bytes());
        p.extend_from_slice(b"eth0\0\0");
        assert_eq!(common_type(&p), Some(225));
        assert_eq!(i.int(&p, "irq"), Some(-3));
        assert_eq!(i.str(&p, "name"), Some(&b"eth0"[..]));
        assert_eq!(i.int(&p, "nope"), None);
        // A data_loc pointing past the payload is refused, not a panic.
        p[12..16].copy_from_slice(&(16u32 | (60 << 16)).to_le_bytes());
        assert_eq!(i.str(&p, "name"), None);
    }

    /// A page builder for the tests: events as the kernel writes them.
    pub(crate) struct Page {
        b: Vec<u8>,
    }

    impl Page {
        pub(crate) fn new(ts: u64) -> Page {
            let mut b = vec![0u8; 16];
            b[0..8].copy_from_slice(&ts.to_le_bytes());
            Page { b }
        }
        fn word(&mut self, w: u32) {
            self.b.extend_from_slice(&w.to_le_bytes());
        }
        pub(crate) fn event(&mut self, delta: u32, payload: &[u8]) {
            let len = payload.len().div_ceil(4) * 4;
            if len <= 28 * 4 {
                self.word(((len / 4) as u32) | (delta << 5));
            } else {
                self.word(delta << 5);
                self.word(len as u32 + 4);
            }
            let at = self.b.len();
            self.b.extend_from_slice(payload);
            self.b.resize(at + len, 0);
        }
        pub(crate) fn finish(mut self, commit_flags: u64, stored: Option<u64>) -> Vec<u8> {
            let size = (self.b.len() - 16) as u64;
            self.b[8..16].copy_from_slice(&(size | commit_flags).to_le_bytes());
            if let Some(n) = stored {
                self.b.extend_from_slice(&n.to_le_bytes());
            }
            self.b.resize(4096, 0);
            self.b
        }
    }

    fn events(page: &[u8]) -> (Vec<(u64, Vec<u8>)>, PageInfo) {
        let mut out = Vec::new();
        let info = decode_page(page, &PageLayout::default(), &mut |ts, p| {
            out.push((ts, p.to_vec()))
        });
        (out, info)
    }

    #[test]
    fn deltas_extends_padding_and_long_events() {
        let mut pg = Page::new(1_000);
        pg.event(5, &[1, 0, 0, 0, 7, 0, 0, 0]); // ts 1005
        pg.word(30 | (3 << 5)); // time extend: (2 << 27) | 3
        pg.word(2);
        pg.event(10, &[2, 0]); // ts 1005 + (2<<27 | 3) + 10
        pg.word(29 | (1 << 5)); // a discarded event: its length word counts itself
        pg.word(8);
        pg.word(0);
        let long = vec![9u8; 200];
        pg.event(1, &long); // type_len 0, length word
        let (ev, info) = events(&pg.finish(0, None));
        assert_eq!(info, PageInfo::default());
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0], (1_005, vec![1, 0, 0, 0, 7, 0, 0, 0]));
        let t1 = 1_005 + ((2u64 << 27) | 3) + 10;
        assert_eq!(ev[1].0, t1);
        assert_eq!(&ev[1].1[..2], &[2, 0]);
        assert_eq!(ev[2].0, t1 + 1);
        assert_eq!(ev[2].1, long);
    }

    #[test]
    fn an_absolute_stamp_keeps_the_page_top_bits() {
        let base = 5u64 << 59;
        let mut pg = Page::new(base + 10);
        let abs = 123_456_789u64;
        pg.word(31 | (((abs & ((1 << 27) - 1)) as u32) << 5));
        pg.word((abs >> 27) as u32);
        pg.event(1, &[3, 0, 0, 0]);
        let (ev, _) = events(&pg.finish(0, None));
        assert_eq!(ev[0].0, base + abs + 1);
    }

    #[test]
    fn lost_events_are_read_from_the_commit_word() {
        let mut pg = Page::new(1);
        pg.event(1, &[1, 0, 0, 0]);
        let (_, info) = events(&pg.finish(MISSED_EVENTS | MISSED_STORED, Some(4242)));
        assert_eq!(info.lost, 4242);
        let mut pg = Page::new(1);
        pg.event(1, &[1, 0, 0, 0]);
        let (ev, info) = events(&pg.finish(MISSED_EVENTS, None));
        assert_eq!((ev.len(), info.lost), (1, 1));
    }

    #[test]
    fn a_bad_page_ends_early_without_panicking() {
        let mut pg = Page::new(1);
        pg.event(1, &[1, 0, 0, 0]);
        pg.word(0); // type_len 0 with a length past the data
        pg.word(4000);
        let (ev, info) = events(&pg.finish(0, None));
        assert_eq!(ev.len(), 1);
        assert!(info.truncated);
        assert!(decode_page(&[0; 8], &PageLayout::default(), &mut |_, _| {}).truncated);
        // An empty page has no events.
        let (ev, info) = events(&Page::new(9).finish(0, None));
        assert!(ev.is_empty() && info == PageInfo::default());
    }

    #[test]
    fn symbols_name_the_function_at_or_before_an_address() {
        let s = Symbols::parse(
            "ffffffff81000100 T tick_nohz_handler\n\
             ffffffff81000000 t _stext\n\
             ffffffff81000200 D some_data\n\
             0000000000000000 T hidden\n\
             ffffffffc0000000 t vmstat_update\t[mod]\n",
        );
        assert_eq!(s.len(), 3);
        assert_eq!(s.name(0xffffffff81000100), "tick_nohz_handler");
        assert_eq!(s.name(0xffffffff81000180), "tick_nohz_handler");
        assert_eq!(s.name(0xffffffffc0000000), "vmstat_update");
        assert_eq!(s.name(0x10), "0x10");
    }
}
