//! A small eBPF assembler with labels (pure: no system call here, so programs are
//! unit-tested, and run by the interpreter in this module's tests).
//!
//! Only what latlab's hand-written programs use: 64-bit ALU with an immediate or a
//! register, loads and stores of 1/2/4/8 bytes, the 64-bit immediate load (a constant or a
//! map's file descriptor), conditional jumps to labels, helper calls and exit. Jump
//! offsets are filled in by [`Asm::finish`], which checks that every label was bound.

use super::{ins, Insn};

/// Access size of a load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// 1 byte.
    B,
    /// 2 bytes.
    H,
    /// 4 bytes.
    W,
    /// 8 bytes.
    DW,
}

impl Size {
    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
    /// Bytes.
    pub fn bytes(self) -> usize {
        match self {
            Size::B => 1,
            Size::H => 2,
            Size::W => 4,
            Size::DW => 8,
        }
    }
}

/// 64-bit ALU operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alu {
    /// `dst += src`.
    Add = 0x00,
    /// `dst -= src`.
    Sub = 0x10,
    /// `dst |= src`.
    Or = 0x40,
    /// `dst &= src`.
    And = 0x50,
    /// `dst <<= src`.
    Lsh = 0x60,
    /// `dst >>= src` (logical).
    Rsh = 0x70,
    /// `dst = src`.
    Mov = 0xb0,
}

/// Jump conditions (`Ja` is unconditional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jmp {
    /// Always.
    Ja = 0x00,
    /// `dst == src`.
    Eq = 0x10,
    /// `dst > src`, unsigned.
    Gt = 0x20,
    /// `dst >= src`, unsigned.
    Ge = 0x30,
    /// `dst & src != 0`.
    Set = 0x40,
    /// `dst != src`.
    Ne = 0x50,
    /// `dst >= src`, signed.
    Sge = 0x70,
}

/// Class bits.
pub const CLASS_LDX: u8 = 0x01;
/// `BPF_ST` (store an immediate).
pub const CLASS_ST: u8 = 0x02;
/// `BPF_STX`.
pub const CLASS_STX: u8 = 0x03;
/// `BPF_JMP`.
pub const CLASS_JMP: u8 = 0x05;
/// `BPF_ALU64`.
pub const CLASS_ALU64: u8 = 0x07;
/// `BPF_MEM` mode.
pub const MODE_MEM: u8 = 0x60;
/// `BPF_X`: the source is a register.
pub const SRC_X: u8 = 0x08;
/// `BPF_LD | BPF_IMM | BPF_DW`.
pub const LD_IMM64: u8 = 0x18;
/// `BPF_JMP | BPF_CALL`.
pub const CALL: u8 = 0x85;
/// `BPF_JMP | BPF_EXIT`.
pub const EXIT: u8 = 0x95;
/// `BPF_STX | BPF_ATOMIC | BPF_DW` with `imm` = `BPF_ADD`: `*(u64 *)(dst + off) += src`.
pub const ATOMIC_ADD_DW: u8 = 0xdb;
/// `BPF_FETCH`: an atomic operation that also returns the old value in `src`.
pub const ATOMIC_FETCH: i32 = 0x01;
/// `BPF_PSEUDO_MAP_FD`.
pub const PSEUDO_MAP_FD: u8 = 1;

/// A jump target, bound with [`Asm::bind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label(usize);

/// Why [`Asm::finish`] refused a program.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AsmError {
    /// A jump to a label never bound.
    #[error("label {0} is used but never bound")]
    Unbound(usize),
    /// A jump further than 32767 instructions.
    #[error("a jump from {from} to {to} does not fit in 16 bits")]
    TooFar {
        /// The jump's index.
        from: usize,
        /// The target's.
        to: usize,
    },
}

/// Instructions being assembled.
#[derive(Debug, Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
}

impl Asm {
    /// An empty program.
    pub fn new() -> Asm {
        Asm::default()
    }
    /// Instructions so far.
    pub fn len(&self) -> usize {
        self.insns.len()
    }
    /// Whether nothing was emitted.
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }
    /// A new, unbound label.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }
    /// Binds `l` to the next instruction.
    pub fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.insns.len());
    }
    fn push(&mut self, i: Insn) -> &mut Asm {
        self.insns.push(i);
        self
    }
    /// `dst = dst OP imm`.
    pub fn alu_imm(&mut self, op: Alu, dst: u8, imm: i32) -> &mut Asm {
        self.push(ins(CLASS_ALU64 | op as u8, dst, 0, 0, imm))
    }
    /// `dst = dst OP src`.
    pub fn alu_reg(&mut self, op: Alu, dst: u8, src: u8) -> &mut Asm {
        self.push(ins(CLASS_ALU64 | op as u8 | SRC_X, dst, src, 0, 0))
    }
    /// `dst = *(size *)(src + off)`.
    pub fn ldx(&mut self, size: Size, dst: u8, src: u8, off: i16) -> &mut Asm {
        self.push(ins(CLASS_LDX | MODE_MEM | size.bits(), dst, src, off, 0))
    }
    /// `*(size *)(dst + off) = src`.
    pub fn stx(&mut self, size: Size, dst: u8, off: i16, src: u8) -> &mut Asm {
        self.push(ins(CLASS_STX | MODE_MEM | size.bits(), dst, src, off, 0))
    }
    /// `*(size *)(dst + off) = imm`.
    pub fn st(&mut self, size: Size, dst: u8, off: i16, imm: i32) -> &mut Asm {
        self.push(ins(CLASS_ST | MODE_MEM | size.bits(), dst, 0, off, imm))
    }
    /// `*(u64 *)(dst + off) += src`, atomically.
    pub fn atomic_add(&mut self, dst: u8, off: i16, src: u8) -> &mut Asm {
        self.push(ins(ATOMIC_ADD_DW, dst, src, off, 0))
    }
    /// `src = atomic_fetch_add((u64 *)(dst + off), src)`: the old value into `src`
    /// (`BPF_ADD | BPF_FETCH`, Linux 5.12).
    pub fn atomic_fetch_add(&mut self, dst: u8, off: i16, src: u8) -> &mut Asm {
        self.push(ins(ATOMIC_ADD_DW, dst, src, off, ATOMIC_FETCH))
    }
    /// `dst = imm` (64 bits; two instruction slots).
    pub fn ld_imm64(&mut self, dst: u8, imm: u64) -> &mut Asm {
        self.push(ins(LD_IMM64, dst, 0, 0, imm as u32 as i32));
        self.push(ins(0, 0, 0, 0, (imm >> 32) as u32 as i32))
    }
    /// `dst = &map` (the map's file descriptor, resolved by the kernel).
    pub fn ld_map(&mut self, dst: u8, map_fd: i32) -> &mut Asm {
        self.push(ins(LD_IMM64, dst, PSEUDO_MAP_FD, 0, map_fd));
        self.push(ins(0, 0, 0, 0, 0))
    }
    /// `if dst OP imm goto l` (`Jmp::Ja`: always).
    pub fn jmp_imm(&mut self, op: Jmp, dst: u8, imm: i32, l: Label) -> &mut Asm {
        self.fixups.push((self.insns.len(), l));
        self.push(ins(CLASS_JMP | op as u8, dst, 0, 0, imm))
    }
    /// `if dst OP src goto l`.
    pub fn jmp_reg(&mut self, op: Jmp, dst: u8, src: u8, l: Label) -> &mut Asm {
        self.fixups.push((self.insns.len(), l));
        self.push(ins(CLASS_JMP | op as u8 | SRC_X, dst, src, 0, 0))
    }
    /// `goto l`.
    pub fn ja(&mut self, l: Label) -> &mut Asm {
        self.jmp_imm(Jmp::Ja, 0, 0, l)
    }
    /// `r0 = helper(r1, …, r5)`.
    pub fn call(&mut self, helper: i32) -> &mut Asm {
        self.push(ins(CALL, 0, 0, 0, helper))
    }
    /// `return r0`.
    pub fn exit(&mut self) -> &mut Asm {
        self.push(ins(EXIT, 0, 0, 0, 0))
    }
    /// The instructions with every jump's offset filled in.
    ///
    /// # Errors
    /// A label used and never bound, or a jump that does not fit.
    pub fn finish(mut self) -> Result<Vec<Insn>, AsmError> {
        for &(at, l) in &self.fixups {
            let to = self.labels[l.0].ok_or(AsmError::Unbound(l.0))?;
            let off = to as i64 - at as i64 - 1;
            self.insns[at].off =
                i16::try_from(off).map_err(|_| AsmError::TooFar { from: at, to })?;
        }
        Ok(self.insns)
    }
}

/// An interpreter for what [`Asm`] emits, for tests: registers, a 512-byte stack at
/// [`interp::STACK_TOP`], memory regions the test provides, and helpers the test
/// implements.
#[cfg(test)]
pub(crate) mod interp {
    use super::*;

    /// Where the stack ends (r10).
    pub const STACK_TOP: u64 = 0x7000_0000;

    /// A memory region: `base..base + bytes.len()`.
    #[derive(Clone)]
    pub struct Region {
        pub base: u64,
        pub bytes: Vec<u8>,
    }

    /// The machine.
    pub struct Vm {
        pub r: [u64; 11],
        pub mem: Vec<Region>,
    }

    impl Vm {
        /// A machine with a zeroed stack and the given regions.
        pub fn new(mut mem: Vec<Region>) -> Vm {
            mem.push(Region {
                base: STACK_TOP - 512,
                bytes: vec![0; 512],
            });
            let mut r = [0; 11];
            r[10] = STACK_TOP;
            Vm { r, mem }
        }
        /// `n` bytes at `addr`, or `None` outside every region.
        pub fn read(&self, addr: u64, n: usize) -> Option<Vec<u8>> {
            self.mem.iter().find_map(|m| {
                let o = addr.checked_sub(m.base)? as usize;
                m.bytes.get(o..o + n).map(<[u8]>::to_vec)
            })
        }
        /// Writes `b` at `addr`; panics outside every region.
        pub fn write(&mut self, addr: u64, b: &[u8]) {
            let m = self
                .mem
                .iter_mut()
                .find(|m| addr >= m.base && addr + b.len() as u64 <= m.base + m.bytes.len() as u64)
                .unwrap_or_else(|| {
                    panic!("write of {} bytes at {addr:#x} is outside memory", b.len())
                });
            let o = (addr - m.base) as usize;
            m.bytes[o..o + b.len()].copy_from_slice(b);
        }
        fn load(&self, addr: u64, n: usize) -> u64 {
            let b = self
                .read(addr, n)
                .unwrap_or_else(|| panic!("load of {n} bytes at {addr:#x} is outside memory"));
            b.iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x))
        }
        /// Runs `p` from its first instruction; `helper(vm, id)` returns r0.
        pub fn run(&mut self, p: &[Insn], helper: &mut dyn FnMut(&mut Vm, i32) -> u64) -> u64 {
            let mut pc = 0usize;
            let mut steps = 0;
            loop {
                steps += 1;
                assert!(steps < 100_000, "the program does not end");
                let i = p[pc];
                let (d, s) = ((i.regs & 0xf) as usize, (i.regs >> 4) as usize);
                pc += 1;
                let class = i.code & 0x07;
                match (class, i.code) {
                    (_, LD_IMM64) => {
                        let hi = p[pc].imm as u32 as u64;
                        pc += 1;
                        self.r[d] = (i.imm as u32 as u64) | (hi << 32);
                    }
                    (_, CALL) => {
                        let r0 = helper(self, i.imm);
                        self.r[0] = r0;
                    }
                    (_, EXIT) => return self.r[0],
                    (_, ATOMIC_ADD_DW) => {
                        let a = self.r[d].wrapping_add(i.off as i64 as u64);
                        let old = self.load(a, 8);
                        self.write(a, &old.wrapping_add(self.r[s]).to_le_bytes());
                        if i.imm & ATOMIC_FETCH != 0 {
                            self.r[s] = old;
                        }
                    }
                    (CLASS_ALU64, _) => {
                        let src = if i.code & SRC_X != 0 {
                            self.r[s]
                        } else {
                            i.imm as i64 as u64
                        };
                        let dst = &mut self.r[d];
                        *dst = match i.code & 0xf0 {
                            0x00 => dst.wrapping_add(src),
                            0x10 => dst.wrapping_sub(src),
                            0x40 => *dst | src,
                            0x50 => *dst & src,
                            0x60 => *dst << (src & 63),
                            0x70 => *dst >> (src & 63),
                            0xb0 => src,
                            op => panic!("ALU op {op:#x}"),
                        };
                    }
                    (CLASS_LDX | CLASS_ST | CLASS_STX, _) => {
                        let n = match i.code & 0x18 {
                            0x00 => 4,
                            0x08 => 2,
                            0x10 => 1,
                            _ => 8,
                        };
                        if class == CLASS_LDX {
                            self.r[d] = self.load(self.r[s].wrapping_add(i.off as i64 as u64), n);
                        } else {
                            let v = if class == CLASS_ST {
                                i.imm as i64 as u64
                            } else {
                                self.r[s]
                            };
                            let a = self.r[d].wrapping_add(i.off as i64 as u64);
                            self.write(a, &v.to_le_bytes()[..n]);
                        }
                    }
                    (CLASS_JMP, _) => {
                        let src = if i.code & SRC_X != 0 {
                            self.r[s]
                        } else {
                            i.imm as i64 as u64
                        };
                        let dst = self.r[d];
                        let take = match i.code & 0xf0 {
                            0x00 => true,
                            0x10 => dst == src,
                            0x20 => dst > src,
                            0x30 => dst >= src,
                            0x40 => dst & src != 0,
                            0x50 => dst != src,
                            0x70 => dst as i64 >= src as i64,
                            op => panic!("jump op {op:#x}"),
                        };
                        if take {
                            pc = (pc as i64 + i64::from(i.off)) as usize;
                        }
                    }
                    _ => panic!("opcode {:#x}", i.code),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::interp::Vm;
    use super::*;

    #[test]
    fn labels_resolve_forward_and_backward_and_the_program_computes() {
        // r0 = sum of 1..=5 with a backward loop and a forward exit
        let mut a = Asm::new();
        let (top, done) = (a.label(), a.label());
        a.alu_imm(Alu::Mov, 0, 0).alu_imm(Alu::Mov, 1, 5);
        a.bind(top);
        a.jmp_imm(Jmp::Eq, 1, 0, done)
            .alu_reg(Alu::Add, 0, 1)
            .alu_imm(Alu::Add, 1, -1)
            .ja(top);
        a.bind(done);
        a.exit();
        let p = a.finish().unwrap();
        assert_eq!(p[2].off, 3, "forward: over add, add, ja");
        assert_eq!(p[5].off, -4, "backward: to the test");
        assert_eq!(Vm::new(vec![]).run(&p, &mut |_, _| 0), 15);
    }

    #[test]
    fn an_unbound_label_is_refused() {
        let mut a = Asm::new();
        let l = a.label();
        a.ja(l).exit();
        assert_eq!(a.finish(), Err(AsmError::Unbound(0)));
    }

    #[test]
    fn stores_loads_and_the_64_bit_immediate_round_trip_through_the_stack() {
        let mut a = Asm::new();
        a.ld_imm64(1, 0x0123_4567_89ab_cdef)
            .stx(Size::DW, 10, -8, 1)
            .st(Size::W, 10, -16, -2)
            .ldx(Size::H, 2, 10, -8)
            .ldx(Size::W, 3, 10, -16)
            .alu_imm(Alu::Mov, 4, 1)
            .atomic_add(10, -8, 4)
            .ldx(Size::DW, 0, 10, -8)
            .exit();
        let p = a.finish().unwrap();
        let mut vm = Vm::new(vec![]);
        assert_eq!(vm.run(&p, &mut |_, _| 0), 0x0123_4567_89ab_cdf0);
        assert_eq!(vm.r[2], 0xcdef);
        assert_eq!(vm.r[3], 0xffff_fffe);
    }

    #[test]
    fn fetch_add_returns_the_old_value_and_sub_and_unsigned_ge_compute() {
        // 40 + 2 fetched as 40; r0 = 1 when `42 - 40 >= 2` jumps (over +100) and `1 >= 2`
        // does not (+1)
        let mut a = Asm::new();
        let (no, no2) = (a.label(), a.label());
        a.st(Size::DW, 10, -8, 40)
            .alu_imm(Alu::Mov, 1, 2)
            .atomic_fetch_add(10, -8, 1)
            .ldx(Size::DW, 2, 10, -8)
            .alu_reg(Alu::Mov, 3, 2)
            .alu_reg(Alu::Sub, 3, 1)
            .alu_imm(Alu::Mov, 0, 0)
            .jmp_imm(Jmp::Ge, 3, 2, no)
            .alu_imm(Alu::Add, 0, 100);
        a.bind(no);
        a.alu_imm(Alu::Mov, 4, 1)
            .jmp_imm(Jmp::Ge, 4, 2, no2)
            .alu_imm(Alu::Add, 0, 1);
        a.bind(no2);
        a.exit();
        let mut vm = Vm::new(vec![]);
        assert_eq!(vm.run(&a.finish().unwrap(), &mut |_, _| 0), 1);
        assert_eq!((vm.r[1], vm.r[2], vm.r[3]), (40, 42, 2));
        // an unsigned comparison: -1 is the largest
        let mut a = Asm::new();
        let big = a.label();
        a.alu_imm(Alu::Mov, 0, 0)
            .alu_imm(Alu::Mov, 1, -1)
            .jmp_imm(Jmp::Ge, 1, 5, big)
            .exit();
        a.bind(big);
        a.alu_imm(Alu::Mov, 0, 7).exit();
        assert_eq!(Vm::new(vec![]).run(&a.finish().unwrap(), &mut |_, _| 0), 7);
    }
}
