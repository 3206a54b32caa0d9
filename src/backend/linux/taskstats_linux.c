// Linux: the kernel's taskstats (generic netlink family "TASKSTATS"), for the run delay and CPU
// time of threads that have exited, which /proc no longer shows.
//
// Two requests, both refused without CAP_NET_ADMIN (EPERM) and outside the initial user and pid
// namespaces:
//   - TASKSTATS_CMD_ATTR_REGISTER_CPUMASK makes the kernel send every task that exits on those
//     CPUs (all possible CPUs here) to the socket, from the exiting task's do_exit(), before its
//     memory is released and before it leaves /proc: so when a thread of ours is seen gone
//     (pthread_join returned, /proc lists it no more, its perf events hung up), its record is
//     already queued on the socket. The record carries cpu_delay_total, the scheduler's run
//     delay (sched_info.run_delay, what /proc/TID/schedstat shows as its second field), and
//     cpu_run_virtual_total (sum_exec_runtime, the thread CPU clock). A socket filter keeps only
//     this process's threads, so other processes' exits never wake us.
//   - TASKSTATS_CMD_ATTR_TGID answers the process's totals: the kernel keeps the sum of its
//     exited threads (signal->stats, added to at each thread's exit whether or not anyone
//     listens) and adds its live threads.
// On kernels where the CPU part of a record depends on delay accounting (before it was taken out
// of the kernel.task_delayacct switch), a record without it has cpu_run_virtual_total 0 and is
// not used: a thread that exited ran.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "linux_internal.h"

#define NLA_PAYLOAD(na) ((void*)((char*)(na) + NLA_HDRLEN))

// One message: an exit record is ~0.5 KiB (1 KiB with the process's aggregate).
static char g_buffer[16384] __attribute__((aligned(8)));
static uint32_t g_seq;

typedef struct {
  struct nlmsghdr n;
  struct genlmsghdr g;
  char attrs[64];
} request_t;

// One request with one attribute; false with errno on failure.
static bool send_request(int fd, uint16_t type, uint8_t cmd, uint16_t attr, const void* data,
                         size_t len, uint32_t* seq) {
  request_t m;
  memset(&m, 0, sizeof(m));
  if (NLA_HDRLEN + len > sizeof(m.attrs)) {
    errno = EINVAL;
    return false;
  }
  m.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
  m.n.nlmsg_type = type;
  m.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  m.n.nlmsg_seq = *seq = ++g_seq;
  m.g.cmd = cmd;
  m.g.version = 1;
  struct nlattr* na = (struct nlattr*)((char*)&m + NLMSG_ALIGN(m.n.nlmsg_len));
  na->nla_type = attr;
  na->nla_len = (uint16_t)(NLA_HDRLEN + len);
  memcpy(NLA_PAYLOAD(na), data, len);
  m.n.nlmsg_len += NLA_ALIGN(na->nla_len);
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  return sendto(fd, &m, m.n.nlmsg_len, 0, (struct sockaddr*)&kernel, sizeof(kernel)) ==
         (ssize_t)m.n.nlmsg_len;
}

// The first attribute of `type` among those from `na` over `len` bytes, or NULL.
static struct nlattr* find_attr(struct nlattr* na, int len, uint16_t type) {
  while (len >= NLA_HDRLEN && na->nla_len >= NLA_HDRLEN && na->nla_len <= len) {
    if ((na->nla_type & NLA_TYPE_MASK) == type) return na;
    len -= NLA_ALIGN(na->nla_len);
    na = (struct nlattr*)((char*)na + NLA_ALIGN(na->nla_len));
  }
  return NULL;
}

// The attributes of a message and their length.
static struct nlattr* first_attr(struct nlmsghdr* h) {
  return (struct nlattr*)((char*)NLMSG_DATA(h) + GENL_HDRLEN);
}
static int len_of(const struct nlmsghdr* h) {
  return (int)h->nlmsg_len - (int)NLMSG_LENGTH(GENL_HDRLEN);
}

// The stats of an aggregate attribute (TASKSTATS_TYPE_AGGR_PID/TGID): its id and the struct,
// zero-filled past what this kernel sends. False when malformed.
static bool read_aggregate(struct nlattr* aggr, uint16_t id_type, uint32_t* id,
                           struct taskstats* out) {
  struct nlattr* in = NLA_PAYLOAD(aggr);
  const int len = aggr->nla_len - NLA_HDRLEN;
  struct nlattr* id_attr = find_attr(in, len, id_type);
  struct nlattr* stats = find_attr(in, len, TASKSTATS_TYPE_STATS);
  if (id_attr == NULL || stats == NULL || id_attr->nla_len < NLA_HDRLEN + sizeof(uint32_t)) {
    return false;
  }
  memcpy(id, NLA_PAYLOAD(id_attr), sizeof(*id));
  size_t size = stats->nla_len - NLA_HDRLEN;
  if (size < offsetof(struct taskstats, cpu_run_virtual_total) + sizeof(uint64_t)) return false;
  if (size > sizeof(*out)) size = sizeof(*out);
  memset(out, 0, sizeof(*out));
  memcpy(out, NLA_PAYLOAD(stats), size);
  return true;
}

// Waits for the answer to request `seq`; for each data message, `on_message`. 0 or -errno.
static int wait_answer(int fd, uint32_t seq, void (*on_message)(void*, struct nlmsghdr*),
                       void* ctx) {
  for (;;) {
    const ssize_t n = recv(fd, g_buffer, sizeof(g_buffer), 0);
    if (n < 0) {
      if (errno == EINTR || errno == ENOBUFS) continue;
      return -errno;
    }
    unsigned int left = (unsigned int)n;  // NLMSG_OK compares it with the u32 nlmsg_len
    for (struct nlmsghdr* h = (struct nlmsghdr*)g_buffer; NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq) continue;  // a record from the kernel, or a stale answer
      if (h->nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr* err = NLMSG_DATA(h);
        return err->error;
      }
      if (on_message != NULL) on_message(ctx, h);
    }
  }
}

// A generic netlink socket that gives up on an answer after a second.
static int open_socket(void) {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd < 0) return -1;
  struct sockaddr_nl self = {.nl_family = AF_NETLINK};
  struct timeval timeout = {.tv_sec = 1};
  if (bind(fd, (struct sockaddr*)&self, sizeof(self)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void on_family(void* ctx, struct nlmsghdr* h) {
  struct nlattr* id = find_attr(first_attr(h), len_of(h), CTRL_ATTR_FAMILY_ID);
  if (id != NULL && id->nla_len >= NLA_HDRLEN + sizeof(uint16_t)) {
    memcpy(ctx, NLA_PAYLOAD(id), sizeof(uint16_t));
  }
}

// The family's id, asked on `fd`: 0 with errno when the kernel has no taskstats.
static uint16_t family_id(int fd) {
  static uint16_t id;
  if (id != 0) return id;
  uint32_t seq;
  uint16_t found = 0;
  if (!send_request(fd, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME,
                    TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME), &seq)) {
    return 0;
  }
  const int err = wait_answer(fd, seq, on_family, &found);
  if (found == 0) errno = err < 0 ? -err : ENOENT;
  id = found;
  return id;
}

// A classic BPF filter: keeps exit records of `tgid`'s tasks, and anything not shaped like one
// (answers, errors, a layout with padding attributes), which the reader sorts out; a failed
// check jumps to "keep". Absolute loads are big-endian.
static void attach_filter(int fd, uint16_t family, pid_t tgid) {
  enum {
    kType = offsetof(struct nlmsghdr, nlmsg_type),
    kAggr = NLMSG_HDRLEN + GENL_HDRLEN,  // nla of TASKSTATS_TYPE_AGGR_PID
    kPid = kAggr + NLA_HDRLEN,           // nla of TASKSTATS_TYPE_PID (a u32)
    kStats = kPid + NLA_HDRLEN + 4,      // nla of TASKSTATS_TYPE_STATS
    kTgid = kStats + NLA_HDRLEN + offsetof(struct taskstats, ac_tgid),
    kNlaType = offsetof(struct nlattr, nla_type),
  };
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, kType),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __builtin_bswap16(family), 0, 6),
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, kAggr + kNlaType),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __builtin_bswap16(TASKSTATS_TYPE_AGGR_PID), 0, 4),
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, kStats + kNlaType),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __builtin_bswap16(TASKSTATS_TYPE_STATS), 0, 2),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kTgid),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __builtin_bswap32((uint32_t)tgid), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 0xffffffffu),  // ours (or not an exit record): keep
      BPF_STMT(BPF_RET | BPF_K, 0),            // another process's task: drop
  };
  struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
  (void)setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

int zxs_linux_taskstats_listen(pid_t tgid) {
  const int fd = open_socket();
  if (fd < 0) return -1;
  const uint16_t family = family_id(fd);
  if (family == 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  attach_filter(fd, family, tgid);
  // Bursts of exits while the drainer is busy: room for ~1000 records (root may force it).
  const int size = 1 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  char cpus[64] = "0";
  FILE* f = fopen("/sys/devices/system/cpu/possible", "re");
  if (f != NULL) {
    if (fgets(cpus, sizeof(cpus), f) == NULL) snprintf(cpus, sizeof(cpus), "0");
    fclose(f);
    cpus[strcspn(cpus, "\n")] = '\0';
  } else {
    snprintf(cpus, sizeof(cpus), "0-%ld", sysconf(_SC_NPROCESSORS_CONF) - 1);
  }
  uint32_t seq;
  int err = send_request(fd, family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, cpus,
                         strlen(cpus) + 1, &seq)
                ? 0
                : -errno;
  // Records that arrive before the answer are dropped: no thread is measured before this.
  if (err == 0) err = wait_answer(fd, seq, NULL, NULL);
  if (err != 0 || fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
    close(fd);
    errno = err != 0 ? -err : errno;
    return -1;
  }
  return fd;
}

bool zxs_linux_taskstats_drain(int fd, pid_t tgid, zxs_linux_task_exit_fn on_exit, void* ctx) {
  bool complete = true;
  for (;;) {
    const ssize_t n = recv(fd, g_buffer, sizeof(g_buffer), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {  // the socket overflowed: records were dropped
        complete = false;
        continue;
      }
      return complete;
    }
    unsigned int left = (unsigned int)n;  // NLMSG_OK compares it with the u32 nlmsg_len
    for (struct nlmsghdr* h = (struct nlmsghdr*)g_buffer; NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE) continue;
      struct nlattr* aggr = find_attr(first_attr(h), len_of(h), TASKSTATS_TYPE_AGGR_PID);
      struct taskstats stats;
      uint32_t tid;
      if (aggr == NULL || !read_aggregate(aggr, TASKSTATS_TYPE_PID, &tid, &stats)) continue;
      if (stats.ac_tgid != (uint32_t)tgid || stats.cpu_run_virtual_total == 0) continue;
      const zxs_linux_task_exit_t exit = {.tid = (pid_t)tid,
                                          .cpu_time = (int64_t)stats.cpu_run_virtual_total,
                                          .queue_time = (int64_t)stats.cpu_delay_total};
      on_exit(ctx, &exit);
    }
  }
}

static void on_tgid(void* ctx, struct nlmsghdr* h) {
  struct nlattr* aggr = find_attr(first_attr(h), len_of(h), TASKSTATS_TYPE_AGGR_TGID);
  uint32_t tgid;
  if (aggr != NULL) (void)read_aggregate(aggr, TASKSTATS_TYPE_TGID, &tgid, ctx);
}

bool zxs_linux_taskstats_process(int* fd, pid_t tgid, int64_t* cpu_time, int64_t* queue_time) {
  if (*fd < 0) *fd = open_socket();
  if (*fd < 0) return false;
  const uint16_t family = family_id(*fd);
  if (family == 0) return false;
  uint32_t seq, id = (uint32_t)tgid;
  if (!send_request(*fd, family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_TGID, &id, sizeof(id),
                    &seq)) {
    return false;
  }
  struct taskstats stats;
  memset(&stats, 0, sizeof(stats));
  const int err = wait_answer(*fd, seq, on_tgid, &stats);
  if (err != 0 || stats.cpu_run_virtual_total == 0) {
    errno = err != 0 ? -err : ENODATA;
    return false;
  }
  *cpu_time = (int64_t)stats.cpu_run_virtual_total;
  *queue_time = (int64_t)stats.cpu_delay_total;
  return true;
}
