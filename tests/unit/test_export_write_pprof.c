// Writes the hand-built test profile (test_export_fixture.h) to a file, for the scripts that
// check our exports with other tools (check_pprof_with_go.sh, check_svg_with_xmllint.sh).
//   test_export_write_pprof PATH [pprof|folded|svg|markup|top]   (default: pprof)
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "test_export_fixture.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s PATH [pprof|folded|svg|markup|top]\n", argv[0]);
    return 2;
  }
  const char* format = argc == 3 ? argv[2] : "pprof";
  zxs_profile_t profile;
  fixture_profile(&profile);
  FILE* out = fopen(argv[1], "wb");
  if (out == NULL) {
    perror(argv[1]);
    return 1;
  }
  zx_status_t status;
  if (strcmp(format, "pprof") == 0) {
    status = zxs_export_pprof(&profile, out);
  } else if (strcmp(format, "folded") == 0) {
    status = zxs_export_folded(&profile, 0, out);
  } else if (strcmp(format, "svg") == 0) {
    status = zxs_export_flamegraph(&profile, 0, NULL, out);
  } else if (strcmp(format, "markup") == 0) {
    status = zxs_export_markup(&profile, out);
  } else if (strcmp(format, "top") == 0) {
    status = zxs_export_top(&profile, 0, ZXS_EXPORT_TOP_PER_THREAD, out);
  } else {
    fprintf(stderr, "unknown format %s\n", format);
    fclose(out);
    return 2;
  }
  if (fclose(out) != 0 && status == ZX_OK) {
    status = ZX_ERR_IO;
  }
  if (status != ZX_OK) {
    fprintf(stderr, "export failed: %d\n", (int)status);
    return 1;
  }
  return 0;
}
