/* cupti-launchstat --capture-check: the recording the injected checker wrote, classified and
 * reported (launchstat_capcheck.h). */
#include "cupti_tools/launchstat_capcheck.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cupti_tools/capclass.h"
#include "cupti_tools/capevents.h"
#include "cupti_tools/report.h"

int gr_launchstat_capcheck_report(const char *path, const char *json_path, const char *cmdline,
                                  int code) {
    gr_error e;
    gr_error_clear(&e);
    gr_capev_list l;
    if (gr_capev_load(path, &l, &e) != GR_OK) {
        fprintf(stderr, "cupti-launchstat: %s\n", e.msg);
        return code ? code : gr_exit_code(e.code);
    }
    if (l.end_error[0]) {
        fprintf(stderr, "cupti-launchstat: the command ran unchecked: %s\n", l.end_error);
        gr_capev_list_free(&l);
        return code ? code : 1;
    }
    gr_capcheck_result r;
    if (gr_capcheck_classify(l.v, l.n, &r, &e) != GR_OK) {
        fprintf(stderr, "cupti-launchstat: %s\n", e.msg);
        gr_capev_list_free(&l);
        return code ? code : 1;
    }
    r.dropped = l.dropped;
    int json_stdout = json_path && !strcmp(json_path, "-");
    FILE *f = json_stdout ? stderr : stdout;
    fprintf(f,
            "capture check of %s\n  (CUPTI callbacks on every runtime and driver API call while a "
            "stream captured; "
            "recording %s, %zu calls)\n",
            cmdline, path, l.n);
    if (!l.has_end)
        fprintf(f, "  warning: the recording has no end record (the command was killed): findings "
                   "cover what was "
                   "written\n");
    if (r.captures == 0 && r.total == 0)
        fprintf(f, "  no stream capture was seen: nothing to check\n");
    else
        gr_capcheck_print(f, &r, "  ");
    fflush(f);
    size_t blocking = gr_capcheck_blocking(&r);
    int rc = 0;
    if (json_path) {
        json_t *j = gr_capcheck_json(&r);
        json_object_set_new(j, "schema_version", json_integer(1));
        json_object_set_new(j, "tool", json_string("cupti-launchstat"));
        json_object_set_new(j, "command", json_string(cmdline));
        json_object_set_new(j, "command_exit_code", json_integer(code));
        json_object_set_new(j, "recording", json_string(path));
        gr_error_clear(&e);
        if (gr_ls_write_json(json_path, j, "the JSON report", &e) != GR_OK) {
            fprintf(stderr, "cupti-launchstat: %s\n", e.msg);
            rc = 2;
        }
        json_decref(j);
    }
    if (blocking)
        fprintf(stderr,
                "cupti-launchstat: %zu call%s broke a capture or escaped it (listed above with "
                "fixes)\n",
                blocking, blocking == 1 ? "" : "s");
    gr_capcheck_result_free(&r);
    gr_capev_list_free(&l);
    if (code) return code;
    if (rc) return rc;
    return blocking ? 1 : 0;
}
