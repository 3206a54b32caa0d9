// zxsampler-perfmon: `zxsampler perfmon` as a program of its own (the tests run it).
//
//   zxsampler-perfmon stat|record [options] [-- PROGRAM [ARGS...]]
#include "zxsampler_perfmon.h"

int main(int argc, char** argv) { return zxsampler_perfmon_main(argc, argv); }
