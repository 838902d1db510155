/* libFuzzer target for the workload loader and resolver: any input must end in a plan or an
 * error with a message, never a crash or a hang. Build: cmake -DGR_FUZZ=ON with clang. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/workload.h"
#include "kernels/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gr_error err;
    gr_error_clear(&err);
    gr_workload *wl = NULL;
    if (gr_workload_load_string((const char *)data, size, "fuzz.json", &wl, &err) != GR_OK) {
        if (!err.msg[0]) abort();
        return 0;
    }
    gr_target t = gr_target_default();
    int n = wl->nvariants ? wl->nvariants : 1;
    for (int v = 0; v < n; v++) {
        gr_plan *p = NULL;
        gr_error e;
        gr_error_clear(&e);
        const char *name = wl->nvariants ? wl->variants[v] : "default";
        if (gr_plan_resolve(wl, name, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) == GR_OK)
            gr_plan_destroy(p);
        else if (!e.msg[0])
            abort();
    }
    gr_workload_destroy(wl);
    return 0;
}
