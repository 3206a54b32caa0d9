// C++ built -O2 -fomit-frame-pointer (meson sets it), as most distribution code is: sorts and
// maps for SECONDS of CPU time. test_record_tree.sh checks that its stacks reach main with CFI.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>

namespace {
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) long sort_and_count(std::mt19937& g) {
  std::vector<int> v(200000);
  for (auto& x : v) x = static_cast<int>(g());
  std::sort(v.begin(), v.end());
  std::map<int, int> m;
  for (size_t i = 0; i < v.size(); i += 4) m[v[i]] = static_cast<int>(i);
  long sum = 0;
  for (const auto& kv : m) sum += kv.second;
  return sum;
}
}  // namespace

int main(int argc, char** argv) {
  const double secs = argc > 1 ? std::atof(argv[1]) : 1.0;
  std::mt19937 g(1);
  long sum = 0;
  for (const double end = cpu_now() + secs; cpu_now() < end;) sum += sort_and_count(g);
  std::printf("%ld\n", sum);
  return 0;
}
