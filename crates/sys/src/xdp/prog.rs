//! The XDP program latlab attaches, hand-assembled as eBPF instructions (pure code: no
//! system call here, so the encoding is unit-tested).
//!
//! ```text
//! r6 = ctx
//! r2 = ctx->data; r3 = ctx->data_end
//! if data + 42 > data_end          goto pass   (Ethernet + IPv4 + UDP headers)
//! if eth.type != 0x0800            goto pass
//! if ip.version/ihl != 0x45        goto pass   (no IP options)
//! if ip.protocol != 17             goto pass   (UDP)
//! if ip.frag & 0x3fff != 0         goto pass   (no fragments)
//! if udp.dst in ports              goto redirect
//! pass:     return XDP_PASS
//! redirect: return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)
//! ```
//! Everything that is not IPv4/UDP to one of latlab's ports goes on to the kernel's stack
//! unchanged (ARP, ICMP, other traffic); `bpf_redirect_map`'s flags argument makes a
//! queue without a socket in the map pass its frames too.

use crate::bpf::ins;
pub use crate::bpf::Insn;

const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const LDX_B: u8 = 0x71;
const MOV64_X: u8 = 0xbf;
const MOV64_K: u8 = 0xb7;
const ADD64_K: u8 = 0x07;
const AND64_K: u8 = 0x57;
const JGT_X: u8 = 0x2d;
const JNE_K: u8 = 0x55;
const JEQ_K: u8 = 0x15;
const JA: u8 = 0x05;
const LD_IMM64: u8 = 0x18;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
/// `BPF_PSEUDO_MAP_FD`: the 64-bit immediate is a map's file descriptor.
const PSEUDO_MAP_FD: u8 = 1;
/// `BPF_FUNC_redirect_map`.
const FUNC_REDIRECT_MAP: i32 = 51;
/// `XDP_PASS`.
pub const XDP_PASS: i32 = 2;
/// `XDP_REDIRECT`.
pub const XDP_REDIRECT: i32 = 4;

/// Most UDP ports one program steers.
pub const MAX_PORTS: usize = 8;

/// The program steering IPv4/UDP frames to any of `ports` (at most [`MAX_PORTS`]) into
/// the XSKMAP `map_fd` at the receiving queue's index. Jump offsets are computed here.
pub fn steer_program(map_fd: i32, ports: &[u16]) -> Vec<Insn> {
    let ports = &ports[..ports.len().min(MAX_PORTS)];
    if ports.is_empty() {
        // a send-only port: everything passes (the verifier refuses unreachable code, so
        // no redirect block)
        return vec![ins(MOV64_K, 0, 0, 0, XDP_PASS), ins(EXIT, 0, 0, 0, 0)];
    }
    // Layout: 0..=5 prologue and bounds check, then 9 header checks, then one JEQ per
    // port, then `ja pass`, redirect block (5 insns: 2 + ld_imm64 2 + call... see below),
    // pass block (2).
    let mut p = vec![
        ins(MOV64_X, 6, 1, 0, 0), // r6 = ctx
        ins(LDX_W, 2, 1, 0, 0),   // r2 = ctx->data
        ins(LDX_W, 3, 1, 4, 0),   // r3 = ctx->data_end
        ins(MOV64_X, 4, 2, 0, 0), // r4 = r2
        ins(ADD64_K, 4, 0, 0, 42),
    ];
    // Conditional jumps to `pass` are fixed up once its index is known.
    let mut to_pass = Vec::new();
    to_pass.push(p.len());
    p.push(ins(JGT_X, 4, 3, 0, 0)); // if r4 > r3 goto pass
    p.push(ins(LDX_H, 5, 2, 12, 0)); // ethertype (loaded little-endian)
    to_pass.push(p.len());
    p.push(ins(JNE_K, 5, 0, 0, i32::from(0x0800u16.swap_bytes())));
    p.push(ins(LDX_B, 5, 2, 14, 0)); // version/ihl
    to_pass.push(p.len());
    p.push(ins(JNE_K, 5, 0, 0, 0x45));
    p.push(ins(LDX_B, 5, 2, 23, 0)); // protocol
    to_pass.push(p.len());
    p.push(ins(JNE_K, 5, 0, 0, 17));
    p.push(ins(LDX_H, 5, 2, 20, 0)); // flags/fragment offset
    p.push(ins(AND64_K, 5, 0, 0, i32::from(0x3fffu16.swap_bytes())));
    to_pass.push(p.len());
    p.push(ins(JNE_K, 5, 0, 0, 0));
    p.push(ins(LDX_H, 5, 2, 36, 0)); // UDP destination port
    let mut to_redirect = Vec::new();
    for &port in ports {
        to_redirect.push(p.len());
        p.push(ins(JEQ_K, 5, 0, 0, i32::from(port.swap_bytes())));
    }
    to_pass.push(p.len());
    p.push(ins(JA, 0, 0, 0, 0));
    let redirect = p.len();
    p.push(ins(LDX_W, 2, 6, 16, 0)); // r2 = ctx->rx_queue_index
    p.push(ins(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd)); // r1 = &xsks
    p.push(ins(0, 0, 0, 0, 0));
    p.push(ins(MOV64_K, 3, 0, 0, XDP_PASS)); // r3 = XDP_PASS (action if no socket)
    p.push(ins(CALL, 0, 0, 0, FUNC_REDIRECT_MAP));
    p.push(ins(EXIT, 0, 0, 0, 0));
    let pass = p.len();
    p.push(ins(MOV64_K, 0, 0, 0, XDP_PASS));
    p.push(ins(EXIT, 0, 0, 0, 0));
    for i in to_pass {
        p[i].off = (pass - i - 1) as i16;
    }
    for i in to_redirect {
        p[i].off = (redirect - i - 1) as i16;
    }
    p
}

/// What [`steer_program`] decides for `frame`, computed in Rust: `true` = redirect to the
/// socket. The reference the instructions are tested against (by an interpreter below).
pub fn steers(frame: &[u8], ports: &[u16]) -> bool {
    if frame.len() < 42 {
        return false;
    }
    let be16 = |o: usize| u16::from_be_bytes([frame[o], frame[o + 1]]);
    be16(12) == 0x0800
        && frame[14] == 0x45
        && frame[23] == 17
        && be16(20) & 0x3fff == 0
        && ports[..ports.len().min(MAX_PORTS)].contains(&be16(36))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny interpreter for exactly the instructions [`steer_program`] emits; the
    /// helper call returns `XDP_REDIRECT`.
    fn run(p: &[Insn], frame: &[u8], queue: u32) -> i32 {
        let mut r = [0i64; 11];
        // ctx: data at "address" 0x1000, data_end after the frame; r1 = ctx marker
        const DATA: i64 = 0x1000;
        r[1] = -1;
        let mut pc = 0usize;
        let load = |addr: i64, size: usize, r6ctx: bool| -> i64 {
            if r6ctx {
                unreachable!()
            }
            let o = (addr - DATA) as usize;
            assert!(o + size <= frame.len(), "out-of-bounds load at {o}");
            let mut v = 0i64;
            for k in 0..size {
                v |= i64::from(frame[o + k]) << (8 * k);
            }
            v
        };
        loop {
            let i = p[pc];
            let (dst, src) = ((i.regs & 0xf) as usize, (i.regs >> 4) as usize);
            pc += 1;
            match i.code {
                MOV64_X => r[dst] = r[src],
                MOV64_K => r[dst] = i64::from(i.imm),
                ADD64_K => r[dst] += i64::from(i.imm),
                AND64_K => r[dst] &= i64::from(i.imm),
                LDX_W if r[src] == -1 => {
                    r[dst] = match i.off {
                        0 => DATA,
                        4 => DATA + frame.len() as i64,
                        16 => i64::from(queue),
                        o => panic!("ctx offset {o}"),
                    }
                }
                LDX_W | LDX_H | LDX_B => {
                    let size = match i.code {
                        LDX_W => 4,
                        LDX_H => 2,
                        _ => 1,
                    };
                    r[dst] = load(r[src] + i64::from(i.off), size, false);
                }
                JGT_X => {
                    if r[dst] > r[src] {
                        pc += i.off as usize
                    }
                }
                JNE_K => {
                    if r[dst] != i64::from(i.imm) {
                        pc += i.off as usize
                    }
                }
                JEQ_K => {
                    if r[dst] == i64::from(i.imm) {
                        pc += i.off as usize
                    }
                }
                JA => pc += i.off as usize,
                LD_IMM64 => {
                    r[dst] = i64::from(i.imm);
                    pc += 1;
                }
                CALL => {
                    assert_eq!(i.imm, FUNC_REDIRECT_MAP);
                    assert_eq!(r[2], i64::from(queue));
                    assert_eq!(r[3], i64::from(XDP_PASS));
                    r[0] = i64::from(XDP_REDIRECT);
                }
                EXIT => return r[0] as i32,
                c => panic!("opcode {c:#x}"),
            }
        }
    }

    fn udp_frame(port: u16) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[23] = 17;
        f[36..38].copy_from_slice(&port.to_be_bytes());
        f
    }

    #[test]
    fn steers_latlab_ports_and_passes_the_rest() {
        let ports = [7000, 7001];
        let p = steer_program(9, &ports);
        for (frame, want) in [
            (udp_frame(7000), true),
            (udp_frame(7001), true),
            (udp_frame(53), false),
            (udp_frame(7000)[..41].to_vec(), false),
            (
                {
                    let mut f = udp_frame(7000);
                    f[12] = 0x86;
                    f
                },
                false,
            ),
            (
                {
                    let mut f = udp_frame(7000);
                    f[14] = 0x46;
                    f
                },
                false,
            ),
            (
                {
                    let mut f = udp_frame(7000);
                    f[23] = 6;
                    f
                },
                false,
            ),
            (
                {
                    let mut f = udp_frame(7000);
                    f[20] = 0x20;
                    f
                },
                false,
            ), // MF
            (
                {
                    let mut f = udp_frame(7000);
                    f[20] = 0x40;
                    f
                },
                true,
            ), // DF only
            (
                {
                    let mut f = udp_frame(7000);
                    f[21] = 1;
                    f
                },
                false,
            ), // offset
        ] {
            assert_eq!(steers(&frame, &ports), want, "{frame:?}");
            let got = run(&p, &frame, 0);
            assert_eq!(got == XDP_REDIRECT, want, "{frame:?}");
            assert!(got == XDP_REDIRECT || got == XDP_PASS);
        }
    }

    #[test]
    fn map_fd_is_a_pseudo_map_load_and_ports_are_capped() {
        let p = steer_program(42, &[1; 20]);
        let ld = p.iter().position(|i| i.code == LD_IMM64).unwrap();
        assert_eq!(p[ld].imm, 42);
        assert_eq!(p[ld].regs >> 4, PSEUDO_MAP_FD);
        assert_eq!(p.iter().filter(|i| i.code == JEQ_K).count(), MAX_PORTS);
        assert_eq!(std::mem::size_of::<Insn>(), 8);
        let none = steer_program(42, &[]);
        assert_eq!(run(&none, &udp_frame(7000), 0), XDP_PASS);
        assert!(none.iter().all(|i| i.code != CALL));
    }
}
