// What a sched_switch costs the task that switches, with the recorders --explain could use
// (issue 13 overhead), measured in alternating blocks inside one process so that a host
// whose speed drifts from second to second hits every configuration alike:
//   none        nothing attached
//   tr_rec      a private tracefs instance recording sched_switch (record-cmd off, x86-tsc)
//   tr_filt     the same with a filter that drops every switch
//   bpf_empty   a BPF program on the sched_switch raw tracepoint that returns at once
//   bpf_ring    one that writes a 32-byte record into an 8 MiB BPF ring buffer
//   bpf_slot    one that reserves a 32-byte slot of an 8 MiB mmapable array with an atomic
//               fetch-and-add on a head counter (checked against a reader's tail), writes
//               the record there and stores its sequence number last (a ring of our own,
//               single CPU, no lock)
//   tpbtf_empty a BTF-typed raw tracepoint program (tp_btf, what the recorder attaches) on
//               sched_switch that returns at once
//   tpbtf_ktime the same calling bpf_ktime_get_ns() first (every recorded event's timestamp)
//   fentry_empty a program on vfs_write's fentry (a BPF trampoline, called directly, no
//               indirect call through the tracepoint's iterator) that returns at once;
//               vfs_write runs once per switch here, as sched_switch does
//   fexit_pair  fentry and fexit programs on vfs_write (one trampoline, two programs): what
//               recording a softirq's entry and exit through its action function would cost,
//               against two tracepoint runs per softirq
// Two threads pinned to one CPU pass a token through pipes (2 switches per round trip);
// each block times N round trips. Every cycle runs each configuration once, in an order
// that rotates; a configuration's cost is the median over cycles of (its block - the none
// block of the same cycle) / 2 per switch. Needs root.
//   event-cost CYCLES N CPU
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long bpf(int cmd, union bpf_attr *a) { return syscall(__NR_bpf, cmd, a, sizeof(*a)); }
#define I(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

static int slot_ctl = -1; // the bpf_slot program's control array (head, tail)
static int mkmap(int type, unsigned value, unsigned entries, unsigned flags, const char *what) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = type; a.key_size = type == BPF_MAP_TYPE_RINGBUF ? 0 : 4;
    a.value_size = value; a.max_entries = entries; a.map_flags = flags;
    int fd = bpf(BPF_MAP_CREATE, &a);
    if (fd < 0) { perror(what); exit(3); }
    return fd;
}
// r0 = bpf_map_lookup_elem(map fd, r10 + key): 6 instructions
static int lookup(struct bpf_insn *p, int n, int fd, short key) {
    p[n++] = I(BPF_LD | BPF_IMM | BPF_DW, 1, BPF_PSEUDO_MAP_FD, 0, fd);
    p[n++] = I(0, 0, 0, 0, 0);
    p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
    p[n++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, key);
    p[n++] = I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
    return n;
}
// The type id of the BTF type NAME of KIND in /sys/kernel/btf/vmlinux (12 FUNC, 8 TYPEDEF).
static unsigned btf_id(const char *name, unsigned kind) {
    static char *b;
    static long len;
    if (!b) {
        FILE *f = fopen("/sys/kernel/btf/vmlinux", "rb");
        if (!f) { perror("/sys/kernel/btf/vmlinux"); exit(3); }
        long cap = 1 << 20;
        b = malloc(cap);
        size_t r;
        while ((r = fread(b + len, 1, cap - len, f)) > 0) { len += r; if (len == cap) b = realloc(b, cap *= 2); }
        fclose(f);
    }
    unsigned hdr = *(unsigned *)(b + 4), toff = *(unsigned *)(b + 8), tlen = *(unsigned *)(b + 12),
             soff = *(unsigned *)(b + 16);
    const char *types = b + hdr + toff, *strs = b + hdr + soff;
    unsigned id = 1;
    for (long o = 0; o < tlen; id++) {
        unsigned no = *(unsigned *)(types + o), info = *(unsigned *)(types + o + 4);
        unsigned k = (info >> 24) & 0x1f, vlen = info & 0xffff;
        if (k == kind && !strcmp(strs + no, name)) return id;
        o += 12;
        switch (k) {
        case 1: case 14: case 17: o += 4; break;
        case 3: o += 12; break;
        case 4: case 5: case 15: case 19: o += 12L * vlen; break;
        case 6: case 13: o += 8L * vlen; break;
        }
    }
    fprintf(stderr, "BTF has no type %s of kind %u\n", name, kind);
    exit(3);
}
// Loads an empty BPF_PROG_TYPE_TRACING program of ATTACH type (BPF_TRACE_RAW_TP, _FENTRY,
// _FEXIT) on BTF type BTF_ID; returns its fd, or -2 where the kernel refuses fentry/fexit
// programs (EPERM: this guest's kernel, whose ftrace function hooks are locked down, so the
// recorder cannot use trampolines).
static int load_tracing_n(unsigned attach_type, unsigned id, int ktime) {
    struct bpf_insn p[3] = {I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ktime_get_ns),
                            I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0), I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)};
    static char log[4096];
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_TRACING;
    a.expected_attach_type = attach_type;
    a.attach_btf_id = id;
    a.insn_cnt = ktime ? 3 : 2;
    a.insns = (unsigned long)(ktime ? p : p + 1);
    a.license = (unsigned long)"GPL";
    a.log_level = 1; a.log_size = sizeof log; a.log_buf = (unsigned long)log;
    int fd = bpf(BPF_PROG_LOAD, &a);
    if (fd < 0 && errno == EPERM && attach_type != BPF_TRACE_RAW_TP) return -2; // no trampolines here
    if (fd < 0) { fprintf(stderr, "tracing program (attach type %u, btf id %u): %s\n", attach_type, id, strerror(errno)); fputs(log, stderr); exit(3); }
    return fd;
}
static int load(int ring) {
    struct bpf_insn p[48];
    int n = 0;
    union bpf_attr a;
    if (ring == 1) {
        int mfd = mkmap(BPF_MAP_TYPE_RINGBUF, 0, 8 << 20, 0, "ringbuf map");
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0);
        p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 8, 0);
        p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -32, 0);
        p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 16, 0);
        p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -24, 0);
        p[n++] = I(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -16, 0);
        p[n++] = I(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -8, 0);
        p[n++] = I(BPF_LD | BPF_IMM | BPF_DW, 1, BPF_PSEUDO_MAP_FD, 0, mfd);
        p[n++] = I(0, 0, 0, 0, 0);
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
        p[n++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -32);
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 32);
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 0);
        p[n++] = I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output);
    } else if (ring == 2) {
        enum { SLOTS = 1 << 18 };
        int sfd = mkmap(BPF_MAP_TYPE_ARRAY, 32, SLOTS, BPF_F_MMAPABLE, "slot array");
        int cfd = mkmap(BPF_MAP_TYPE_ARRAY, 16, 1, BPF_F_MMAPABLE, "control array");
        slot_ctl = cfd;
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0);            // r6 = ctx
        p[n++] = I(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0);              // key 0
        n = lookup(p, n, cfd, -4);
        p[n++] = I(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 20, 0);              // -> out
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 7, 0, 0, 1);
        p[n++] = I(BPF_STX | BPF_ATOMIC | BPF_DW, 0, 7, 0, BPF_ADD | BPF_FETCH); // r7 = head++
        p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 8, 0);              // tail
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 7, 0, 0);
        p[n++] = I(BPF_ALU64 | BPF_SUB | BPF_X, 2, 1, 0, 0);
        p[n++] = I(BPF_JMP | BPF_JGE | BPF_K, 2, 0, 14, SLOTS);          // full -> out
        p[n++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 8, 7, 0, 0);
        p[n++] = I(BPF_ALU64 | BPF_AND | BPF_K, 8, 0, 0, SLOTS - 1);
        p[n++] = I(BPF_STX | BPF_MEM | BPF_W, 10, 8, -8, 0);
        n = lookup(p, n, sfd, -8);
        p[n++] = I(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 5, 0);               // -> out
        p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 8, 0);
        p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 0, 0);
        p[n++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 16, 0);
        p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 8, 0);
        p[n++] = I(BPF_STX | BPF_MEM | BPF_DW, 0, 7, 24, 0);             // sequence last
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
    int fd = bpf(BPF_PROG_LOAD, &a);
    if (fd < 0) { perror("BPF program"); fputs(log, stderr); exit(3); }
    return fd;
}
static int load_tracing(unsigned attach_type, unsigned id) { return load_tracing_n(attach_type, id, 0); }
// Attaches PROG: a raw tracepoint program to sched_switch, a tracing program (TRACING: 1)
// to the BTF target it was loaded for. Returns the link's fd (closing it detaches).
static int attach(int prog, int tracing) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.raw_tracepoint.name = tracing ? 0 : (unsigned long)"sched_switch";
    a.raw_tracepoint.prog_fd = prog;
    int fd = bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
    if (fd < 0) { perror("attach"); exit(3); }
    return fd;
}
static char inst[256];
static void put(const char *rel, const char *v) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", inst, rel);
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0 || write(fd, v, strlen(v)) < 0) { fprintf(stderr, "%s: %s\n", path, strerror(errno)); exit(3); }
    close(fd);
}
static void cleanup(void) { if (inst[0]) { put("tracing_on", "0"); put("events/sched/sched_switch/enable", "0"); rmdir(inst); } }

static int p1[2], p2[2], cpu;
static long n_rt;
static pthread_barrier_t start, done;
static volatile int quit;
static void pin(void) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static double block_ns;
static void *ping(void *x) {
    (void)x; pin(); char c = 0;
    for (;;) {
        pthread_barrier_wait(&start);
        if (quit) return NULL;
        double t0 = now();
        for (long i = 0; i < n_rt; i++) { if (write(p1[1], &c, 1) != 1 || read(p2[0], &c, 1) != 1) exit(1); }
        block_ns = now() - t0;
        pthread_barrier_wait(&done);
    }
}
static void *pong(void *x) {
    (void)x; pin(); char c;
    for (;;) {
        pthread_barrier_wait(&start);
        if (quit) return NULL;
        for (long i = 0; i < n_rt; i++) { if (read(p1[0], &c, 1) != 1 || write(p2[1], &c, 1) != 1) exit(1); }
        pthread_barrier_wait(&done);
    }
}
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
enum { NONE, TR_REC, TR_FILT, BPF_EMPTY, BPF_RING, BPF_SLOT, TPBTF_EMPTY, TPBTF_KTIME, FENTRY_EMPTY, FEXIT_PAIR, NC };
static const char *names[NC] = {"none", "tr_rec", "tr_filt", "bpf_empty", "bpf_ring", "bpf_slot",
                                "tpbtf_empty", "tpbtf_ktime", "fentry_empty", "fexit_pair"};

// The hold mode (see the header): prints "held N" once every program is attached.
static int hold(int n, char **tps) {
    int *links = calloc(n, sizeof *links);
    for (int i = 0; i < n; i++) {
        char ty[128];
        snprintf(ty, sizeof ty, "btf_trace_%s", tps[i]);
        links[i] = attach(load_tracing(BPF_TRACE_RAW_TP, btf_id(ty, 8)), 1);
    }
    printf("held %d\n", n);
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {}
    for (int i = 0; i < n; i++) close(links[i]);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "hold")) {
        if (argc < 3) { fprintf(stderr, "usage: event-cost hold TRACEPOINT...\n"); return 2; }
        return hold(argc - 2, argv + 2);
    }
    int cycles = argc > 1 ? atoi(argv[1]) : 40;
    n_rt = argc > 2 ? atol(argv[2]) : 20000;
    cpu = argc > 3 ? atoi(argv[3]) : 1;
    if (cycles < 3 || n_rt < 100) { fprintf(stderr, "usage: event-cost CYCLES>=3 N>=100 CPU\n"); return 2; }
    snprintf(inst, sizeof inst, "/sys/kernel/tracing/instances/latlab-cost-ab-%d", getpid());
    if (mkdir(inst, 0755)) { fprintf(stderr, "%s: %s\n", inst, strerror(errno)); inst[0] = 0; return 3; }
    atexit(cleanup);
    put("trace_options", "norecord-cmd"); put("trace_clock", "x86-tsc"); put("buffer_size_kb", "4096");
    put("tracing_on", "1");
    int pe = load(0), pr = load(1), ps = load(2);
    unsigned tp_id = btf_id("btf_trace_sched_switch", 8), pw_id = btf_id("vfs_write", 12);
    int pk = load_tracing_n(BPF_TRACE_RAW_TP, tp_id, 1);
    int pt = load_tracing(BPF_TRACE_RAW_TP, tp_id), pf = load_tracing(BPF_TRACE_FENTRY, pw_id),
        px = load_tracing(BPF_TRACE_FEXIT, pw_id);
    int refused[NC] = {0};
    refused[FENTRY_EMPTY] = pf == -2;
    refused[FEXIT_PAIR] = pf == -2 || px == -2;
    if (pipe(p1) || pipe(p2)) return 1;
    pthread_barrier_init(&start, NULL, 3); pthread_barrier_init(&done, NULL, 3);
    pthread_t a, b;
    pthread_create(&a, NULL, ping, NULL); pthread_create(&b, NULL, pong, NULL);
    double *t = calloc((size_t)cycles * NC, sizeof *t);
    for (int k = -1; k < cycles; k++) {           // cycle -1 warms up and is dropped
        for (int j = 0; j < NC; j++) {
            int c = (j + (k < 0 ? 0 : k)) % NC, lfd = -1, lfd2 = -1;
            if (c == TR_REC || c == TR_FILT) {
                put("events/sched/sched_switch/filter", c == TR_FILT ? "prev_pid == 0 && next_pid == 0" : "0");
                put("events/sched/sched_switch/enable", "1");
            } else if (refused[c]) {
                // measured as a block with nothing attached, reported as refused
            } else if (c == BPF_EMPTY) lfd = attach(pe, 0);
            else if (c == BPF_RING) lfd = attach(pr, 0);
            else if (c == BPF_SLOT) lfd = attach(ps, 0);
            else if (c == TPBTF_EMPTY) lfd = attach(pt, 1);
            else if (c == TPBTF_KTIME) lfd = attach(pk, 1);
            else if (c == FENTRY_EMPTY) lfd = attach(pf, 1);
            else if (c == FEXIT_PAIR) { lfd = attach(pf, 1); lfd2 = attach(px, 1); }
            pthread_barrier_wait(&start);
            pthread_barrier_wait(&done);
            if (c == TR_REC || c == TR_FILT) put("events/sched/sched_switch/enable", "0");
            if (lfd >= 0) close(lfd);
            if (lfd2 >= 0) close(lfd2);
            if (k >= 0) t[k * NC + c] = block_ns / n_rt;
        }
    }
    quit = 1; pthread_barrier_wait(&start);
    printf("| configuration | round trip, median of blocks | per switch, median of paired differences (quartiles) |\n|---|---|---|\n");
    double *v = calloc(cycles, sizeof *v);
    for (int c = 0; c < NC; c++) {
        for (int k = 0; k < cycles; k++) v[k] = t[k * NC + c];
        qsort(v, cycles, sizeof *v, cmp);
        double med = v[cycles / 2];
        if (c == NONE) { printf("| %s | %.3f µs | - |\n", names[c], med / 1e3); continue; }
        if (refused[c]) { printf("| %s | - | refused by the kernel (EPERM: no BPF trampolines) |\n", names[c]); continue; }
        for (int k = 0; k < cycles; k++) v[k] = (t[k * NC + c] - t[k * NC + NONE]) / 2;
        qsort(v, cycles, sizeof *v, cmp);
        printf("| %s | %.3f µs | %+.0f ns (%+.0f…%+.0f) |\n", names[c], med / 1e3, v[cycles / 2], v[cycles / 4], v[3 * cycles / 4]);
    }
    unsigned key = 0; unsigned long long ctl[2] = {0, 0};
    union bpf_attr la;
    memset(&la, 0, sizeof la);
    la.map_fd = slot_ctl; la.key = (unsigned long)&key; la.value = (unsigned long)ctl;
    if (bpf(BPF_MAP_LOOKUP_ELEM, &la)) { perror("control array lookup"); return 3; }
    printf("\nbpf_slot wrote %llu records (%d blocks of %ld round trips, 2 switches each)\n",
           ctl[0], cycles + 1, n_rt);
    return 0;
}
