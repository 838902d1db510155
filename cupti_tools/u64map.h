/* A small open-addressing hash map from uint64 keys to int64 values (correlation ids, graph node
 * ids, name ids, op tags). Used by the trace reader and the analysis. */
#ifndef GR_U64MAP_H
#define GR_U64MAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_u64map {
    uint64_t *keys;
    int64_t *vals;
    unsigned char *used;
    size_t cap, n;
    int oom;
} gr_u64map;

void gr_u64map_init(gr_u64map *m);
void gr_u64map_free(gr_u64map *m);
/* Insert or overwrite. Returns 0 when out of memory (m->oom is set). */
int gr_u64map_put(gr_u64map *m, uint64_t key, int64_t val);
/* Insert only when absent. Returns 1 when inserted, 0 when present or out of memory. */
int gr_u64map_put_new(gr_u64map *m, uint64_t key, int64_t val);
/* Returns 1 and sets *val when present. */
int gr_u64map_get(const gr_u64map *m, uint64_t key, int64_t *val);

#ifdef __cplusplus
}
#endif
#endif
