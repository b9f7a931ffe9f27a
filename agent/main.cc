// edgesync: the program. Parses the command line and hands over to a role.
#include <malloc.h>

#include "agent/cli.h"

int main(int argc, char** argv) {
  // glibc gives each thread that allocates its own arena (up to 8 x cores),
  // and an arena keeps what its thread freed for that thread: the gateway's
  // threads (MQTT receive, committer, retention, uplink, status) each held
  // a few hundred KiB to 2 MiB that the others could not reuse (smaps of
  // the gateway in tests/bench/storage_bench.cc). Two arenas keep the
  // committer and the receive thread from contending on one lock while the
  // rest share.
  mallopt(M_ARENA_MAX, 2);
  // A fixed threshold: blocks of 128 KiB and more (the commit queue, the
  // store's series table) are mapped on their own and given back when
  // freed. glibc otherwise raises the threshold to the largest block freed
  // so far, and the next such blocks stay in the heap after they are freed.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  return edgesync::RunCli(argc, argv);
}
