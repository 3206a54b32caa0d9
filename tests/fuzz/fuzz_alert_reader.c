// Fuzzes the trace reader into a profile (zxs_profile_from_trace): the recorder's alert events
// and their breakdown arguments, threads' task-runtime arguments, module markup, kernel symbols,
// JIT symbols (perf map lines).
// Whatever the bytes, the reader answers ZX_OK with a consistent profile or an error status with
// nothing left allocated (LeakSanitizer checks the second).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fxt_check.h"
#include "profile.h"
#include "trace_file.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t* input = malloc(size == 0 ? 1 : size);  // exactly sized: reads past it are caught
  FUZZ_CHECK(input != NULL);
  if (size != 0) memcpy(input, data, size);
  zxs_profile_t p;
  char error[256];
  error[0] = '\0';
  const zx_status_t status = zxs_profile_from_trace(input, size, &p, error, sizeof(error));
  if (status == ZX_OK) {
    FUZZ_CHECK(p.ticks_per_second != 0);
    FUZZ_CHECK(p.alert_count == 0 || p.alerts != NULL);
    for (size_t i = 0; i < p.alert_count; i++) FUZZ_CHECK(p.alerts[i].name != NULL);
    for (size_t i = 0; i < p.sample_count; i++) {
      bool known = false;
      for (size_t t = 0; t < p.thread_count && !known; t++) {
        known = p.threads[t].tid == p.samples[i].tid && p.threads[t].pid == p.samples[i].pid;
      }
      FUZZ_CHECK(known);  // every sample's thread has an entry
    }
    for (size_t i = 0; i < p.location_count; i++) {  // names are whole strings (ASan reads them)
      FUZZ_CHECK(p.locations[i].function == NULL || strlen(p.locations[i].function) < SIZE_MAX);
    }
    zxs_profile_free(&p);
  } else {
    FUZZ_CHECK(error[0] != '\0');  // a failure says why
  }
  free(input);
  return 0;
}
