// `zxsampler perfmon`: the CPU performance monitor (<zxsampler/perfmon.h>) from the command line.
#ifndef ZXSAMPLER_TOOLS_ZXSAMPLER_PERFMON_H_
#define ZXSAMPLER_TOOLS_ZXSAMPLER_PERFMON_H_

// argv[0] names the command in messages ("zxsampler perfmon"); argv[1] is the subcommand
// ("stat" or "record"), then its options. Returns the exit status: the program's when one was
// run and everything went well, 1 on a failure, 2 on bad usage.
int zxsampler_perfmon_main(int argc, char** argv);

#endif  // ZXSAMPLER_TOOLS_ZXSAMPLER_PERFMON_H_
