/* `graphrun tp`: the tensor-parallel decode step (replay/tp.c), its options, usage and exit
 * codes. Called from graphrun's main, which only dispatches to it. */
#ifndef GR_CMD_TP_H
#define GR_CMD_TP_H

#ifdef __cplusplus
extern "C" {
#endif

const char *gr_tp_cmd_usage(void);
/* argv[1] is "tp". Returns the process exit code. */
int gr_tp_cmd_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
