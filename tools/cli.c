/* SPDX-License-Identifier: Apache-2.0 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmr/cmr.h>

static void print_usage(const cmr_cli *cli, FILE *to) { fprintf(to, "usage: %s %s\n", cli->program, cli->usage); }

int cmr_cli_usage_error(const cmr_cli *cli, const char *problem) {
  fprintf(stderr, "%s: %s\n", cli->program, problem);
  print_usage(cli, stderr);
  fprintf(stderr, "(%s --help says more)\n", cli->program);
  return 2;
}

int cmr_cli_next(const cmr_cli *cli, int argc, char **argv, const char *short_options,
                 const struct option *long_options) {
  opterr = 0; /* the problems are reported below, in the programs' form */
  int option = getopt_long(argc, argv, short_options, long_options, NULL);
  switch (option) {
  case cmr_cli_help:
    print_usage(cli, stdout);
    if (cli->help != NULL) printf("%s", cli->help);
    printf("  --help       this text\n  --version    the program's version\n");
    exit(0);
  case cmr_cli_version:
    printf("%s %s (%s build)\n", cli->program, cmr_version(), cmr_built_with_cuda() ? "CUDA" : "host");
    exit(0);
  case '?':
  case ':': {
    char problem[256];
    /* A long option is named by its argument (optopt holds its value, not its name). */
    const char *text = argv[optind - 1];
    if (strncmp(text, "--", 2) == 0)
      snprintf(problem, sizeof problem, "option %s is unknown or needs a value", text);
    else
      snprintf(problem, sizeof problem, "option -%c is unknown or needs a value", optopt);
    exit(cmr_cli_usage_error(cli, problem));
  }
  default: return option;
  }
}
