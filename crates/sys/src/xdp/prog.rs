//! The XDP program latlab attaches, assembled with [`crate::bpf::asm`] (pure code: no
//! system call here, so the program is run by the assembler's interpreter in the tests).
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

use crate::bpf::asm::{Alu, Asm, Jmp, Size};
pub use crate::bpf::Insn;

/// `BPF_FUNC_redirect_map`.
const FUNC_REDIRECT_MAP: i32 = 51;
/// `XDP_PASS`.
pub const XDP_PASS: i32 = 2;
/// `XDP_REDIRECT`.
pub const XDP_REDIRECT: i32 = 4;

/// Most UDP ports one program steers.
pub const MAX_PORTS: usize = 8;

/// The program steering IPv4/UDP frames to any of `ports` (at most [`MAX_PORTS`]) into
/// the XSKMAP `map_fd` at the receiving queue's index.
pub fn steer_program(map_fd: i32, ports: &[u16]) -> Vec<Insn> {
    let ports = &ports[..ports.len().min(MAX_PORTS)];
    let mut a = Asm::new();
    if ports.is_empty() {
        // a send-only port: everything passes (the verifier refuses unreachable code, so
        // no redirect block)
        a.alu_imm(Alu::Mov, 0, XDP_PASS).exit();
        return a.finish().expect("no labels");
    }
    let (pass, redirect) = (a.label(), a.label());
    // r6 = ctx; r2 = ctx->data; r3 = ctx->data_end; the headers must lie within
    a.alu_reg(Alu::Mov, 6, 1)
        .ldx(Size::W, 2, 1, 0)
        .ldx(Size::W, 3, 1, 4)
        .alu_reg(Alu::Mov, 4, 2)
        .alu_imm(Alu::Add, 4, 42)
        .jmp_reg(Jmp::Gt, 4, 3, pass);
    // (half-words load little-endian: the constants are byte-swapped)
    a.ldx(Size::H, 5, 2, 12) // ethertype
        .jmp_imm(Jmp::Ne, 5, i32::from(0x0800u16.swap_bytes()), pass)
        .ldx(Size::B, 5, 2, 14) // version/ihl
        .jmp_imm(Jmp::Ne, 5, 0x45, pass)
        .ldx(Size::B, 5, 2, 23) // protocol
        .jmp_imm(Jmp::Ne, 5, 17, pass)
        .ldx(Size::H, 5, 2, 20) // flags/fragment offset
        .alu_imm(Alu::And, 5, i32::from(0x3fffu16.swap_bytes()))
        .jmp_imm(Jmp::Ne, 5, 0, pass)
        .ldx(Size::H, 5, 2, 36); // UDP destination port
    for &port in ports {
        a.jmp_imm(Jmp::Eq, 5, i32::from(port.swap_bytes()), redirect);
    }
    a.ja(pass);
    a.bind(redirect);
    // bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS: the action without a socket)
    a.ldx(Size::W, 2, 6, 16)
        .ld_map(1, map_fd)
        .alu_imm(Alu::Mov, 3, XDP_PASS)
        .call(FUNC_REDIRECT_MAP)
        .exit();
    a.bind(pass);
    a.alu_imm(Alu::Mov, 0, XDP_PASS).exit();
    a.finish().expect("every label is bound")
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

    use crate::bpf::asm::interp::{Region, Vm};
    use crate::bpf::asm::{CALL, LD_IMM64, PSEUDO_MAP_FD};

    /// Runs `p` on `frame` received on `queue` in the assembler's interpreter (any load
    /// outside the frame or the context panics); the helper returns `XDP_REDIRECT`.
    fn run(p: &[Insn], frame: &[u8], queue: u32) -> i32 {
        const CTX: u64 = 0x100;
        const DATA: u32 = 0x1000;
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index
        let mut ctx = Vec::new();
        for v in [DATA, DATA + frame.len() as u32, DATA, 1, queue] {
            ctx.extend(v.to_le_bytes());
        }
        let mut vm = Vm::new(vec![
            Region {
                base: CTX,
                bytes: ctx,
            },
            Region {
                base: u64::from(DATA),
                bytes: frame.to_vec(),
            },
        ]);
        vm.r[1] = CTX;
        vm.run(p, &mut |vm, f| {
            assert_eq!(f, FUNC_REDIRECT_MAP);
            assert_eq!(vm.r[2], u64::from(queue));
            assert_eq!(vm.r[3], XDP_PASS as u64);
            XDP_REDIRECT as u64
        }) as i32
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
        let jeq = crate::bpf::asm::CLASS_JMP | Jmp::Eq as u8;
        assert_eq!(p.iter().filter(|i| i.code == jeq).count(), MAX_PORTS);
        assert_eq!(std::mem::size_of::<Insn>(), 8);
        let none = steer_program(42, &[]);
        assert_eq!(run(&none, &udp_frame(7000), 0), XDP_PASS);
        assert!(none.iter().all(|i| i.code != CALL));
    }
}
