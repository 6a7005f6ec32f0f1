/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-report: the HTML report of a memory snapshot, from C.
 *
 *   cmr-report [-o REPORT.html] SNAPSHOT.json
 *
 * SNAPSHOT.json is a snapshot as JSON: what cmr_snapshot_write writes with
 * CMR_SNAPSHOT_JSON, or PyTorch's snapshot dict put through Python's json
 * module. The page is the one cmr_snapshot_report renders (the same
 * template as Python's `python3 -m cmr.viz`): self-contained, it needs no
 * network to be viewed. Without -o it goes to SNAPSHOT.html beside the
 * input. A pickled snapshot is refused with a pointer to cmr.viz, which
 * reads pickles.
 *
 * Exit status: 0 when the report was written; 1 when the snapshot cannot be
 * read or is not a JSON object, or the report cannot be written; 2 for bad
 * usage. */
#include <cmr/cmr.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cmr_cli cli = {"cmr-report", "[-o REPORT.html] SNAPSHOT.json",
                            "  -o, --output PATH   where the report goes (default: SNAPSHOT.html)\n"};

/* The whole file in *out (free() it) and its length; false with errno set. */
static bool read_file(const char *path, char **out, size_t *length) {
  FILE *file = fopen(path, "rb");
  if (file == NULL) return false;
  size_t capacity = 1 << 16, used = 0;
  char *data = malloc(capacity);
  size_t got;
  while (data != NULL && (got = fread(data + used, 1, capacity - used, file)) > 0) {
    used += got;
    if (used == capacity) {
      char *more = realloc(data, capacity *= 2);
      if (more == NULL) free(data);
      data = more;
    }
  }
  bool ok = data != NULL && !ferror(file);
  int error = data == NULL ? ENOMEM : errno;
  fclose(file);
  if (!ok) {
    free(data);
    errno = error;
    return false;
  }
  *out = data;
  *length = used;
  return true;
}

/* SNAPSHOT.html for SNAPSHOT.json (or SNAPSHOT.EXT, or SNAPSHOT). */
static char *default_output(const char *input) {
  size_t length = strlen(input);
  const char *dot = strrchr(input, '.'), *slash = strrchr(input, '/');
  if (dot != NULL && (slash == NULL || dot > slash)) length = (size_t)(dot - input);
  char *out = malloc(length + sizeof ".html");
  if (out != NULL) {
    memcpy(out, input, length);
    memcpy(out + length, ".html", sizeof ".html");
  }
  return out;
}

int main(int argc, char **argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'}, CMR_CLI_STANDARD_OPTIONS, {0}};
  const char *output = NULL;
  for (int option; (option = cmr_cli_next(&cli, argc, argv, "o:", options)) != -1;) {
    if (option == 'o') output = optarg;
  }
  if (argc - optind != 1) return cmr_cli_usage_error(&cli, "give one snapshot file");
  const char *input = argv[optind];
  char *json = NULL;
  size_t length = 0;
  if (!read_file(input, &json, &length)) {
    fprintf(stderr, "cmr-report: %s cannot be read: %s\n", input, strerror(errno));
    return 1;
  }
  if (length > 0 && (unsigned char)json[0] == 0x80) {
    fprintf(stderr,
            "cmr-report: %s is a pickle: write the snapshot as JSON (CMR_SNAPSHOT_JSON), or use "
            "python3 -m cmr.viz, which reads pickles\n",
            input);
    free(json);
    return 1;
  }
  char *made = output == NULL ? default_output(input) : NULL;
  if (output == NULL && made == NULL) {
    fprintf(stderr, "cmr-report: no memory\n");
    free(json);
    return 1;
  }
  const char *target = output != NULL ? output : made;
  cmr_status status = cmr_snapshot_report(json, length, target);
  if (status != CMR_SUCCESS) fprintf(stderr, "cmr-report: %s\n", cmr_last_error_message());
  free(json);
  free(made);
  return status == CMR_SUCCESS ? 0 : 1;
}
