// Our own CFI unwinder against libunwind on real samples: programs run under a perf event that
// copies the user registers and 32 KiB of stack at 4000 samples/s (as `zxsampler record` asks),
// and every sample is unwound by both over the program's mappings. They must give the same PCs
// and the same truncation for every sample, and the own unwinder must have done (nearly) all of
// them itself, without handing them to libunwind.
//
//   test_cfi_equiv WORKLOAD   (bench/cfi_workload, built -O2 -fomit-frame-pointer)
//
// Programs: the workload (one thread, 40 levels deep); Debian's xz -9 and python3 when
// installed. Skips when perf events cannot be opened on a child (perf_event_paranoid, seccomp).
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include "cfi_unwind.h"

#define RING_PAGES 1024  // 4 MiB of data
#define STACK_COPY 32768
#define MAX_SAMPLES 4000
#define MAX_MAPS 512
#define MAX_FRAMES 128

static const char* g_workload;

typedef struct sample {
  zxs_cfi_regs_t regs;
  uint8_t* copy;
  size_t len;
} sample_t;

typedef struct capture {
  sample_t samples[MAX_SAMPLES];
  size_t count;
  uint64_t lost;
  zxs_cfi_mapping_t maps[MAX_MAPS];
  char paths[MAX_MAPS][256];
  size_t map_count;
  char exe[256];  // the program's file (realpath): a mappings read without it is not its own
} capture_t;

static capture_t g_cap;

// The program's executable file mappings (and the vDSO), while it runs. Only a read that shows
// the program's own file is kept: before its exec the child is this test, and while it exits the
// kernel may show a partial list.
static void read_maps(pid_t pid, capture_t* c) {
  static char paths[MAX_MAPS][256];
  static zxs_cfi_mapping_t maps[MAX_MAPS];
  char name[64];
  snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
  FILE* f = fopen(name, "r");
  if (f == NULL) return;
  size_t n = 0;
  bool own = false;
  char line[512];
  while (n < MAX_MAPS && fgets(line, sizeof(line), f) != NULL) {
    unsigned long long start, end, offset;
    char perms[8];
    int at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &at) < 4 ||
        at == 0 || perms[2] != 'x' || (line[at] != '/' && strncmp(line + at, "[vdso]", 6) != 0)) {
      continue;
    }
    line[strcspn(line, "\n")] = '\0';
    snprintf(paths[n], sizeof(paths[n]), "%s", line + at);
    maps[n] = (zxs_cfi_mapping_t){.start = start, .pgoff = offset};
    own = own || strcmp(paths[n], c->exe) == 0;
    n++;
  }
  fclose(f);
  // Not yet exec'd, or exiting: keep the fullest read. A read while the program exits can list
  // part of its mappings only (seen: the executable's alone, which left every sample at depth 1).
  if (!own || n < c->map_count) return;
  for (size_t i = 0; i < n; i++) {
    memcpy(c->paths[i], paths[i], sizeof(c->paths[i]));
    c->maps[i] = maps[i];
    c->maps[i].path = c->paths[i];
  }
  c->map_count = n;
}

// perf's user register order for the mask below: ax bx cx dx si di bp sp ip r8..r15.
static const int kPerfToDwarf[17] = {0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15};
#define REGS_MASK (0x1ffull | (0xffull << 16))

static void on_record(capture_t* c, const uint8_t* rec, size_t size) {
  const struct perf_event_header* h = (const void*)rec;
  if (h->type == PERF_RECORD_LOST && size >= sizeof(*h) + 16) {
    uint64_t lost;
    memcpy(&lost, rec + sizeof(*h) + 8, 8);
    c->lost += lost;
    return;
  }
  if (h->type != PERF_RECORD_SAMPLE || c->count == MAX_SAMPLES) return;
  const uint8_t* p = rec + sizeof(*h) + 8;  // past pid/tid
  const uint8_t* end = rec + size;
  uint64_t abi;
  if (p + 8 + 17 * 8 + 8 > end) return;
  memcpy(&abi, p, 8);
  p += 8;
  if (abi == 0) return;
  sample_t* s = &c->samples[c->count];
  for (int i = 0; i < 17; i++) memcpy(&s->regs.r[kPerfToDwarf[i]], p + 8 * i, 8);
  p += 17 * 8;
  uint64_t copy_size, dyn = 0;
  memcpy(&copy_size, p, 8);
  p += 8;
  if (copy_size > (uint64_t)(end - p) || (copy_size > 0 && copy_size + 8 > (uint64_t)(end - p))) {
    return;
  }
  if (copy_size > 0) memcpy(&dyn, p + copy_size, 8);
  if (dyn > copy_size) dyn = 0;
  s->copy = malloc(dyn > 0 ? dyn : 1);
  if (s->copy == NULL) return;
  memcpy(s->copy, p, dyn);
  s->len = dyn;
  c->count++;
}

static void drain(struct perf_event_mmap_page* meta, capture_t* c) {
  const uint8_t* data = (const uint8_t*)meta + 4096;
  const uint64_t size = (uint64_t)RING_PAGES * 4096;
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  static uint8_t rec[65536 + 4096];
  while (tail < head) {
    struct perf_event_header h;
    for (size_t i = 0; i < sizeof(h); i++) ((uint8_t*)&h)[i] = data[(tail + i) % size];
    if (h.size < sizeof(h)) break;
    for (size_t i = 0; i < h.size; i++) rec[i] = data[(tail + i) % size];
    on_record(c, rec, h.size);
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

// Runs `argv` (stdout to /dev/null) under a task-clock event at 4000/s, keeping its samples and
// mappings in g_cap. False when the event cannot be opened.
static bool capture(char* const argv[]) {
  for (size_t i = 0; i < g_cap.count; i++) free(g_cap.samples[i].copy);
  memset(&g_cap, 0, sizeof(g_cap));
  if (realpath(argv[0], g_cap.exe) == NULL) return false;
  int go[2];
  assert_int_equal(pipe(go), 0);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char c;
    close(go[1]);
    if (read(go[0], &c, 1) != 1) _exit(126);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execv(argv[0], argv);
    _exit(127);
  }
  close(go[0]);
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = 250000;  // ns of CPU time: 4000/s
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = REGS_MASK;
  attr.sample_stack_user = STACK_COPY;
  attr.disabled = 1;
  attr.enable_on_exec = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  void* ring = MAP_FAILED;
  if (fd >= 0) {
    ring = mmap(NULL, (size_t)(RING_PAGES + 1) * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (fd < 0 || ring == MAP_FAILED) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (fd >= 0) close(fd);
    close(go[1]);
    return false;
  }
  assert_int_equal(write(go[1], "x", 1), 1);
  close(go[1]);
  for (;;) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    const int r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    read_maps(pid, &g_cap);
    drain(ring, &g_cap);
    if (r == 0 && info.si_pid == pid) break;
    const struct timespec pause = {.tv_nsec = 2000000};
    nanosleep(&pause, NULL);
  }
  drain(ring, &g_cap);
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  munmap(ring, (size_t)(RING_PAGES + 1) * 4096);
  close(fd);
  return true;
}

// Our vDSO, the same as the program's: the recorder does the same.
static void add_vdso(zxs_cfi_unwinder_t* u) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[512];
  while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
    unsigned long long start, end;
    if (strstr(line, "[vdso]") != NULL && sscanf(line, "%llx-%llx", &start, &end) == 2) {
      zxs_cfi_unwinder_add_image(u, "[vdso]", (const void*)(uintptr_t)start, end - start);
    }
  }
  if (f != NULL) fclose(f);
}

// Unwinds every sample of g_cap with both unwinders, asserts that they agree, and returns the
// share of samples our own unwinder did alone.
static double compare_unwinders(const char* what) {
  // Everything is freed before the assertions, which leave the function when they fail.
  zxs_cfi_unwinder_t* own = zxs_cfi_unwinder_new();
  zxs_cfi_unwinder_t* lib = zxs_cfi_unwinder_new();
  zxs_cfi_space_t* own_space = NULL;
  zxs_cfi_space_t* lib_space = NULL;
  if (own != NULL && lib != NULL) {
    zxs_cfi_unwinder_set_own(own, true);
    zxs_cfi_unwinder_set_own(lib, false);
    add_vdso(own);
    add_vdso(lib);
    own_space = zxs_cfi_space_new(own, g_cap.maps, g_cap.map_count);
    lib_space = zxs_cfi_space_new(lib, g_cap.maps, g_cap.map_count);
  }
  const bool made = own_space != NULL && lib_space != NULL;
  size_t same = 0, longer = 0, frames = 0, truncated = 0;
  for (size_t i = 0; made && i < g_cap.count; i++) {
    const sample_t* s = &g_cap.samples[i];
    uint64_t a[MAX_FRAMES], b[MAX_FRAMES];
    bool ta = false, tb = false;
    const size_t na = zxs_cfi_unwind(own_space, &s->regs, s->copy, s->len, a, MAX_FRAMES, &ta);
    const size_t nb = zxs_cfi_unwind(lib_space, &s->regs, s->copy, s->len, b, MAX_FRAMES, &tb);
    frames += na;
    truncated += ta;
    if (na == nb && ta == tb && memcmp(a, b, na * sizeof(*a)) == 0) {
      same++;
      continue;
    }
    // libunwind gave up where ours went on (seen once in thousands of samples, at a PLT slot
    // of ld.so during an ASan start-up): counted apart, bounded below.
    if (nb < na && !tb && memcmp(a, b, nb * sizeof(*a)) == 0) longer++;
    if (i - same < 5) {  // the first differences, to see why
      print_message("%s sample %zu: own %zu frames%s, libunwind %zu%s\n", what, i, na,
                    ta ? " (truncated)" : "", nb, tb ? " (truncated)" : "");
      for (size_t k = 0; k < (na > nb ? na : nb) && k < 40; k++) {
        print_message("  %2zu %#14llx %#14llx%s\n", k, k < na ? (unsigned long long)a[k] : 0ull,
                      k < nb ? (unsigned long long)b[k] : 0ull,
                      k < na && k < nb && a[k] == b[k] ? "" : "  <-");
      }
    }
  }
  zxs_cfi_stats_t st;
  zxs_cfi_unwinder_stats(own, &st);
  zxs_cfi_space_free(own_space);
  zxs_cfi_space_free(lib_space);
  zxs_cfi_unwinder_free(own);
  zxs_cfi_unwinder_free(lib);
  const double share = st.samples > 0 ? (double)st.own / (double)st.samples : 0;
  print_message(
      "%-22s %5zu samples (%llu lost), %5zu the same (%.2f%%), %zu where libunwind stopped first; "
      "mean depth %.1f, %zu truncated; "
      "own unwinder alone: %.2f%% (%llu handed to libunwind); rows %llu cached, %llu computed\n",
      what, g_cap.count, (unsigned long long)g_cap.lost, same,
      g_cap.count > 0 ? 100.0 * (double)same / (double)g_cap.count : 0.0, longer,
      g_cap.count > 0 ? (double)frames / (double)g_cap.count : 0.0, truncated, 100.0 * share,
      (unsigned long long)st.fallbacks, (unsigned long long)st.row_hits,
      (unsigned long long)st.row_misses);
  assert_true(made);
  assert_true(g_cap.count >= 100);
  assert_int_equal(same + longer, g_cap.count);
  assert_true(longer * 200 <= g_cap.count);  // at most 0.5%
  return share;
}

// Captures `argv` and compares (see compare_unwinders), asserting that our own unwinder did at
// least `min_own_share` of the samples. A capture whose share falls short is taken once more:
// under ASan on a loaded machine one capture in many came out with most samples unwound short by
// both unwinders alike (their agreement held; the cause, in the capture, is not yet found).
static void capture_and_compare(char* const argv[], const char* what, double min_own_share) {
  double share = 0;
  for (int attempt = 0; attempt < 2 && share < min_own_share; attempt++) {
    if (!capture(argv)) skip();
    share = compare_unwinders(what);
    if (share < min_own_share) {
      print_message("%s: capture %d: own share %.2f%% below %.0f%%, %zu mappings\n", what,
                    attempt + 1, 100.0 * share, 100.0 * min_own_share, g_cap.map_count);
    }
  }
  assert_true(share >= min_own_share);
}

static void test_workload_without_frame_pointers(void** state) {
  (void)state;
  if (!zxs_cfi_available()) skip();
  char* argv[] = {(char*)g_workload, "1", "40", "1500", NULL};
  capture_and_compare(argv, "cfi_workload 1 40", 0.99);
  // Deep stacks: a 150-level chain, cut by the copy or by the 128 frames.
  char* deep[] = {(char*)g_workload, "1", "150", "500", NULL};
  capture_and_compare(deep, "cfi_workload 1 150", 0.99);
}

static void test_xz(void** state) {
  (void)state;
  if (!zxs_cfi_available() || access("/usr/bin/xz", X_OK) != 0) skip();
  // 6 MB of poorly compressible data.
  char path[] = "/tmp/cfi_equiv_xz_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  static uint8_t block[1 << 16];
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < 96; k++) {
    for (size_t i = 0; i < sizeof(block); i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      block[i] = (uint8_t)(i % 7 == 0 ? 'a' : x % 16);
    }
    assert_int_equal(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
  }
  close(fd);
  char* argv[] = {"/usr/bin/xz", "-9", "-T1", "-c", path, NULL};
  // Twice at most, as capture_and_compare (which would leave the file behind on a skip).
  bool ok = true;
  double share = 0;
  for (int attempt = 0; attempt < 2 && ok && share < 0.95; attempt++) {
    ok = capture(argv);
    if (ok) share = compare_unwinders("xz -9");
    if (ok && share < 0.95) {
      print_message("xz -9: capture %d: own share %.2f%% below 95%%, %zu mappings\n", attempt + 1,
                    100.0 * share, g_cap.map_count);
    }
  }
  unlink(path);
  if (!ok) skip();
  assert_true(share >= 0.95);
}

static void test_python3(void** state) {
  (void)state;
  if (!zxs_cfi_available() || access("/usr/bin/python3", X_OK) != 0) skip();
  char* argv[] = {"/usr/bin/python3", "-c",
                  "import json, re\n"
                  "def f(n):\n"
                  "    return 1 if n < 2 else f(n - 1) + f(n - 2)\n"
                  "for i in range(4):\n"
                  "    f(24)\n"
                  "    json.dumps([{'a': i, 'b': str(i)} for i in range(20000)])\n"
                  "    re.findall(r'(a+)+b', 'a' * 18 + 'c')\n",
                  NULL};
  if (!capture(argv)) skip();
  assert_true(compare_unwinders("python3") >= 0.95);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_cfi_equiv CFI_WORKLOAD\n");
    return 2;
  }
  g_workload = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workload_without_frame_pointers),
      cmocka_unit_test(test_xz),
      cmocka_unit_test(test_python3),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
