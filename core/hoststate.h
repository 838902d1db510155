/* Host copies of a plan's buffers and the CPU reference executor: runs every op's reference
 * in plan order on those copies (fork/join are no-ops on the host). */
#ifndef GR_HOSTSTATE_H
#define GR_HOSTSTATE_H

#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_hoststate {
    const gr_plan *plan;
    void **hptr; /* per plan buffer; NULL when unused */
    size_t bytes;
} gr_hoststate;

gr_status gr_hoststate_create(const gr_plan *plan, gr_hoststate **out, gr_error *err);
void gr_hoststate_destroy(gr_hoststate *hs);
/* Fill every used buffer from its init spec on the host (poison for buffers without one). */
gr_status gr_hoststate_fill(gr_hoststate *hs, gr_error *err);
gr_status gr_reference_step(const gr_plan *plan, gr_hoststate *hs, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
