/* Open addressing with linear probing; the table doubles at 50% load. */
#include "cupti_tools/u64map.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t cap) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

void gr_u64map_init(gr_u64map *m) {
    memset(m, 0, sizeof(*m));
}

void gr_u64map_free(gr_u64map *m) {
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof(*m));
}

static int grow(gr_u64map *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof(*keys));
    int64_t *vals = malloc(cap * sizeof(*vals));
    unsigned char *used = calloc(cap, 1);
    if (!keys || !vals || !used) {
        free(keys);
        free(vals);
        free(used);
        m->oom = 1;
        return 0;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t s = slot_of(m->keys[i], cap);
        while (used[s]) s = (s + 1) & (cap - 1);
        used[s] = 1;
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = keys;
    m->vals = vals;
    m->used = used;
    m->cap = cap;
    return 1;
}

static int put(gr_u64map *m, uint64_t key, int64_t val, int overwrite) {
    if ((m->n + 1) * 2 > m->cap && !grow(m)) return 0;
    size_t s = slot_of(key, m->cap);
    while (m->used[s]) {
        if (m->keys[s] == key) {
            if (!overwrite) return 0;
            m->vals[s] = val;
            return 1;
        }
        s = (s + 1) & (m->cap - 1);
    }
    m->used[s] = 1;
    m->keys[s] = key;
    m->vals[s] = val;
    m->n++;
    return 1;
}

int gr_u64map_put(gr_u64map *m, uint64_t key, int64_t val) {
    return put(m, key, val, 1);
}

int gr_u64map_put_new(gr_u64map *m, uint64_t key, int64_t val) {
    return put(m, key, val, 0);
}

int gr_u64map_get(const gr_u64map *m, uint64_t key, int64_t *val) {
    if (!m->cap) return 0;
    size_t s = slot_of(key, m->cap);
    while (m->used[s]) {
        if (m->keys[s] == key) {
            if (val) *val = m->vals[s];
            return 1;
        }
        s = (s + 1) & (m->cap - 1);
    }
    return 0;
}
