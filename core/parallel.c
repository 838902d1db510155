/* gr_parallel_for: pthreads over fixed chunks, taken from one atomic counter. */
#define _GNU_SOURCE
#include "core/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 64

typedef struct loop {
    int64_t n, chunk, nchunks;
    gr_parallel_fn fn;
    void *ctx;
    atomic_llong next;
    atomic_int rc;
} loop;

static void *worker(void *arg) {
    loop *L = arg;
    for (;;) {
        if (atomic_load(&L->rc) != 0) break;
        long long c = atomic_fetch_add(&L->next, 1);
        if (c >= L->nchunks) break;
        int64_t b = (int64_t)c * L->chunk, e = b + L->chunk < L->n ? b + L->chunk : L->n;
        int r = L->fn(L->ctx, c, b, e);
        if (r != 0) {
            int zero = 0;
            atomic_compare_exchange_strong(&L->rc, &zero, r);
        }
    }
    return NULL;
}

int gr_parallel_threads(void) {
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > MAX_THREADS ? MAX_THREADS : n;
}

int gr_parallel_for(int64_t n, int64_t chunk, gr_parallel_fn fn, void *ctx) {
    if (n <= 0) return 0;
    if (chunk < 1) chunk = 1;
    loop L = {n, chunk, (n + chunk - 1) / chunk, fn, ctx, 0, 0};
    int nt = gr_parallel_threads();
    if (nt > L.nchunks) nt = (int)L.nchunks;
    pthread_t th[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < nt; i++) {
        if (pthread_create(&th[started], NULL, worker, &L) != 0) break; /* fewer threads: fine */
        started++;
    }
    worker(&L);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    return atomic_load(&L.rc);
}
