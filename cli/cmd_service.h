/* The replay service's subcommands of `graphrun`: capture, replay, serve, list, drop, status,
 * stop (cli/cmd_service.c). */
#ifndef GR_CMD_SERVICE_H
#define GR_CMD_SERVICE_H

/* The usage text of a service subcommand, or NULL when `cmd` is not one. */
const char *gr_service_cmd_usage(const char *cmd);
/* Runs `graphrun CMD ...` (argv[1] is CMD); returns the exit code. */
int gr_service_cmd_main(int argc, char **argv);

#endif
