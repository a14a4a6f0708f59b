// scripts/explain-event-cost.sh: a BPF program on the sched_switch raw tracepoint, to price
// a BPF recorder for --explain (issue 13) beside the tracefs rows. Attached until stdin closes.
// MODE empty: returns at once (what a hit costs when the program drops it first thing);
// MODE ringbuf: writes a 32-byte record (prev/next task pointers, padding) per switch
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static long bpf(int cmd, union bpf_attr *a) { return syscall(__NR_bpf, cmd, a, sizeof(*a)); }
#define I(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "empty";
    struct bpf_insn p[32];
    int n = 0, mfd = -1;
    union bpf_attr a;
    if (!strcmp(mode, "ringbuf")) {
        memset(&a, 0, sizeof a);
        a.map_type = BPF_MAP_TYPE_RINGBUF;
        a.max_entries = 8 << 20;
        mfd = bpf(BPF_MAP_CREATE, &a);
        if (mfd < 0) { perror("map"); return 1; }
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0);         // r6 = ctx
        p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 8, 0);          // r1 = prev
        p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -32, 0);
        p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 16, 0);         // r1 = next
        p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -24, 0);
        p[n++] = I(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -16, 0);
        p[n++] = I(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -8, 0);
        p[n++] = I(BPF_LD | BPF_IMM | BPF_DW, 1, BPF_PSEUDO_MAP_FD, 0, mfd); // r1 = map
        p[n++] = I(0, 0, 0, 0, 0);
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
        p[n++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -32);       // r2 = &rec
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 32);
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 0);
        p[n++] = I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output);
    }
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
    p[n++] = I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    static char log[65536];
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    a.insn_cnt = n;
    a.insns = (unsigned long)p;
    a.license = (unsigned long)"GPL";
    a.log_level = 1; a.log_size = sizeof log; a.log_buf = (unsigned long)log;
    int pfd = bpf(BPF_PROG_LOAD, &a);
    if (pfd < 0) { perror("load"); fputs(log, stderr); return 1; }
    memset(&a, 0, sizeof a);
    a.raw_tracepoint.name = (unsigned long)"sched_switch";
    a.raw_tracepoint.prog_fd = pfd;
    int lfd = bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
    if (lfd < 0) { perror("attach"); return 1; }
    printf("ready\n"); fflush(stdout);
    char c; while (read(0, &c, 1) > 0) {}
    return 0;
}
