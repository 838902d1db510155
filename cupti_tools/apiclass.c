/* API categories by function name, shared by the collector (which APIs to record) and the
 * analysis (how to group them). Names rather than callback ids: ids differ between the runtime
 * and driver domains and grow with every CUDA release, the names' shapes do not. */
#include <stdio.h>
#include <string.h>

#include "cupti_tools/trace.h"

static int starts(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

gr_api_cat gr_api_category(const char *name) {
    if (!name) return GR_API_OTHER;
    /* CUDA 13 compiles <<<>>> to the runtime's internal __cudaLaunchKernel: same categories */
    while (*name == '_') name++;
    if (!name[0]) return GR_API_OTHER;
    if (strstr(name, "HostFunc") || strstr(name, "LaunchHost")) return GR_API_OTHER;
    if (starts(name, "cudaGraphLaunch") || starts(name, "cuGraphLaunch")) return GR_API_GRAPH_LAUNCH;
    if (starts(name, "cudaLaunch") || starts(name, "cuLaunch")) return GR_API_LAUNCH;
    if (starts(name, "cudaProfilerSt") || starts(name, "cuProfilerSt")) return GR_API_PROFILER;
    if (strstr(name, "StreamBeginCapture") || strstr(name, "StreamEndCapture")) return GR_API_GRAPH_BUILD;
    if (strstr(name, "Graph")) {
        /* node creation and instantiation make the nodes kernels are later traced under; the
         * rest (set params, destroy, queries) is other */
        if (strstr(name, "Add") || strstr(name, "Instantiate") || strstr(name, "Clone"))
            return GR_API_GRAPH_BUILD;
        return GR_API_OTHER;
    }
    if (strstr(name, "Memcpy")) return GR_API_MEMCPY;
    if (strstr(name, "Memset")) return GR_API_MEMSET;
    if (strstr(name, "Synchronize")) return GR_API_SYNC;
    if (starts(name, "cudaEventRecord") || starts(name, "cuEventRecord") ||
        starts(name, "cudaStreamWaitEvent") || starts(name, "cuStreamWaitEvent"))
        return GR_API_EVENT;
    return GR_API_OTHER;
}

const char *gr_api_cat_name(gr_api_cat c) {
    switch (c) {
    case GR_API_LAUNCH: return "launch";
    case GR_API_GRAPH_LAUNCH: return "graph_launch";
    case GR_API_MEMCPY: return "memcpy";
    case GR_API_MEMSET: return "memset";
    case GR_API_SYNC: return "sync";
    case GR_API_PROFILER: return "profiler";
    case GR_API_GRAPH_BUILD: return "graph_build";
    case GR_API_EVENT: return "event";
    default: return "other";
    }
}

void gr_api_strip_version(const char *name, char *out, size_t size) {
    snprintf(out, size, "%s", name ? name : "");
    char *v = strrchr(out, '_');
    if (!v || v[1] != 'v' || !v[2]) return;
    for (const char *p = v + 2; *p; p++)
        if (*p < '0' || *p > '9') return;
    *v = '\0';
}
