// store/store_lock.h: who has a store file open, across processes, so that a
// read-only reader (`edgesync query`, `feed`) can open a WAL store without
// creating its -wal and -shm files.
//
// Why: SQLite opening a WAL database even with SQLITE_OPEN_READONLY creates
// the -wal and -shm files when they are missing (measured with SQLite
// 3.40.1: `sqlite3 'file:s.db?mode=ro'` leaves both behind; with
// readonly_shm=1 it fails and still leaves the -wal), owned by whoever ran
// the query and possibly unusable by the gateway's own user. Only
// `immutable=1` reads without them, and that is safe only while no writer
// can change the file. This lock tells the two cases apart:
//
//   writers  held shared by every read-write Store for its whole life;
//   gate     held exclusively by a writer while it opens or closes SQLite,
//            shared by a reader for its whole life.
//
// A reader holding the gate sees every writer either fully open (its -wal
// and -shm exist, and stay: a writer closes only holding the gate) or not started (it waits for the gate). So "no
// writer" means immutable reads are safe until the reader closes; "a
// writer" means a plain read-only open creates nothing.
//
// Open file description locks (F_OFD_SETLK: per open file, not per
// process, so two Stores in one process exclude each other too, and not
// released when SQLite closes its own descriptors) on two bytes past
// SQLite's own lock bytes (0x40000000..), which they never touch.
//
// Thread safety: one StoreLock per Store; not shared between threads.
#ifndef EDGESYNC_STORE_STORE_LOCK_H_
#define EDGESYNC_STORE_STORE_LOCK_H_

#include <sys/types.h>

#include <string>

#include "platform/status.h"

namespace edgesync {

class StoreLock {
 public:
  StoreLock() = default;
  ~StoreLock();  // releases everything (closing the descriptor does)
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  // Writer: takes the gate (waiting up to timeout_ms for readers to finish),
  // then joins the writers. The gate stays held until EndTransition.
  Status BeginWriterOpen(const std::string& path, int timeout_ms);
  // Writer about to close: takes the gate again (best effort: after
  // timeout_ms it closes anyway and says so). Nothing if it never opened.
  void BeginWriterClose(int timeout_ms);
  void EndTransition();
  // Writer, between BeginWriterOpen and EndTransition (no writer can join
  // then): *other = another read-write Store has the file open.
  Status OtherWriterOpen(bool* other);

  // Reader: shares the gate for the lock's life; *writer_open tells whether
  // a read-write Store has the file open now.
  Status OpenReader(const std::string& path, int timeout_ms, bool* writer_open);

 private:
  Status Open(const std::string& path, bool for_writing);
  // F_OFD_SETLK on one byte, retried until timeout_ms: 0, EAGAIN on
  // timeout, or the errno of a failure.
  int Lock(off_t byte, short type, int timeout_ms);

  std::string path_;
  int fd_ = -1;
  bool writer_ = false;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_STORE_LOCK_H_
