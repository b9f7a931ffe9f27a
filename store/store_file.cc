#include "store/store_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/files.h"
#include "store/schema.h"
#include "store/types.h"

namespace edgesync {
namespace store_file {
namespace {

constexpr int kPageSize = 1024;

uint32_t Be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

Status MakeEpoch(std::string* epoch) {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof(b)) {
    ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  epoch->clear();
  for (unsigned char c : b) {
    epoch->push_back(kHex[c >> 4]);
    epoch->push_back(kHex[c & 15]);
  }
  return Status::Ok();
}

Status Precheck(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::IoError("stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument("it is not a regular file");
  if (st.st_size == 0) return Status::Corruption("it is empty (truncated store file); refusing to open it");
  if (st.st_size < 100) return Status::Corruption("it is truncated (" + std::to_string(st.st_size) + " bytes)");
  unsigned char h[100];
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("open " + path + ": " + std::strerror(errno));
  ssize_t n = ::pread(fd, h, sizeof(h), 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof(h))) return Status::IoError("reading the header of " + path);
  if (std::memcmp(h, "SQLite format 3", 16) != 0) {
    return Status::Corruption("it is not a SQLite database (bad header); refusing to open it");
  }
  uint32_t page_size = (uint32_t{h[16]} << 8) | h[17];
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || (page_size & (page_size - 1)) != 0) {
    return Status::Corruption("it has an invalid page size in its header");
  }
  // With a non-empty WAL the main file may legitimately lag its header
  // (a checkpoint interrupted by a crash); the WAL then completes it.
  struct stat wal;
  bool wal_nonempty = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  if (!wal_nonempty) {
    uint32_t pages = Be32(h + 28);
    bool size_valid = Be32(h + 24) == Be32(h + 92) && pages > 0;
    uint64_t want = uint64_t{pages} * page_size;
    if (st.st_size % page_size != 0 || (size_valid && static_cast<uint64_t>(st.st_size) < want)) {
      return Status::Corruption("it is truncated: " + std::to_string(st.st_size) + " bytes, header says " +
                                std::to_string(want) + "; refusing to open it");
    }
  }
  return Status::Ok();
}

Status Create(const StoreOptions& o) {
  if (o.gateway_id.empty()) return Status::InvalidArgument("creating a store needs a gateway id");
  std::string tmp = o.path + ".creating-" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  ::unlink((tmp + "-wal").c_str());
  ::unlink((tmp + "-shm").c_str());
  {
    // Made by us first, 0600 whatever the umask: SQLite gives the -wal and
    // -shm files the store's own mode.
    int fd = OpenPrivateFile(tmp, O_RDWR | O_EXCL);
    if (fd < 0) return ErrnoStatus("creating", tmp);
    ::close(fd);
    Db db;
    ES_RETURN_IF_ERROR(db.Open(tmp, SQLITE_OPEN_READWRITE));
    // Small pages: a commit writes each page it touches to the WAL and
    // again at the checkpoint, and a commit of readings touches ~3 pages
    // (the chunk table's last leaf, the checkpoint row, now and then the
    // time index) whatever it holds. At 1 KiB a commit costs ~3 KiB of WAL
    // instead of ~12 KiB (tests/bench/retention_bench.cc: bytes written per
    // reading at 100 readings/s, one reading per commit). Set before the
    // first write; a store keeps the page size it was made with.
    ES_RETURN_IF_ERROR(db.Exec("PRAGMA page_size=" + std::to_string(kPageSize)));
    ES_RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode=WAL"));
    std::string epoch;
    ES_RETURN_IF_ERROR(MakeEpoch(&epoch));
    Txn txn(&db);
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(CreateSchema(&db, kSchemaVersion));
    Stmt meta;
    ES_RETURN_IF_ERROR(meta.Prepare(&db, "INSERT INTO meta(key, value) VALUES(?, ?)"));
    auto put = [&](const char* k, const std::string& v) {
      meta.Bind(1, std::string_view(k));
      meta.Bind(2, std::string_view(v));
      return meta.Run();
    };
    ES_RETURN_IF_ERROR(put("epoch", epoch));
    ES_RETURN_IF_ERROR(put("gateway_id", o.gateway_id));
    Stmt range;
    ES_RETURN_IF_ERROR(range.Prepare(&db, "INSERT INTO ranges VALUES(?, ?, ?, 0, 1, 0, 0)"));
    const uint64_t n = static_cast<uint64_t>(o.initial_ranges);
    const uint64_t step = UINT64_MAX / n;
    for (uint64_t i = 0; i < n; ++i) {
      range.Bind(1, static_cast<int64_t>(i + 1));
      range.Bind(2, HashKey(i * step));
      range.Bind(3, HashKey(i + 1 == n ? UINT64_MAX : (i + 1) * step));
      ES_RETURN_IF_ERROR(range.Run());
    }
    ES_RETURN_IF_ERROR(txn.Commit());
  }  // closing checkpoints the WAL into the file and removes it
  ES_RETURN_IF_ERROR(SyncPath(tmp));
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, o.path.c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    if (err == EEXIST) {  // another process created it first: use theirs
      ::unlink(tmp.c_str());
      return Status::Ok();
    }
    if (err != EINVAL && err != ENOSYS) {
      ::unlink(tmp.c_str());
      return Status::IoError("renaming " + tmp + " into place: " + std::strerror(err));
    }
    // The filesystem cannot refuse to replace (e.g. vfat): check, then rename.
    if (::access(o.path.c_str(), F_OK) == 0) {
      ::unlink(tmp.c_str());
      return Status::Ok();
    }
    if (::rename(tmp.c_str(), o.path.c_str()) != 0) {
      return Status::IoError("renaming " + tmp + " into place: " + std::strerror(errno));
    }
  }
  return SyncPath(DirOf(o.path));
}

}  // namespace store_file
}  // namespace edgesync
