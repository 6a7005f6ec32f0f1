/* SPDX-License-Identifier: Apache-2.0 */
/* The command-line conventions every cmr program follows: options parsed by
 * getopt_long; --help prints the usage on stdout and exits 0; --version
 * prints the program's and the library's version and exits 0; bad usage
 * prints the problem and the usage on stderr and exits 2. */
#ifndef CMR_TOOLS_CLI_H
#define CMR_TOOLS_CLI_H

#include <getopt.h>

#ifdef __cplusplus
extern "C" { /* the multi_stream benchmark is CUDA C++ */
#endif

/* Values getopt_long returns for the two options every program has; put
 * CMR_CLI_STANDARD_OPTIONS last in a program's table, before {0}. */
enum { cmr_cli_help = 0x100, cmr_cli_version };
#define CMR_CLI_STANDARD_OPTIONS \
  {"help", no_argument, NULL, cmr_cli_help}, { "version", no_argument, NULL, cmr_cli_version }

typedef struct cmr_cli {
  const char *program; /* "cmr-replay" */
  const char *usage;   /* what follows "usage: PROGRAM " */
  const char *help;    /* what --help adds under the usage (the options), or NULL */
} cmr_cli;

/* getopt_long over the program's options, which answers --help and
 * --version itself (exit 0) and an unknown option or a missing argument
 * (exit 2). Returns the next option of the program's own, or -1 when the
 * options are done (optind then indexes the first operand). */
int cmr_cli_next(const cmr_cli *cli, int argc, char **argv, const char *short_options,
                 const struct option *long_options);

/* Reports bad usage ("PROGRAM: problem", then the usage) on stderr; returns 2. */
int cmr_cli_usage_error(const cmr_cli *cli, const char *problem);

#ifdef __cplusplus
}
#endif

#endif
