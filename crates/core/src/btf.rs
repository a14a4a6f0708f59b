//! The kernel's BPF Type Format (BTF) as `/sys/kernel/btf/vmlinux` holds it: just enough to
//! find where a struct member lies (`task_struct.pid`, `task_struct.comm`, …). Pure.
//!
//! A BPF program on a raw tracepoint receives the tracepoint's arguments as they are, so
//! `sched_switch` hands it two `struct task_struct *`; a recorder that wants their pid,
//! command name and priority must read them at offsets that depend on the kernel's build.
//! BTF records those offsets. This module is the first brick of such a recorder for
//! `--explain` (docs/explain.md: a switch recorded through BPF cost under half of one
//! recorded through tracefs on this guest).
//!
//! Layout (`include/uapi/linux/btf.h`): a header (`magic` 0xEB9F, version, flags,
//! `hdr_len`, then the type and string sections' offsets and lengths, counted from the end
//! of the header), a type section of `btf_type` records (`name_off`, `info`, `size` or
//! `type`, then kind-specific data), and a string section of NUL-terminated names. Type
//! ids count from 1 in the order of the records (0 is `void`).

/// Why a BTF blob could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BtfError {
    /// Shorter than its header or than a section the header names.
    #[error("BTF data is truncated: {0}")]
    Truncated(&'static str),
    /// Not little-endian BTF (`magic` is not 0xEB9F).
    #[error("not BTF (magic {0:#06x}, expected 0xeb9f)")]
    BadMagic(u16),
    /// A type of a kind this reader does not know, so the records after it cannot be found.
    #[error("BTF type {id} has unknown kind {kind}")]
    UnknownKind {
        /// The type's id.
        id: u32,
        /// Its kind.
        kind: u32,
    },
}

/// Where a member lies in its struct, and how large its type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Offset from the start of the outermost struct, bytes (bit offset / 8).
    pub offset: u32,
    /// Size of the member's type, bytes (through typedefs and qualifiers; arrays are
    /// element size × count).
    pub size: u32,
    /// The member is a bitfield: `offset` is then the byte holding its first bit.
    pub bitfield: bool,
}

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FWD: u32 = 7;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// One `btf_type` record: where its kind-specific data starts in the type section.
#[derive(Clone, Copy, Debug)]
struct Type {
    name_off: u32,
    info: u32,
    size_or_type: u32,
    data: usize,
}

impl Type {
    fn kind(&self) -> u32 {
        (self.info >> 24) & 0x1f
    }
    fn vlen(&self) -> usize {
        (self.info & 0xffff) as usize
    }
    fn kind_flag(&self) -> bool {
        self.info >> 31 == 1
    }
}

/// A parsed BTF blob: the type records indexed by id, and the strings.
#[derive(Debug)]
pub struct Btf<'a> {
    types: Vec<Type>,
    type_data: &'a [u8],
    strings: &'a [u8],
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

impl<'a> Btf<'a> {
    /// Reads the header and indexes every type record.
    pub fn parse(b: &'a [u8]) -> Result<Btf<'a>, BtfError> {
        let magic = u16::from_le_bytes(
            b.get(0..2)
                .ok_or(BtfError::Truncated("header"))?
                .try_into()
                .expect("2 bytes"),
        );
        if magic != 0xEB9F {
            return Err(BtfError::BadMagic(magic));
        }
        let field = |at| u32_at(b, at).ok_or(BtfError::Truncated("header"));
        let hdr_len = field(4)? as usize;
        let (type_off, type_len) = (field(8)? as usize, field(12)? as usize);
        let (str_off, str_len) = (field(16)? as usize, field(20)? as usize);
        let section = |off: usize, len: usize, what| {
            hdr_len
                .checked_add(off)
                .and_then(|s| Some(s..s.checked_add(len)?))
                .and_then(|r| b.get(r))
                .ok_or(BtfError::Truncated(what))
        };
        let type_data = section(type_off, type_len, "type section")?;
        let strings = section(str_off, str_len, "string section")?;
        let mut types = Vec::new();
        let mut at = 0;
        while at < type_data.len() {
            let rec =
                |i: usize| u32_at(type_data, at + 4 * i).ok_or(BtfError::Truncated("type record"));
            let t = Type {
                name_off: rec(0)?,
                info: rec(1)?,
                size_or_type: rec(2)?,
                data: at + 12,
            };
            let id = types.len() as u32 + 1;
            let extra = match t.kind() {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * t.vlen(),
                KIND_ENUM | KIND_FUNC_PROTO => 8 * t.vlen(),
                KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT
                | KIND_FUNC | KIND_FLOAT | KIND_TYPE_TAG => 0,
                kind => return Err(BtfError::UnknownKind { id, kind }),
            };
            if t.data + extra > type_data.len() {
                return Err(BtfError::Truncated("type record"));
            }
            types.push(t);
            at = t.data + extra;
        }
        Ok(Btf {
            types,
            type_data,
            strings,
        })
    }

    /// Number of types (ids 1..=len).
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether the blob holds no types.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    fn name(&self, off: u32) -> &'a [u8] {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    }

    fn ty(&self, id: u32) -> Option<&Type> {
        self.types.get((id as usize).checked_sub(1)?)
    }

    fn word(&self, at: usize) -> u32 {
        u32_at(self.type_data, at).expect("checked when indexed")
    }

    /// The id of the typedef named `name` (e.g. `btf_trace_sched_switch`, the type a
    /// BTF-typed raw-tracepoint program names as what it attaches to).
    pub fn typedef(&self, name: &str) -> Option<u32> {
        self.types
            .iter()
            .position(|t| t.kind() == KIND_TYPEDEF && self.name(t.name_off) == name.as_bytes())
            .map(|i| i as u32 + 1)
    }

    /// The first struct named `name` that has members (not a forward declaration).
    fn find_struct(&self, name: &str) -> Option<u32> {
        self.types
            .iter()
            .position(|t| {
                t.kind() == KIND_STRUCT && t.vlen() > 0 && self.name(t.name_off) == name.as_bytes()
            })
            .map(|i| i as u32 + 1)
    }

    /// Size in bytes of type `id`, through typedefs and qualifiers ([`Btf::resolve`]);
    /// `None` for a type without one (void, a function) or a malformed chain (arrays nested
    /// deeper than 32, which an array of itself is).
    fn size_of(&self, id: u32) -> Option<u32> {
        self.size_at(id, 0)
    }

    fn size_at(&self, id: u32, depth: u32) -> Option<u32> {
        if depth > 32 {
            return None;
        }
        let t = self.ty(self.resolve(id)?)?;
        match t.kind() {
            KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 => Some(t.size_or_type),
            KIND_PTR => Some(8),
            KIND_ARRAY => {
                let (elem, n) = (self.word(t.data), self.word(t.data + 8));
                self.size_at(elem, depth + 1)?.checked_mul(n)
            }
            _ => None,
        }
    }

    /// Where member `member` of `struct name` lies, looking through anonymous structs and
    /// unions nested in it (as `task_struct` has); `None` when there is no such struct or
    /// member.
    pub fn member(&self, name: &str, member: &str) -> Option<Member> {
        self.member_in(self.find_struct(name)?, member.as_bytes(), 0, 0)
    }

    fn member_in(&self, id: u32, member: &[u8], base_bits: u32, depth: u32) -> Option<Member> {
        let t = self.ty(id)?;
        if !matches!(t.kind(), KIND_STRUCT | KIND_UNION) || depth > 16 {
            return None;
        }
        for k in 0..t.vlen() {
            let at = t.data + 12 * k;
            let (name_off, mty, off) = (self.word(at), self.word(at + 4), self.word(at + 8));
            let (bits, bitfield) = if t.kind_flag() {
                (off & 0x00ff_ffff, off >> 24 != 0)
            } else {
                (off, false)
            };
            let bit = base_bits.checked_add(bits)?;
            let mname = self.name(name_off);
            if mname == member {
                return Some(Member {
                    offset: bit / 8,
                    size: self.size_of(mty)?,
                    bitfield,
                });
            }
            if mname.is_empty() {
                if let Some(found) = self.member_in(self.resolve(mty)?, member, bit, depth + 1) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// Type `id` with typedefs and qualifiers stripped; `None` past a chain of 32 (a cycle
    /// in a malformed blob).
    fn resolve(&self, mut id: u32) -> Option<u32> {
        for _ in 0..32 {
            let t = self.ty(id)?;
            match t.kind() {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.size_or_type
                }
                _ => return Some(id),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a BTF blob from type records (info, size_or_type, extra words) and names.
    struct Blob {
        types: Vec<u32>,
        strings: Vec<u8>,
    }

    impl Blob {
        fn new() -> Blob {
            Blob {
                types: Vec::new(),
                strings: vec![0],
            }
        }
        fn s(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let off = self.strings.len() as u32;
            self.strings.extend_from_slice(name.as_bytes());
            self.strings.push(0);
            off
        }
        fn ty(&mut self, name: &str, kind: u32, vlen: u32, flag: bool, st: u32, extra: &[u32]) {
            let n = self.s(name);
            let info = (kind << 24) | vlen | (u32::from(flag) << 31);
            self.types.extend([n, info, st]);
            self.types.extend_from_slice(extra);
        }
        fn bytes(&self) -> Vec<u8> {
            let tl = self.types.len() as u32 * 4;
            let mut b = Vec::new();
            b.extend(0xEB9Fu16.to_le_bytes());
            b.extend([1u8, 0]);
            for v in [24, 0, tl, tl, self.strings.len() as u32] {
                b.extend(v.to_le_bytes());
            }
            for w in &self.types {
                b.extend(w.to_le_bytes());
            }
            b.extend(&self.strings);
            b
        }
    }

    /// A task_struct like the kernel's: `__state` (u32) at 24, an anonymous union holding
    /// `prio` at 112, a bitfield, `pid` (typedef pid_t) at 1208, `comm` (char[16]) at 1944.
    fn task_blob() -> Blob {
        let mut b = Blob::new();
        let m = |b: &mut Blob, name: &str, ty: u32, off: u32| vec![b.s(name), ty, off];
        b.ty("int", KIND_INT, 0, false, 4, &[32]); // 1
        b.ty("unsigned int", KIND_INT, 0, false, 4, &[32]); // 2
        b.ty("char", KIND_INT, 0, false, 1, &[8]); // 3
        b.ty("pid_t", KIND_TYPEDEF, 0, false, 1, &[]); // 4
        b.ty("", KIND_ARRAY, 0, false, 0, &[3, 2, 16]); // 5: char[16]
        b.ty("", KIND_VOLATILE, 0, false, 2, &[]); // 6
        let mut u = m(&mut b, "prio", 1, 0);
        u.extend(m(&mut b, "prio_alias", 2, 0));
        b.ty("", KIND_UNION, 2, false, 4, &u); // 7: anonymous union
        b.ty("task_struct", 7, 0, false, 0, &[]); // 8: a forward declaration first
        let mut s = m(&mut b, "__state", 6, 24 * 8);
        s.extend(m(&mut b, "", 7, 112 * 8));
        s.extend(m(&mut b, "sched_flag", 2, (1 << 24) | (120 * 8 + 3)));
        s.extend(m(&mut b, "pid", 4, 1208 * 8));
        s.extend(m(&mut b, "comm", 5, 1944 * 8));
        b.ty("task_struct", KIND_STRUCT, 5, true, 2048, &s); // 9
        b
    }

    #[test]
    fn finds_members_through_typedefs_qualifiers_arrays_and_anonymous_unions() {
        let bytes = task_blob().bytes();
        let btf = Btf::parse(&bytes).unwrap();
        assert_eq!(btf.len(), 9);
        let m = |name| btf.member("task_struct", name);
        let plain = |offset, size| {
            Some(Member {
                offset,
                size,
                bitfield: false,
            })
        };
        assert_eq!(m("__state"), plain(24, 4), "through volatile");
        assert_eq!(m("prio"), plain(112, 4), "inside the anonymous union");
        assert_eq!(m("pid"), plain(1208, 4), "through the pid_t typedef");
        assert_eq!(m("comm"), plain(1944, 16), "char[16]");
        assert_eq!(
            m("sched_flag"),
            Some(Member {
                offset: 120,
                size: 4,
                bitfield: true
            })
        );
        assert_eq!(m("no_such_member"), None);
        assert_eq!(btf.member("no_such_struct", "pid"), None);
        assert_eq!(btf.typedef("pid_t"), Some(4));
        assert_eq!(btf.typedef("task_struct"), None, "a struct, not a typedef");
    }

    #[test]
    fn malformed_blobs_are_refused_not_panicked_on() {
        let good = task_blob().bytes();
        assert_eq!(Btf::parse(&[]).unwrap_err(), BtfError::Truncated("header"));
        let mut bad = good.clone();
        bad[0] = 0;
        assert!(matches!(Btf::parse(&bad), Err(BtfError::BadMagic(_))));
        // every truncation is an error, never a panic or a blob that claims more than it has
        for n in 0..good.len() {
            assert!(Btf::parse(&good[..n]).is_err(), "{n} bytes");
        }
        // an unknown kind stops the walk with its id
        let mut b = Blob::new();
        b.ty("int", KIND_INT, 0, false, 4, &[32]);
        b.ty("odd", 30, 0, false, 0, &[]);
        assert_eq!(
            Btf::parse(&b.bytes()).unwrap_err(),
            BtfError::UnknownKind { id: 2, kind: 30 }
        );
        // a typedef cycle has no size instead of looping
        let mut b = Blob::new();
        b.ty("a", KIND_TYPEDEF, 0, false, 2, &[]);
        b.ty("b", KIND_TYPEDEF, 0, false, 1, &[]);
        let n = b.s("x");
        b.ty("s", KIND_STRUCT, 1, false, 4, &[n, 1, 0]);
        let bytes = b.bytes();
        assert_eq!(Btf::parse(&bytes).unwrap().member("s", "x"), None);
        // an array of itself has no size instead of recursing without end
        let mut b = Blob::new();
        b.ty("int", KIND_INT, 0, false, 4, &[32]);
        b.ty("", KIND_ARRAY, 0, false, 0, &[2, 1, 4]);
        let n = b.s("x");
        b.ty("s", KIND_STRUCT, 1, false, 4, &[n, 2, 0]);
        let bytes = b.bytes();
        assert_eq!(Btf::parse(&bytes).unwrap().member("s", "x"), None);
    }

    proptest::proptest! {
        /// Corrupting any bytes of a valid blob (its header and offsets included) gives an
        /// error or a blob that answers look-ups, never a panic.
        #[test]
        fn corrupted_blobs_never_panic(
            edits in proptest::collection::vec((0usize..4096, 0u8..=255), 1..16)
        ) {
            let mut bytes = task_blob().bytes();
            for (at, v) in edits {
                let n = bytes.len();
                bytes[at % n] = v;
            }
            if let Ok(btf) = Btf::parse(&bytes) {
                for m in ["pid", "comm", "prio", "__state", "sched_flag"] {
                    let _ = btf.member("task_struct", m);
                }
            }
        }
    }
}
