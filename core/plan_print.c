/* Plan and accounting output, text and JSON. */
#include "core/plan_print.h"

#include <jansson.h>
#include <string.h>

#include "core/kernel.h"
#include "core/module.h"
#include "gr_version.h"

int gr_plan_checks_text(const gr_plan *p, char *out, size_t size, const char **kind) {
    const char *k = "none";
    size_t o = 0;
    out[0] = '\0';
    if (p->has_cpu_reference) {
        k = "cpu";
        o += (size_t)snprintf(out, size, "the CPU reference");
    } else if (p->reference_variant[0]) {
        k = "variant";
        o += (size_t)snprintf(out, size, "the eager outputs of variant %s (\"reference\": true)",
                              p->reference_variant);
    }
    if (p->expect_outputs > 0) {
        if (!o) k = "expect";
        o += (size_t)snprintf(out + o, o < size ? size - o : 0, "%sexpected data from files (",
                              o ? ", and " : "");
        int n = 0;
        for (int b = 0; b < p->nbufs && o < size; b++)
            if (p->bufs[b].is_output && p->bufs[b].expect_path[0])
                o += (size_t)snprintf(out + o, size - o, "%s%s", n++ ? ", " : "", p->bufs[b].name);
        if (o < size) o += (size_t)snprintf(out + o, size - o, ")");
    }
    if (!strcmp(k, "none") && p->is_reference_variant)
        snprintf(out, size,
                 "nothing but graph == eager: this variant is the workload's reference "
                 "(\"reference\": true) and user kernels have no CPU reference; its "
                 "eager outputs check the other variants");
    else if (!strcmp(k, "none"))
        snprintf(out, size,
                 "nothing but graph == eager: user kernels have no CPU reference, and "
                 "there is no \"reference\": true variant and no \"expect\" file; a "
                 "kernel that is wrong the same way eagerly and in the graph passes");
    if (kind) *kind = k;
    return strcmp(k, "none") != 0;
}

void gr_plan_print_modules(FILE *f, const gr_plan *p) {
    const gr_module *seen[GR_MAX_MODULES];
    int n = 0;
    for (int i = 0; i < p->nops; i++) {
        const gr_op *op = &p->ops[i];
        if (!op->user || !op->user->module) continue;
        int dup = 0;
        for (int k = 0; k < n; k++)
            dup |= seen[k] == op->user->module;
        if (dup || n >= GR_MAX_MODULES) continue;
        const gr_module *m = seen[n++] = op->user->module;
        fprintf(f, "  %-16s %s %s%s%s\n", m->name, gr_module_kind_name(m->kind), m->given,
                m->status[0] ? ": " : "", m->status);
    }
}

void gr_fmt_bytes(double b, char *out, size_t size) {
    if (b >= 1e9) snprintf(out, size, "%.2f GB", b / 1e9);
    else if (b >= 1e6) snprintf(out, size, "%.2f MB", b / 1e6);
    else if (b >= 1e3) snprintf(out, size, "%.1f KB", b / 1e3);
    else snprintf(out, size, "%.0f B", b);
}

static void shape_str(const gr_buffer *b, char *out, size_t size) {
    size_t o = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < b->ndim && o < size; d++)
        o += (size_t)snprintf(out + o, size - o, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
    if (o < size) snprintf(out + o, size - o, "]");
}

static const char *init_name(const gr_init *i) {
    switch (i->kind) {
    case GR_INIT_NONE: return "-";
    case GR_INIT_NORMAL: return "normal";
    case GR_INIT_UNIFORM: return "uniform";
    case GR_INIT_ZEROS: return "zeros";
    case GR_INIT_ONES: return "ones";
    case GR_INIT_CONST: return "const";
    case GR_INIT_IOTA: return "iota";
    case GR_INIT_RANDINT: return "randint";
    case GR_INIT_ZIPF: return "zipf";
    case GR_INIT_FILE: return "file";
    case GR_INIT_HOST: return "host";
    }
    return "?";
}

static void init_str(const gr_init *i, char *out, size_t size) {
    switch (i->kind) {
    case GR_INIT_NORMAL: snprintf(out, size, "normal(%g, %g)", i->a, i->b); break;
    case GR_INIT_UNIFORM: snprintf(out, size, "uniform[%g, %g)", i->a, i->b); break;
    case GR_INIT_CONST: snprintf(out, size, "const %g", i->a); break;
    case GR_INIT_IOTA: snprintf(out, size, "iota %g + %g*i", i->a, i->b); break;
    case GR_INIT_RANDINT: snprintf(out, size, "randint[%g, %g)", i->a, i->b); break;
    case GR_INIT_ZIPF: snprintf(out, size, "zipf(a=%g, %g rows)", i->a, i->b); break;
    case GR_INIT_FILE: snprintf(out, size, "file %s", i->path); break;
    default: snprintf(out, size, "%s", init_name(i)); break;
    }
}

static void io_str(const gr_plan *p, const gr_op *op, char *out, size_t size) {
    size_t o = 0;
    out[0] = '\0';
    if (op->kind == GR_OP_FORK) {
        snprintf(out, size, "fork %s -> %s", p->streams[op->stream], p->streams[op->other_stream]);
        return;
    }
    if (op->kind == GR_OP_JOIN) {
        snprintf(out, size, "join %s -> %s", p->streams[op->other_stream], p->streams[op->stream]);
        return;
    }
    for (int i = 0; i < op->ninputs && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%s", i ? "," : "", p->bufs[op->inputs[i]].name);
    if (o < size) o += (size_t)snprintf(out + o, size - o, " -> ");
    for (int i = 0; i < op->noutputs && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%s", i ? "," : "", p->bufs[op->outputs[i]].name);
    if (strlen(out) > 44) snprintf(out + 41, size - 41, "...");
}

static void print_op(FILE *f, const gr_plan *p, const gr_op *op) {
    char io[256], dims[48], rd[24], wr[24];
    io_str(p, op, io, sizeof(io));
    if (op->kind == GR_OP_KERNEL) {
        if (op->launches < 0) snprintf(dims, sizeof(dims), "(library)");
        else if (op->grid[1] > 1 || op->grid[2] > 1)
            snprintf(dims, sizeof(dims), "%ux%ux%u x %u", op->grid[0], op->grid[1], op->grid[2], op->block[0] * op->block[1] * op->block[2]);
        else
            snprintf(dims, sizeof(dims), "%u x %u", op->grid[0], op->block[0] * op->block[1] * op->block[2]);
        gr_fmt_bytes(op->bytes_read, rd, sizeof(rd));
        gr_fmt_bytes(op->bytes_written, wr, sizeof(wr));
    } else {
        snprintf(dims, sizeof(dims), "(event)");
        rd[0] = wr[0] = '\0';
    }
    fprintf(f, "  %4d  %-22.22s %-18.18s %-6.6s %-44s %-16s %10s %10s  %s\n", op->index, op->name,
            op->kind == GR_OP_KERNEL ? op->kernel->name
                                     : (op->kind == GR_OP_FORK ? "fork" : "join"),
            p->streams[op->stream], io, dims, rd, wr, op->form);
    if (op->user) {
        const gr_user_op *u = op->user;
        char args[400];
        size_t o = 0;
        args[0] = '\0';
        for (int a = 0; a < u->nargs && o < sizeof(args); a++) {
            const gr_user_arg *x = &u->args[a];
            const char *sep = a ? ", " : "";
            switch (x->type) {
            case GR_ARG_BUFFER:
                o += (size_t)snprintf(args + o, sizeof(args) - o, "%s%s", sep,
                                      x->buffer >= 0 ? p->bufs[x->buffer].name : "?");
                break;
            case GR_ARG_I32:
                o += (size_t)snprintf(args + o, sizeof(args) - o, "%si32 %d", sep, x->v.i32);
                break;
            case GR_ARG_U32:
                o += (size_t)snprintf(args + o, sizeof(args) - o, "%su32 %u", sep, x->v.u32);
                break;
            case GR_ARG_I64:
                o += (size_t)snprintf(args + o, sizeof(args) - o, "%si64 %lld", sep,
                                      (long long)x->v.i64);
                break;
            case GR_ARG_U64:
                o += (size_t)snprintf(args + o, sizeof(args) - o, "%su64 %llu", sep,
                                      (unsigned long long)x->v.u64);
                break;
            case GR_ARG_F32:
                o +=
                    (size_t)snprintf(args + o, sizeof(args) - o, "%sf32 %g", sep, (double)x->v.f32);
                break;
            case GR_ARG_F64:
                o += (size_t)snprintf(args + o, sizeof(args) - o, "%sf64 %g", sep, x->v.f64);
                break;
            }
        }
        fprintf(f, "        %s.%s<<<[%u,%u,%u], [%u,%u,%u], %zu>>>(%s)%s%s\n",
                u->module ? u->module->name : "?", u->function, op->grid[0], op->grid[1],
                op->grid[2], op->block[0], op->block[1], op->block[2], op->smem, args,
                u->pdl ? " pdl" : "", u->bytes_given ? " (bytes given)" : "");
    }
}

void gr_plan_print(FILE *f, const gr_plan *p, int max_ops) {
    char b1[24], b2[24], b3[24];
    fprintf(f, "workload %s, variant %s (%s)\n", p->workload, p->variant, p->source);
    fprintf(f, "params   %s\n", p->params[0] ? p->params : "(none)");
    fprintf(f, "target   %s, %d SMs (launch dims are sized for it)\n", p->target.name,
            p->target.sm_count);
    int used = 0;
    for (int b = 0; b < p->nbufs; b++) used += p->bufs[b].used;
    gr_fmt_bytes(p->used_bytes, b1, sizeof(b1));
    fprintf(f, "\nbuffers (%d used by this variant, %s on the device)\n", used, b1);
    fprintf(f, "  %-24s %-6s %-22s %12s  %-26s %s\n", "name", "dtype", "shape", "bytes", "init",
            "role");
    int shown = 0;
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->used) continue;
        if (max_ops > 0 && shown >= max_ops) {
            fprintf(f, "  ... %d more buffers (--full lists all)\n", used - shown);
            break;
        }
        shown++;
        char shp[64], ini[96], sz[24];
        shape_str(buf, shp, sizeof(shp));
        init_str(&buf->init, ini, sizeof(ini));
        gr_fmt_bytes((double)buf->bytes, sz, sizeof(sz));
        const char *role = buf->is_output ? "output" : buf->is_intermediate ? "intermediate"
                           : buf->first_write >= 0 ? "state (read+written)" : "input";
        fprintf(f, "  %-24.24s %-6s %-22.22s %12s  %-26.26s %s\n", buf->name, gr_dtype_name(buf->dtype),
                shp, sz, ini, role);
    }
    fprintf(f, "\noutputs (checked; rel L2 <= rtol, and every element |out - ref| <= atol rms(ref) "
               "+ rtol_elem |ref|; docs/verification.md)\n");
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->is_output) continue;
        gr_tol t = gr_buffer_tol(buf);
        char how[160];
        if (buf->tol_source == GR_TOL_DERIVED)
            snprintf(how, sizeof(how), "derived: %g sqrt(%g u_%s^2 + %g u_fp32^2)", GR_TOL_C,
                     buf->tol_roundings, gr_dtype_name(buf->dtype), buf->tol_depth);
        else
            snprintf(how, sizeof(how), "%s", gr_tol_source_name(buf->tol_source));
        fprintf(f, "  %-24.24s %-6s rtol %.2e  atol %.2e  rtol_elem %.2e  (%s); %s before each run\n",
                buf->name, gr_dtype_name(buf->dtype), t.rtol, t.atol, t.rtol_elem, how,
                buf->init.kind == GR_INIT_NONE ? "poisoned with NaN" : "re-seeded from its init");
    }
    fprintf(f,
            "\nops (%d; grid x block; bytes each op reads and writes in HBM; form: the "
            "implementation the check chose, where a kernel has several)\n",
            p->nops);
    fprintf(f, "  %4s  %-22s %-18s %-6s %-44s %-16s %10s %10s  %s\n", "#", "name", "kernel",
            "stream", "inputs -> outputs", "launch", "read", "written", "form");
    int head = max_ops > 0 && p->nops > max_ops ? max_ops - 4 : p->nops;
    for (int i = 0; i < head; i++) print_op(f, p, &p->ops[i]);
    if (head < p->nops) {
        fprintf(f, "  ... %d more ops (--full lists all)\n", p->nops - head - 4);
        for (int i = p->nops - 4; i < p->nops; i++) print_op(f, p, &p->ops[i]);
    }
    gr_fmt_bytes(p->bytes_read, b1, sizeof(b1));
    gr_fmt_bytes(p->bytes_written, b2, sizeof(b2));
    gr_fmt_bytes(p->bytes_read + p->bytes_written, b3, sizeof(b3));
    fprintf(f, "\nper step: %d kernel launch%s%s, %d stream%s; HBM read %s + written %s = %s; "
               "%.3g GFLOP\n",
            p->kernels, p->kernels == 1 ? "" : "es", p->library_ops ? " (library ops counted once each; cuBLAS may launch more)" : "",
            p->nstreams, p->nstreams == 1 ? "" : "s", b1, b2, b3, p->flops / 1e9);
    gr_fmt_bytes(p->intermediate_bytes, b1, sizeof(b1));
    fprintf(f, "intermediates: %d buffer%s written to HBM and read back (%s of round-trip traffic)\n",
            p->intermediates, p->intermediates == 1 ? "" : "s", b1);
    size_t scratch = gr_plan_scratch(p);
    if (scratch) {
        gr_fmt_bytes((double)scratch, b1, sizeof(b1));
        fprintf(f, "scratch: %s of device memory per stream, the largest op's (ops use it while they "
                   "run; one arena, shared by a stream's ops)\n", b1);
    }
    if (p->user_ops) {
        fprintf(f,
                "user modules (%d op%s; bytes: each input read once and each output written "
                "once unless the op gives \"bytes\")\n",
                p->user_ops, p->user_ops == 1 ? "" : "s");
        gr_plan_print_modules(f, p);
    }
    char checks[600];
    gr_plan_checks_text(p, checks, sizeof(checks), NULL);
    fprintf(f, "verified against: %s\n", checks);
}

void *gr_plan_to_json(const gr_plan *p) {
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(1));
    json_object_set_new(root, "graphrun_version", json_string(GR_VERSION));
    json_object_set_new(root, "workload", json_string(p->workload));
    json_object_set_new(root, "variant", json_string(p->variant));
    json_object_set_new(root, "source", json_string(p->source));
    json_object_set_new(root, "params", json_string(p->params));
    json_t *tgt = json_object();
    json_object_set_new(tgt, "name", json_string(p->target.name));
    json_object_set_new(tgt, "sm_count", json_integer(p->target.sm_count));
    json_object_set_new(tgt, "from_device", json_boolean(p->target.from_device));
    json_object_set_new(root, "target", tgt);
    json_t *streams = json_array();
    for (int s = 0; s < p->nstreams; s++) json_array_append_new(streams, json_string(p->streams[s]));
    json_object_set_new(root, "streams", streams);
    json_t *bufs = json_array();
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->used) continue;
        json_t *jb = json_object();
        json_object_set_new(jb, "name", json_string(buf->name));
        json_object_set_new(jb, "dtype", json_string(gr_dtype_name(buf->dtype)));
        json_t *shape = json_array();
        for (int d = 0; d < buf->ndim; d++) json_array_append_new(shape, json_integer(buf->shape[d]));
        json_object_set_new(jb, "shape", shape);
        json_object_set_new(jb, "bytes", json_integer((json_int_t)buf->bytes));
        json_object_set_new(jb, "init", json_string(init_name(&buf->init)));
        json_object_set_new(jb, "role", json_string(buf->is_output ? "output"
                                                    : buf->is_intermediate ? "intermediate"
                                                    : buf->first_write >= 0 ? "state" : "input"));
        if (buf->is_output) {
            gr_tol t = gr_buffer_tol(buf);
            json_object_set_new(jb, "rtol", json_real(t.rtol));
            json_object_set_new(jb, "atol", json_real(t.atol));
            json_object_set_new(jb, "rtol_elem", json_real(t.rtol_elem));
            json_object_set_new(jb, "tolerance", json_string(gr_tol_source_name(buf->tol_source)));
            if (buf->tol_source == GR_TOL_DERIVED) {
                json_object_set_new(jb, "roundings", json_real(buf->tol_roundings));
                json_object_set_new(jb, "depth", json_real(buf->tol_depth));
            }
            json_object_set_new(jb, "before_run", json_string(buf->init.kind == GR_INIT_NONE
                                                                  ? "poisoned with NaN"
                                                                  : "re-seeded from its init"));
        }
        json_array_append_new(bufs, jb);
    }
    json_object_set_new(root, "buffers", bufs);
    json_t *ops = json_array();
    for (int i = 0; i < p->nops; i++) {
        const gr_op *op = &p->ops[i];
        json_t *jo = json_object();
        json_object_set_new(jo, "index", json_integer(op->index));
        json_object_set_new(jo, "name", json_string(op->name));
        json_object_set_new(jo, "path", json_string(op->path));
        json_object_set_new(jo, "kind", json_string(op->kind == GR_OP_KERNEL ? "kernel"
                                                    : op->kind == GR_OP_FORK ? "fork" : "join"));
        json_object_set_new(jo, "stream", json_string(p->streams[op->stream]));
        if (op->kind != GR_OP_KERNEL) {
            json_object_set_new(jo, "other_stream", json_string(p->streams[op->other_stream]));
            json_array_append_new(ops, jo);
            continue;
        }
        json_object_set_new(jo, "kernel", json_string(op->kernel->name));
        json_t *ins = json_array(), *outs = json_array(), *shapes = json_object();
        for (int k = 0; k < op->ninputs; k++) json_array_append_new(ins, json_string(p->bufs[op->inputs[k]].name));
        for (int k = 0; k < op->noutputs; k++) json_array_append_new(outs, json_string(p->bufs[op->outputs[k]].name));
        for (int pass = 0; pass < 2; pass++) {
            int n = pass ? op->noutputs : op->ninputs;
            for (int k = 0; k < n; k++) {
                const gr_buffer *b = &p->bufs[pass ? op->outputs[k] : op->inputs[k]];
                json_t *sh = json_array();
                for (int d = 0; d < b->ndim; d++) json_array_append_new(sh, json_integer(b->shape[d]));
                json_object_set_new(shapes, b->name, sh);
            }
        }
        json_object_set_new(jo, "inputs", ins);
        json_object_set_new(jo, "outputs", outs);
        json_object_set_new(jo, "shapes", shapes);
        json_t *attrs = json_object();
        for (int a = 0; a < op->nattrs; a++) {
            const gr_attr_val *v = &op->attrs[a];
            json_object_set_new(attrs, v->name, v->type == GR_ATTR_ENUM ? json_string(v->str)
                                                : v->type == GR_ATTR_BOOL ? json_boolean(v->num != 0)
                                                : json_real(v->num));
        }
        json_object_set_new(jo, "attrs", attrs);
        if (op->launches >= 0) {
            json_object_set_new(jo, "grid", json_pack("[I,I,I]", (json_int_t)op->grid[0], (json_int_t)op->grid[1], (json_int_t)op->grid[2]));
            json_object_set_new(jo, "block", json_pack("[I,I,I]", (json_int_t)op->block[0], (json_int_t)op->block[1], (json_int_t)op->block[2]));
            json_object_set_new(jo, "smem_bytes", json_integer((json_int_t)op->smem));
        } else {
            json_object_set_new(jo, "grid", json_null());
            json_object_set_new(jo, "block", json_null());
        }
        json_object_set_new(jo, "launches", json_integer(op->launches));
        if (op->form[0]) json_object_set_new(jo, "form", json_string(op->form));
        if (op->user) {
            const gr_user_op *u = op->user;
            json_t *ju = json_object(), *ja = json_array();
            json_object_set_new(ju, "module", json_string(u->module ? u->module->name : ""));
            json_object_set_new(ju, "function", json_string(u->function));
            for (int a = 0; a < u->nargs; a++) {
                const gr_user_arg *x = &u->args[a];
                json_t *v = NULL;
                switch (x->type) {
                case GR_ARG_BUFFER:
                    v = json_string(x->buffer >= 0 ? p->bufs[x->buffer].name : "");
                    break;
                case GR_ARG_I32:
                    v = json_pack("{s:I}", "i32", (json_int_t)x->v.i32);
                    break;
                case GR_ARG_U32:
                    v = json_pack("{s:I}", "u32", (json_int_t)x->v.u32);
                    break;
                case GR_ARG_I64:
                    v = json_pack("{s:I}", "i64", (json_int_t)x->v.i64);
                    break;
                case GR_ARG_U64:
                    if (x->v.u64 <= (uint64_t)INT64_MAX) {
                        v = json_pack("{s:I}", "u64", (json_int_t)x->v.u64);
                    } else { /* past JSON integers of jansson: the digits, exactly */
                        char d[24];
                        snprintf(d, sizeof(d), "%llu", (unsigned long long)x->v.u64);
                        v = json_pack("{s:s}", "u64", d);
                    }
                    break;
                case GR_ARG_F32:
                    v = json_pack("{s:f}", "f32", (double)x->v.f32);
                    break;
                case GR_ARG_F64:
                    v = json_pack("{s:f}", "f64", x->v.f64);
                    break;
                }
                json_array_append_new(ja, v);
            }
            json_object_set_new(ju, "args", ja);
            json_object_set_new(ju, "pdl", json_boolean(u->pdl));
            if (u->cluster[0])
                json_object_set_new(ju, "cluster",
                                    json_pack("[I,I,I]", (json_int_t)u->cluster[0],
                                              (json_int_t)u->cluster[1],
                                              (json_int_t)u->cluster[2]));
            json_object_set_new(ju, "bytes_given", json_boolean(u->bytes_given != 0));
            if (u->module) json_object_set_new(ju, "module_status", json_string(u->module->status));
            json_object_set_new(jo, "user", ju);
        }
        json_object_set_new(jo, "bytes_read", json_real(op->bytes_read));
        json_object_set_new(jo, "bytes_written", json_real(op->bytes_written));
        json_object_set_new(jo, "flops", json_real(op->flops));
        json_array_append_new(ops, jo);
    }
    json_object_set_new(root, "ops", ops);
    json_t *tot = json_object();
    json_object_set_new(tot, "ops", json_integer(p->nops));
    json_object_set_new(tot, "kernels", json_integer(p->kernels));
    json_object_set_new(tot, "library_ops", json_integer(p->library_ops));
    json_object_set_new(tot, "scratch_bytes", json_integer((json_int_t)gr_plan_scratch(p)));
    json_object_set_new(tot, "bytes_read", json_real(p->bytes_read));
    json_object_set_new(tot, "bytes_written", json_real(p->bytes_written));
    json_object_set_new(tot, "bytes", json_real(p->bytes_read + p->bytes_written));
    json_object_set_new(tot, "flops", json_real(p->flops));
    json_object_set_new(tot, "intermediates", json_integer(p->intermediates));
    json_object_set_new(tot, "intermediate_bytes", json_real(p->intermediate_bytes));
    json_object_set_new(tot, "device_bytes", json_real(p->used_bytes));
    json_object_set_new(root, "totals", tot);
    char checks[600];
    const char *kind = "none";
    gr_plan_checks_text(p, checks, sizeof(checks), &kind);
    json_t *ver = json_object();
    json_object_set_new(ver, "against", json_string(kind));
    json_object_set_new(ver, "text", json_string(checks));
    json_object_set_new(ver, "cpu_reference", json_boolean(p->has_cpu_reference));
    json_object_set_new(ver, "reference_variant",
                        p->reference_variant[0] ? json_string(p->reference_variant) : json_null());
    json_object_set_new(ver, "is_reference_variant", json_boolean(p->is_reference_variant));
    json_object_set_new(ver, "expect_outputs", json_integer(p->expect_outputs));
    json_object_set_new(root, "verification", ver);
    return root;
}

static int heaviest(const gr_plan *const *plans, int n) {
    int h = 0;
    for (int i = 1; i < n; i++)
        if (plans[i]->bytes_read + plans[i]->bytes_written >
            plans[h]->bytes_read + plans[h]->bytes_written)
            h = i;
    return h;
}

void gr_accounting_print(FILE *f, const gr_plan *const *plans, int n) {
    if (n <= 0) return;
    int h = heaviest(plans, n);
    double base = plans[h]->bytes_read + plans[h]->bytes_written;
    fprintf(f, "HBM accounting per step (bytes each kernel must move; intermediates are round "
               "trips: written, then read back)\n");
    fprintf(f, "  %-16s %8s %12s %12s %12s %14s %14s %8s\n", "variant", "kernels", "read",
            "written", "total", "round trips", "saved vs", "ratio");
    for (int i = 0; i < n; i++) {
        const gr_plan *p = plans[i];
        double tot = p->bytes_read + p->bytes_written;
        char r[24], w[24], t[24], s[24];
        gr_fmt_bytes(p->bytes_read, r, sizeof(r));
        gr_fmt_bytes(p->bytes_written, w, sizeof(w));
        gr_fmt_bytes(tot, t, sizeof(t));
        gr_fmt_bytes(base - tot, s, sizeof(s));
        char rt[32];
        snprintf(rt, sizeof(rt), "%d", p->intermediates);
        char saved[48];
        if (i == h) snprintf(saved, sizeof(saved), "(baseline)");
        else snprintf(saved, sizeof(saved), "%s", s);
        fprintf(f, "  %-16s %8d %12s %12s %12s %14s %14s %7.2fx\n", p->variant, p->kernels, r,
                w, t, rt, saved, tot > 0 ? base / tot : 0.0);
    }
    if (n > 1) {
        for (int i = 0; i < n; i++) {
            if (i == h) continue;
            const gr_plan *p = plans[i];
            int drt = plans[h]->intermediates - p->intermediates, dl = plans[h]->kernels - p->kernels;
            fprintf(f, "  %s vs %s: %d %s round trip%s, %d %s launch%s, %.2fx less HBM traffic\n",
                    p->variant, plans[h]->variant, drt < 0 ? -drt : drt, drt < 0 ? "more" : "fewer",
                    drt == 1 || drt == -1 ? "" : "s", dl < 0 ? -dl : dl, dl < 0 ? "more" : "fewer",
                    dl == 1 || dl == -1 ? "" : "es",
                    (p->bytes_read + p->bytes_written) > 0 ? base / (p->bytes_read + p->bytes_written) : 0.0);
        }
    }
}

void *gr_accounting_to_json(const gr_plan *const *plans, int n) {
    json_t *arr = json_array();
    if (n <= 0) return arr;
    int h = heaviest(plans, n);
    double base = plans[h]->bytes_read + plans[h]->bytes_written;
    for (int i = 0; i < n; i++) {
        const gr_plan *p = plans[i];
        double tot = p->bytes_read + p->bytes_written;
        json_array_append_new(arr, json_pack("{s:s, s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:s}",
                                             "variant", p->variant, "kernels", p->kernels,
                                             "bytes_read", p->bytes_read, "bytes_written",
                                             p->bytes_written, "bytes", tot, "round_trips",
                                             p->intermediates, "bytes_saved", base - tot,
                                             "traffic_ratio", tot > 0 ? base / tot : 0.0,
                                             "baseline", plans[h]->variant));
    }
    return arr;
}
