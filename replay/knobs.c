/* The one table of environment variables graphrun reads (grep getenv to keep it whole); every one
 * is plumbing. A report lists those that were set for its run. */
#include "replay/knobs.h"

#include <stdlib.h>

static const gr_knob knobs[] = {
    {"GR_NCCL_LIBRARY", "kernels/tp.c", "the NCCL library graphrun tp loads (dlopen)", 1},
    {"GRAPHRUN_CACHE_DIR", "kernels/usermod.c", "the compiled user-module cache directory", 1},
    {"XDG_CACHE_HOME", "kernels/usermod.c",
     "the user-module cache's parent, without GRAPHRUN_CACHE_DIR", 0},
    {"HOME", "kernels/usermod.c", "the user-module cache's parent (~/.cache), without either", 0},
    {"GRAPHRUN_SOCKET", "replay/client.c", "the service's socket path (--socket overrides it)", 1},
    {"XDG_RUNTIME_DIR", "replay/client.c", "directory of the default service socket", 0},
    {"TMPDIR", "replay/timeline.c", "directory of the temporary trace of --timeline/--html", 0},
    {"CUDA_VISIBLE_DEVICES", "replay/tp_shard.c", "named in graphrun tp's device-count error", 0},
    {"GR_LAUNCHSTAT_INJECTION", "cupti_tools/launchstat.c",
     "the injection library cupti-launchstat loads into the traced program", 1},
    {"GR_LAUNCHSTAT_OUT", "cupti_tools/inject.c", "injection library: the trace file it writes", 1},
    {"GR_LAUNCHSTAT_CMD", "cupti_tools/inject.c", "injection library: the traced command line", 1},
    {"GR_LAUNCHSTAT_STEPS", "cupti_tools/inject.c", "injection library: steps to trace (0: all)",
     1},
    {"GR_LAUNCHSTAT_LATENCY", "cupti_tools/inject.c", "injection library: launch latency records",
     1},
    {"GR_LAUNCHSTAT_DRIVER", "cupti_tools/inject.c", "injection library: driver API records", 1},
    {"GR_LAUNCHSTAT_MEMCPY", "cupti_tools/inject.c", "injection library: memcpy records", 1},
    {"GR_LAUNCHSTAT_BUFFER_MB", "cupti_tools/inject.c", "injection library: CUPTI buffer size", 1},
    {"GR_LAUNCHSTAT_MAX_BUFFERS", "cupti_tools/inject.c", "injection library: CUPTI buffers", 1},
    {"GR_LAUNCHSTAT_CAPCHECK", "cupti_tools/inject.c",
     "injection library: run the capture checker instead of the trace", 1},
    {"GR_LAUNCHSTAT_QUIET", "cupti_tools/inject.c", "injection library: no messages on stderr", 1},
    {"LD_PRELOAD", "cupti_tools/cupti_check.c", "read: a preloaded profiler holding CUPTI", 0},
    {"NSYS_PROFILING_SESSION_ID", "cupti_tools/cupti_check.c", "read: Nsight Systems is profiling",
     0},
    {"NSYS_LAUNCH_ID", "cupti_tools/cupti_check.c", "read: Nsight Systems is profiling", 0},
    {"NV_COMPUTE_PROFILER_PERFWORKS_DIR", "cupti_tools/cupti_check.c",
     "read: Nsight Compute is profiling", 0},
    {"NSIGHT_SYSTEMS_DIR", "cupti_tools/cupti_check.c", "read: Nsight Systems is profiling", 0},
    {"CUDA_INJECTION64_PATH", "cupti_tools/launchstat.c",
     "set by cupti-launchstat for the traced program (the CUDA driver loads it)", 0},
    {"NVTX_INJECTION64_PATH", "cupti_tools/inject.c", "set by the injection library (CUPTI's NVTX)",
     0},
    {"GRAPHRUN_SERVICE_TEST_HOOKS", "cli/cmd_service.c", "tests only: the service's test hooks", 1},
    {"GR_FIXTURE_DIR", "tests/", "tests only: where cupti_fixtures reads recorded traces", 1},
    {"GR_CAPCHECK_FIXTURES", "tests/", "tests only: where capcheck records its fixtures", 1},
    {"GR_BUILD_DIR", "tests/", "tests only: the build tree (CTest sets it)", 1},
    {"GR_SOURCE_DIR", "tests/", "tests only: the source tree (CTest sets it)", 1},
    {"GR_NVTX_REC_OUT", "tests/nvtx/", "tests only: the NVTX recorder's output", 1},
    {NULL, NULL, NULL, 0},
};

const gr_knob *gr_knobs(void) {
    return knobs;
}

const char *gr_knob_value(const gr_knob *k) {
    const char *v = getenv(k->name);
    return v && *v ? v : NULL;
}
