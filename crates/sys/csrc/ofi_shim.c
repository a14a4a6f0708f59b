/* latlab's libfabric shim (feature `ofi` of latlab-sys).
 *
 * Most of libfabric's data-path API (fi_write, fi_send, fi_recv, fi_cq_read, fi_mr_reg,
 * fi_av_insert, fi_close, ...) is `static inline` in <rdma/fi_*.h>: it calls through the
 * provider's ops tables and has no symbol in libfabric.so that Rust could link against.
 * This file wraps those calls in real functions, and keeps `struct fi_info` (large, and
 * versioned) on the C side, so that the Rust declarations in src/ofi/ffi.rs stay a handful
 * of plain functions over opaque pointers and integers.
 *
 * Every function returns 0 (or a count) on success and a negative libfabric error code
 * (-FI_E...) on failure.
 *
 * libfabric is loaded on first use (dlopen), not linked: Debian's libfabric1 links the PSM
 * providers' libraries, and libinfinipath's constructor pins the process to CPU 0 and
 * sleeps ~775 x 125 us to calibrate its cycle counter, ~0.1-0.2 s at the start of every
 * process that links it, whatever the command (docs/benchmarks.md, "2026-11-28, fifth
 * session"). The five functions libfabric really exports that this file (and the inline
 * calls of its headers) use are renamed below to hidden forwarders that load it. */
#define _GNU_SOURCE
#define fi_getinfo latofi_dl_getinfo
#define fi_freeinfo latofi_dl_freeinfo
#define fi_dupinfo latofi_dl_dupinfo
#define fi_fabric latofi_dl_fabric
#define fi_strerror latofi_dl_strerror
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The library's soname: Debian's libfabric1 (the runtime package of libfabric-dev). */
#define LATOFI_SONAME "libfabric.so.1"

static pthread_once_t latofi_once = PTHREAD_ONCE_INIT;
static char latofi_dl_error[512];
static int (*real_getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                           struct fi_info **);
static void (*real_freeinfo)(struct fi_info *);
static struct fi_info *(*real_dupinfo)(const struct fi_info *);
static int (*real_fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
static const char *(*real_strerror)(int);

static void latofi_dl_load(void) {
    /* global, as a linked library would be: libfabric's own provider plugins and an MPI
     * transport using it in the same process find the one copy */
    void *h = dlopen(LATOFI_SONAME, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(latofi_dl_error, sizeof latofi_dl_error, "%s", e ? e : LATOFI_SONAME ": not found");
        return;
    }
    *(void **)&real_getinfo = dlsym(h, "fi_getinfo");
    *(void **)&real_freeinfo = dlsym(h, "fi_freeinfo");
    *(void **)&real_dupinfo = dlsym(h, "fi_dupinfo");
    *(void **)&real_fabric = dlsym(h, "fi_fabric");
    *(void **)&real_strerror = dlsym(h, "fi_strerror");
    if (!real_getinfo || !real_freeinfo || !real_dupinfo || !real_fabric || !real_strerror) {
        snprintf(latofi_dl_error, sizeof latofi_dl_error,
                 LATOFI_SONAME " lacks one of fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric, fi_strerror");
        real_getinfo = NULL;
    }
}

/* Loads libfabric once. Returns NULL when it is loaded, else why it could not be (a
 * static string). */
const char *latofi_load(void) {
    pthread_once(&latofi_once, latofi_dl_load);
    return real_getinfo ? NULL : latofi_dl_error;
}

__attribute__((visibility("hidden"))) int latofi_dl_getinfo(uint32_t version, const char *node,
                                                            const char *service, uint64_t flags,
                                                            const struct fi_info *hints,
                                                            struct fi_info **info) {
    if (latofi_load())
        return -FI_ENOSYS;
    return real_getinfo(version, node, service, flags, hints, info);
}
__attribute__((visibility("hidden"))) void latofi_dl_freeinfo(struct fi_info *info) {
    if (!latofi_load())
        real_freeinfo(info);
}
__attribute__((visibility("hidden"))) struct fi_info *latofi_dl_dupinfo(const struct fi_info *info) {
    return latofi_load() ? NULL : real_dupinfo(info);
}
__attribute__((visibility("hidden"))) int latofi_dl_fabric(struct fi_fabric_attr *attr,
                                                           struct fid_fabric **fabric, void *context) {
    if (latofi_load())
        return -FI_ENOSYS;
    return real_fabric(attr, fabric, context);
}
__attribute__((visibility("hidden"))) const char *latofi_dl_strerror(int err) {
    return latofi_load() ? "libfabric is not loaded" : real_strerror(err);
}

struct latofi {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
};

/* What latlab's endpoints need: reliable datagram endpoints with one-sided writes and
 * two-sided messages; completions only when the data is visible at the target (the
 * analogue of MPI_Win_flush); every memory-registration mode latlab can handle. */
static struct fi_info *latofi_hints(const char *prov) {
    struct fi_info *h = fi_allocinfo();
    if (!h)
        return NULL;
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_RMA | FI_MSG | FI_WRITE | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
    h->mode = 0;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    if (prov && prov[0]) {
        h->fabric_attr->prov_name = strdup(prov);
    }
    return h;
}

/* Writes the distinct provider names that satisfy latlab's hints, '\n'-separated and
 * NUL-terminated, into out (truncated to len). Returns the number of names or -err. */
int latofi_providers(char *out, size_t len) {
    struct fi_info *h = latofi_hints(NULL), *info = NULL, *p;
    int n = 0;
    size_t used = 0;
    if (!h)
        return -FI_ENOMEM;
    int r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
    fi_freeinfo(h);
    if (len)
        out[0] = 0;
    if (r == -FI_ENODATA)
        return 0;
    if (r)
        return r;
    for (p = info; p; p = p->next) {
        const char *name = p->fabric_attr->prov_name;
        size_t l = strlen(name);
        /* skip names already written */
        int seen = 0;
        const char *s = out;
        while (s && *s) {
            const char *e = strchr(s, '\n');
            size_t sl = e ? (size_t)(e - s) : strlen(s);
            if (sl == l && !strncmp(s, name, l)) {
                seen = 1;
                break;
            }
            s = e ? e + 1 : NULL;
        }
        if (seen)
            continue;
        if (used + l + 2 > len)
            break;
        memcpy(out + used, name, l);
        used += l;
        out[used++] = '\n';
        out[used] = 0;
        n++;
    }
    fi_freeinfo(info);
    return n;
}

void latofi_close(struct latofi *l) {
    if (!l)
        return;
    if (l->ep)
        fi_close(&l->ep->fid);
    if (l->av)
        fi_close(&l->av->fid);
    if (l->cq)
        fi_close(&l->cq->fid);
    if (l->domain)
        fi_close(&l->domain->fid);
    if (l->fabric)
        fi_close(&l->fabric->fid);
    if (l->info)
        fi_freeinfo(l->info);
    free(l);
}

/* Opens fabric, domain, address vector, completion queue and an enabled RDM endpoint of
 * the first provider that matches (prov: a provider name, or NULL/"" for any; libfabric's
 * FI_PROVIDER environment variable filters as well). */
int latofi_open(const char *prov, struct latofi **out) {
    struct fi_info *h = latofi_hints(prov);
    struct latofi *l = calloc(1, sizeof(*l));
    struct fi_av_attr av_attr;
    struct fi_cq_attr cq_attr;
    int r;
    *out = NULL;
    if (!h || !l) {
        fi_freeinfo(h);
        free(l);
        return -FI_ENOMEM;
    }
    r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &l->info);
    fi_freeinfo(h);
    if (r)
        goto fail;
    r = fi_fabric(l->info->fabric_attr, &l->fabric, NULL);
    if (r)
        goto fail;
    r = fi_domain(l->fabric, l->info, &l->domain, NULL);
    if (r)
        goto fail;
    memset(&av_attr, 0, sizeof(av_attr));
    av_attr.type = FI_AV_TABLE;
    r = fi_av_open(l->domain, &av_attr, &l->av, NULL);
    if (r)
        goto fail;
    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.wait_obj = FI_WAIT_NONE;
    cq_attr.size = 4096;
    r = fi_cq_open(l->domain, &cq_attr, &l->cq, NULL);
    if (r)
        goto fail;
    r = fi_endpoint(l->domain, l->info, &l->ep, NULL);
    if (r)
        goto fail;
    r = fi_ep_bind(l->ep, &l->av->fid, 0);
    if (r)
        goto fail;
    r = fi_ep_bind(l->ep, &l->cq->fid, FI_TRANSMIT | FI_RECV);
    if (r)
        goto fail;
    r = fi_enable(l->ep);
    if (r)
        goto fail;
    *out = l;
    return 0;
fail:
    latofi_close(l);
    return r < 0 ? r : -r;
}

const char *latofi_provider(const struct latofi *l) { return l->info->fabric_attr->prov_name; }
const char *latofi_fabric(const struct latofi *l) { return l->info->fabric_attr->name; }

/* bit 0: local buffers need descriptors (FI_MR_LOCAL); bit 1: remote addresses are virtual
 * addresses (FI_MR_VIRT_ADDR), else offsets into the region; bit 2: the provider picks the
 * keys (FI_MR_PROV_KEY). */
int latofi_mr_flags(const struct latofi *l) {
    int m = l->info->domain_attr->mr_mode;
    return ((m & FI_MR_LOCAL) ? 1 : 0) | ((m & FI_MR_VIRT_ADDR) ? 2 : 0) |
           ((m & FI_MR_PROV_KEY) ? 4 : 0);
}

size_t latofi_max_msg(const struct latofi *l) { return l->info->ep_attr->max_msg_size; }

int latofi_getname(struct latofi *l, void *addr, size_t *len) {
    return fi_getname(&l->ep->fid, addr, len);
}

int latofi_av_insert(struct latofi *l, const void *addr, uint64_t *fi_addr) {
    fi_addr_t a = FI_ADDR_UNSPEC;
    int r = fi_av_insert(l->av, addr, 1, &a, 0, NULL);
    if (r != 1)
        return r < 0 ? r : -FI_EINVAL;
    *fi_addr = a;
    return 0;
}

int latofi_mr_reg(struct latofi *l, void *buf, size_t len, uint64_t requested_key,
                  struct fid_mr **mr, void **desc, uint64_t *key) {
    uint64_t access = FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE | FI_READ | FI_REMOTE_READ;
    int r = fi_mr_reg(l->domain, buf, len, access, 0, requested_key, 0, mr, NULL);
    if (r)
        return r;
    *desc = fi_mr_desc(*mr);
    *key = fi_mr_key(*mr);
    if (*key == FI_KEY_NOTAVAIL) {
        fi_close(&(*mr)->fid);
        *mr = NULL;
        return -FI_ENOKEY;
    }
    return 0;
}

int latofi_mr_close(struct fid_mr *mr) { return fi_close(&mr->fid); }

/* Closes the endpoint only (before its memory regions are closed). */
int latofi_close_ep(struct latofi *l) {
    int r = 0;
    if (l->ep)
        r = fi_close(&l->ep->fid);
    l->ep = NULL;
    return r;
}

ssize_t latofi_write(struct latofi *l, const void *buf, size_t len, void *desc, uint64_t dest,
                     uint64_t raddr, uint64_t key, uint64_t ctx) {
    return fi_write(l->ep, buf, len, desc, dest, raddr, key, (void *)(uintptr_t)ctx);
}

ssize_t latofi_send(struct latofi *l, const void *buf, size_t len, void *desc, uint64_t dest,
                    uint64_t ctx) {
    return fi_send(l->ep, buf, len, desc, dest, (void *)(uintptr_t)ctx);
}

ssize_t latofi_recv(struct latofi *l, void *buf, size_t len, void *desc, uint64_t ctx) {
    return fi_recv(l->ep, buf, len, desc, FI_ADDR_UNSPEC, (void *)(uintptr_t)ctx);
}

struct latofi_comp {
    uint64_t ctx;
    uint64_t len;
    int32_t err;
    int32_t prov_errno;
};

/* Reads up to `count` completions. Returns how many (0 when none is ready); a failed
 * operation comes back as one entry with `err` set (its positive libfabric error code). */
ssize_t latofi_cq_read(struct latofi *l, struct latofi_comp *out, size_t count) {
    struct fi_cq_msg_entry e[16];
    if (count > 16)
        count = 16;
    ssize_t n = fi_cq_read(l->cq, e, count);
    if (n == -FI_EAGAIN)
        return 0;
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        ssize_t r = fi_cq_readerr(l->cq, &err, 0);
        if (r < 0)
            return r == -FI_EAGAIN ? 0 : r;
        out[0].ctx = (uint64_t)(uintptr_t)err.op_context;
        out[0].len = err.len;
        out[0].err = err.err ? err.err : FI_EOTHER;
        out[0].prov_errno = err.prov_errno;
        return 1;
    }
    if (n < 0)
        return n;
    for (ssize_t i = 0; i < n; i++) {
        out[i].ctx = (uint64_t)(uintptr_t)e[i].op_context;
        out[i].len = e[i].len;
        out[i].err = 0;
        out[i].prov_errno = 0;
    }
    return n;
}

const char *latofi_strerror(int err) { return fi_strerror(err < 0 ? -err : err); }
