// Opening and creating a store: refuse anything damaged or foreign before a
// single byte is written, create new stores atomically (temp file + rename,
// so a crash mid-creation never leaves a half-made store at the real path).
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "platform/files.h"
#include "platform/log.h"
#include "store/checkpoint_names.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/store_defaults.h"
#include "store/token.h"

namespace edgesync {
namespace {

constexpr int kPageSize = 1024;

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

uint32_t Be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Checks the file by reading its header ourselves, before SQLite opens it:
// garbage and truncation are refused without SQLite ever touching the file.
Status PrecheckFile(const std::string& path) {
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

Status CreateStoreFile(const StoreOptions& o) {
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

Status OpenStore(const StoreOptions& options, std::unique_ptr<Store>* store) {
  if (!options.gateway_id.empty()) ES_RETURN_IF_ERROR(ValidateKey("gateway id", options.gateway_id));
  if (options.initial_ranges < store_options::kInitialRangesMin ||
      options.initial_ranges > store_options::kInitialRangesMax) {
    return Status::InvalidArgument("store.initial_ranges must be " + std::to_string(store_options::kInitialRangesMin) +
                                   ".." + std::to_string(store_options::kInitialRangesMax));
  }
  if (options.split_max_entries < 1 || options.split_max_bytes < 1) {
    return Status::InvalidArgument("store split limits must be positive");
  }
  if (options.dead_letter_cap < 0 || options.max_bytes < 0 || options.lease_expiry_ms < 1) {
    return Status::InvalidArgument("store limits must not be negative");
  }
  if (::access(options.path.c_str(), F_OK) != 0) {
    if (!options.create_if_missing || options.read_only) return Status::NotFound("no store there");
    ES_RETURN_IF_ERROR(CreateStoreFile(options).Annotate("creating it"));
  }
  ES_RETURN_IF_ERROR(PrecheckFile(options.path));
  auto s = std::make_unique<SqliteStore>(options);
  ES_RETURN_IF_ERROR(s->Init());
  *store = std::move(s);
  return Status::Ok();
}

}  // namespace

// The one place that names the context: callers add none of their own.
Status Store::Open(const StoreOptions& options, std::unique_ptr<Store>* store) {
  if (options.path.empty()) return Status::InvalidArgument("store path is empty");
  return OpenStore(options, store).Annotate("opening store " + options.path);
}

SqliteStore::SqliteStore(const StoreOptions& options)
    : options_(options),
      clock_(options.clock ? options.clock : SystemClock()),
      lsn_fence_(options.sync == StoreOptions::Sync::kNormal && !options.read_only, options.path) {}

SqliteStore::~SqliteStore() {
  MutexLock lock(&write_mu_);
  ReleaseLsnFence();
  // The connections close (and the last one removes the -wal and -shm
  // files) after this body, with the gate held: see store_lock.h.
  if (!options_.read_only) lock_.BeginWriterClose(options_.busy_timeout_ms);
  if (pending_counts_.empty() || write_db_.get() == nullptr) return;
  Status s = FlushRangeCounts();
  if (!s.ok()) ES_LOG(kWarn, "store {}: range counts not saved at close: {}", options_.path, s.ToString());
}

namespace {

// A path as the path part of a file: URI (RFC 3986 reserved bytes SQLite
// would read as query or fragment, and '%' itself).
std::string UriPath(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Status SqliteStore::ReadOnlyName(std::string* name) {
  const std::string& path = options_.path;
  bool writer_open = false;
  ES_RETURN_IF_ERROR(lock_.OpenReader(path, options_.busy_timeout_ms, &writer_open));
  struct stat st;
  const bool wal = ::stat((path + "-wal").c_str(), &st) == 0;
  const bool wal_nonempty = wal && st.st_size > 0;
  const bool shm = ::stat((path + "-shm").c_str(), &st) == 0;
  const std::string base = "file:" + UriPath(path);
  if (!writer_open && !wal_nonempty) {
    // Everything is in the main file and no writer can start while lock_
    // is held: read it as it is, with no locks and no -wal/-shm.
    *name = base + "?immutable=1";
    return Status::Ok();
  }
  if (wal && shm) {  // a live writer's (or a stopped one's) files: use them, create nothing
    *name = base + "?mode=ro";
    return Status::Ok();
  }
  return Status::Unavailable("it has a write-ahead log but not its -shm index; reading it read-only would "
                             "create files beside it. Start the gateway (or region) on it once, then read it");
}

Status SqliteStore::Init() {
  // Nothing else can reach the store yet: the locks cost nothing here and
  // let the analysis check the members Init sets up like any others.
  MutexLock write_lock(&write_mu_);
  MutexLock read_lock(&read_mu_);
  const std::string& path = options_.path;
  std::string name = path;
  int flags = SQLITE_OPEN_READWRITE;
  if (options_.read_only) {
    ES_RETURN_IF_ERROR(ReadOnlyName(&name));
    flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  } else {
    ES_RETURN_IF_ERROR(lock_.BeginWriterOpen(path, options_.busy_timeout_ms));
    // A store made by an older version (or copied in) may be readable by
    // others: narrow it and its WAL files (SQLite gives new ones its mode).
    for (const char* suffix : {"", "-wal", "-shm"}) ES_RETURN_IF_ERROR(MakeFilePrivate(path + suffix));
  }
  ES_RETURN_IF_ERROR(write_db_.Open(name, flags));
  sqlite3* db = write_db_.get();
  // Until the file has passed every check, closing must not checkpoint a WAL
  // into it: a refused file stays exactly as it was.
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_busy_timeout(db, options_.busy_timeout_ms);
  const std::string cache = "PRAGMA cache_size=-" + std::to_string(std::max<int64_t>(options_.cache_kib, 16));
  ES_RETURN_IF_ERROR(write_db_.Exec(cache));
  int64_t app_id = 0, version = 0;
  ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA application_id", &app_id));
  ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA user_version", &version));
  if (app_id != kApplicationId) {
    return Status::Corruption("it is a SQLite database but not an edgesync store; refusing to open it");
  }
  if (version > kSchemaVersion) {
    return Status::Unsupported("it was written by a newer edgesync (schema " + std::to_string(version) +
                               ", this build knows up to " + std::to_string(kSchemaVersion) +
                               "); upgrade edgesync, the file is left untouched");
  }
  if (version < 1) return Status::Corruption("it has no schema version");
  if (options_.read_only && version < kSchemaVersion) {
    return Status::Unsupported("it has schema " + std::to_string(version) + ", older than this build's " +
                               std::to_string(kSchemaVersion) +
                               "; a read-only open does not migrate it: run the gateway (or region) on it once");
  }
  if (options_.open_check != StoreOptions::OpenCheck::kNone) {
    Stmt check;
    ES_RETURN_IF_ERROR(check.Prepare(&write_db_, options_.open_check == StoreOptions::OpenCheck::kFull
                                                     ? "PRAGMA integrity_check(20)"
                                                     : "PRAGMA quick_check(20)"));
    Status st;
    std::string problems;
    while (check.Step(&st)) {
      std::string line = check.Text(0);
      if (line == "ok") break;
      problems += (problems.empty() ? "" : "; ") + line;
    }
    if (!st.ok()) return st.Annotate("integrity check");
    if (!problems.empty()) {
      return Status::Corruption("integrity check failed (" + problems + "); refusing to open it, file left untouched");
    }
  }
  if (!options_.read_only) ES_RETURN_IF_ERROR(InitWriter());
  schema_version_ = kSchemaVersion;
  // Read only: closing never checkpoints (it could not anyway).
  if (!options_.read_only) sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);

  std::string epoch, gateway;
  ES_RETURN_IF_ERROR(write_db_.QueryText("SELECT value FROM meta WHERE key='epoch'", &epoch));
  ES_RETURN_IF_ERROR(write_db_.QueryText("SELECT value FROM meta WHERE key='gateway_id'", &gateway));
  if (!IsEpoch(epoch) || gateway.empty()) return Status::Corruption("its identity (epoch) is missing");
  if (!options_.gateway_id.empty() && options_.gateway_id != gateway) {
    ES_RETURN_IF_ERROR(TakeGatewayId(gateway, &epoch));
    gateway = options_.gateway_id;
  }
  origin_ = Origin{gateway, epoch};
  ES_RETURN_IF_ERROR(LoadFormerOrigins());

  ES_RETURN_IF_ERROR(read_db_.Open(name, flags));
  sqlite3_busy_timeout(read_db_.get(), options_.busy_timeout_ms);
  ES_RETURN_IF_ERROR(read_db_.Exec("PRAGMA query_only=1"));
  ES_RETURN_IF_ERROR(read_db_.Exec(cache));

  ES_RETURN_IF_ERROR(w_insert_log_.Prepare(&write_db_, "INSERT INTO log VALUES(?, ?, ?, ?, ?, ?)"));
  ES_RETURN_IF_ERROR(w_insert_chunk_.Prepare(&write_db_, kInsertChunkSql));
  ES_RETURN_IF_ERROR(w_insert_series_.Prepare(
      &write_db_, "INSERT INTO series(device_id, metric, unit, hkey) VALUES(?, ?, ?, ?) RETURNING id"));
  ES_RETURN_IF_ERROR(
      w_find_series_.Prepare(&write_db_, "SELECT id FROM series WHERE device_id=? AND metric=? AND unit=?"));
  ES_RETURN_IF_ERROR(w_insert_batch_.Prepare(&write_db_, "INSERT OR REPLACE INTO batches VALUES(?, ?)"));
  // Replies and marks may come out of order: a checkpoint only moves forward.
  ES_RETURN_IF_ERROR(w_set_checkpoint_.Prepare(&write_db_,
                                               "INSERT INTO checkpoints VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET "
                                               "value=max(value, excluded.value)"));
  ES_RETURN_IF_ERROR(w_high_.Prepare(&write_db_, kHighLsnSql));
  ES_RETURN_IF_ERROR(w_update_range_.Prepare(
      &write_db_, "UPDATE ranges SET entries = entries + ?, bytes = bytes + ? WHERE id = ?"));
  ES_RETURN_IF_ERROR(w_data_version_.Prepare(&write_db_, "PRAGMA data_version"));
  ES_RETURN_IF_ERROR(
      r_log_after_.Prepare(&read_db_, "SELECT lsn, kind, series, quality FROM log WHERE lsn > ? ORDER BY lsn LIMIT 1"));
  // The chunk holding LSN ?1 + 1, else the first one after it: one seek.
  ES_RETURN_IF_ERROR(r_chunk_after_.Prepare(
      &read_db_,
      "SELECT first_lsn, last_lsn FROM chunks WHERE first_lsn >= ifnull((SELECT max(first_lsn) FROM chunks "
      "WHERE first_lsn <= ?1 + 1), 0) AND last_lsn > ?1 ORDER BY first_lsn LIMIT 1"));
  ES_RETURN_IF_ERROR(r_chunk_data_.Prepare(&read_db_, "SELECT data FROM chunks WHERE first_lsn = ?"));
  ES_RETURN_IF_ERROR(r_series_by_id_.Prepare(&read_db_, "SELECT device_id, metric, unit, hkey FROM series WHERE id = ?"));
  ES_RETURN_IF_ERROR(r_device_.Prepare(
      &read_db_, "SELECT name, location, default_unit, deleted FROM devices WHERE device_id = ?"));

  // Interned series are few (devices x metrics): load them all once.
  {
    Stmt all;
    ES_RETURN_IF_ERROR(all.Prepare(&write_db_, "SELECT id, device_id, metric, unit, hkey FROM series"));
    Status st;
    WriterLock lock(&series_mu_);
    while (all.Step(&st)) {
      int64_t id = all.Int(0);
      SeriesInfo info{all.Text(1), all.Text(2), all.Text(3), HashFromKey(all.Int(4)), true};
      DeviceSeries& dev = by_device_[info.device_id];
      dev.hash = info.hash;
      dev.slots.push_back(SeriesSlot{info.metric, info.unit, id});
      if (static_cast<size_t>(id) >= series_.size()) series_.resize(static_cast<size_t>(id) + 1);
      series_[static_cast<size_t>(id)] = std::move(info);
    }
    ES_RETURN_IF_ERROR(st);
  }
  ES_RETURN_IF_ERROR(RefreshWriteRanges());
  if (options_.read_only) {
    uint64_t high = 0;
    ES_RETURN_IF_ERROR(NextLsn(&high));
    last_lsn_ = high - 1;
  } else {
    ES_RETURN_IF_ERROR(LoadLsnFence());
  }
  if (!options_.read_only) lock_.EndTransition();  // open: readers may come
  return Status::Ok();
}

// The writer's connection settings and migration (write_db_ open, checked).
Status SqliteStore::InitWriter() {
  const std::string& path = options_.path;
  int64_t version = 0;
  ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA user_version", &version));
  ES_RETURN_IF_ERROR(write_db_.Exec("PRAGMA journal_mode=WAL"));
  ES_RETURN_IF_ERROR(write_db_.Exec(options_.sync == StoreOptions::Sync::kFull ? "PRAGMA synchronous=FULL"
                                                                               : "PRAGMA synchronous=NORMAL"));
  // The WAL is checkpointed every wal_pages pages and kept at most that
  // large: 4 MiB normally, less on a small filesystem, where a WAL as large
  // as the free space could never be checkpointed once the disk is full.
  {
    struct statvfs fs;
    int64_t wal_bytes = 1000 * 4096;
    if (::statvfs(DirOf(path).c_str(), &fs) == 0) {
      int64_t total = static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
      wal_bytes = std::clamp<int64_t>(total / 16, 32 * 4096, 1000 * 4096);
    }
    int64_t page_size = 4096;  // 1 KiB since schema 4; older stores keep theirs
    ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA page_size", &page_size));
    const int64_t wal_pages = wal_bytes / std::max<int64_t>(page_size, 512);
    wal_max_bytes_ = wal_pages * (page_size + 24) + 65536;
    ES_RETURN_IF_ERROR(write_db_.Exec("PRAGMA wal_autocheckpoint=" + std::to_string(wal_pages)));
    ES_RETURN_IF_ERROR(write_db_.Exec("PRAGMA journal_size_limit=" + std::to_string(wal_max_bytes_)));
  }
  if (version < kSchemaVersion) {
    Txn txn(&write_db_);
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA user_version", &version));
    if (version < kSchemaVersion) {
      ES_LOG(kInfo, "store {}: migrating schema {} to {}", path, version, kSchemaVersion);
      ES_RETURN_IF_ERROR(MigrateSchema(&write_db_, static_cast<int>(version)));
    }
    ES_RETURN_IF_ERROR(txn.Commit());
  }
  return Status::Ok();
}

Status SqliteStore::TakeGatewayId(const std::string& bound_to, std::string* epoch) {
  const std::string& path = options_.path;
  const std::string& id = options_.gateway_id;
  int64_t high = 0;
  ES_RETURN_IF_ERROR(write_db_.QueryInt(kHighLsnSql, &high));
  const bool empty = high == 0;
  if (options_.read_only || !(options_.reidentify || (empty && options_.take_id_while_empty))) {
    std::string how = "use that gateway id or another store path";
    if (options_.take_id_while_empty) {
      how = "set gateway.id back to '" + bound_to + "', or give the store and its readings the new id with " +
            "`edgesync reidentify` (docs/DEPLOY.md)";
    }
    return Status::InvalidArgument("it belongs to gateway '" + bound_to + "'" +
                                   (empty ? "" : " and holds its readings") + ", not '" + id + "'; " + how);
  }
  // A new origin only where one may be known upstream: an empty store's
  // origin never left it.
  const bool new_origin = !empty;
  // A gateway running on the store would go on under the old origin.
  bool other_writer = false;
  ES_RETURN_IF_ERROR(lock_.OtherWriterOpen(&other_writer));
  if (other_writer) {
    return Status::Unavailable("another process has the store open for writing (a running gateway?); stop it, "
                               "then give the store its new id");
  }
  std::string new_epoch = *epoch;
  if (new_origin) ES_RETURN_IF_ERROR(MakeEpoch(&new_epoch));
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  Stmt put;
  ES_RETURN_IF_ERROR(put.Prepare(&write_db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"));
  auto set = [&](const char* key, const std::string& value) {
    put.Bind(1, std::string_view(key));
    put.Bind(2, std::string_view(value));
    return put.Run();
  };
  if (new_origin) {
    std::string former;
    ES_RETURN_IF_ERROR(write_db_.QueryText("SELECT value FROM meta WHERE key='former_origins'", &former));
    ES_RETURN_IF_ERROR(set("former_origins", former + Origin{bound_to, *epoch}.ToString() + "\n"));
    ES_RETURN_IF_ERROR(set("epoch", new_epoch));
    // What each region acknowledged, and of which store (the uplink's
    // per-region records), was of the old origin: kept, the new origin
    // would claim it and be refilled from LSN 1, a second copy of what the
    // region holds under the old one.
    ES_RETURN_IF_ERROR(write_db_.Exec(std::string("DELETE FROM checkpoints WHERE name LIKE '") +
                                      checkpoint::kUpstreamRegionPrefix + "%' OR name LIKE '" +
                                      checkpoint::kUpstreamEpochPrefix + "%'"));
  }
  ES_RETURN_IF_ERROR(set("gateway_id", id));
  ES_RETURN_IF_ERROR(txn.Commit());
  if (new_origin) {
    ES_LOG(kWarn, "store {}: re-identified: its origin is now {}/{} (was {}/{}); its {} LSNs stay, what regions "
                  "acknowledged stays there under the old origin",
           path, id, new_epoch, bound_to, *epoch, high);
  } else {
    ES_LOG(kInfo, "store {}: holds no reading yet: takes gateway id '{}' (was '{}')", path, id, bound_to);
  }
  *epoch = new_epoch;
  return Status::Ok();
}

Status SqliteStore::LoadFormerOrigins() {
  std::string former;
  ES_RETURN_IF_ERROR(write_db_.QueryText("SELECT value FROM meta WHERE key='former_origins'", &former));
  former_origins_.clear();
  size_t start = 0;
  while (start < former.size()) {
    size_t end = former.find('\n', start);
    if (end == std::string::npos) end = former.size();
    const std::string line = former.substr(start, end - start);
    const size_t slash = line.rfind('/');
    if (slash == std::string::npos || !IsEpoch(line.substr(slash + 1))) {
      return Status::Corruption("a former origin is unreadable: '" + line + "'");
    }
    former_origins_.push_back(Origin{line.substr(0, slash), line.substr(slash + 1)});
    start = end + 1;
  }
  return Status::Ok();
}

Status SqliteStore::SeriesById(int64_t id, SeriesInfo* info) {
  {
    ReaderLock lock(&series_mu_);
    if (id > 0 && static_cast<size_t>(id) < series_.size() && series_[static_cast<size_t>(id)].known) {
      *info = series_[static_cast<size_t>(id)];
      return Status::Ok();
    }
  }
  // Written by another process (or after our load): read it once.
  StmtScope scope(&r_series_by_id_);
  r_series_by_id_.Bind(1, id);
  Status st;
  if (!r_series_by_id_.Step(&st)) {
    ES_RETURN_IF_ERROR(st);
    return Status::Corruption("log refers to unknown series " + std::to_string(id));
  }
  SeriesInfo got{r_series_by_id_.Text(0), r_series_by_id_.Text(1), r_series_by_id_.Text(2),
                 HashFromKey(r_series_by_id_.Int(3)), true};
  *info = got;
  WriterLock lock(&series_mu_);
  if (static_cast<size_t>(id) >= series_.size()) series_.resize(static_cast<size_t>(id) + 1);
  if (!series_[static_cast<size_t>(id)].known) series_[static_cast<size_t>(id)] = std::move(got);
  return Status::Ok();
}

Status SqliteStore::GetMetaInt(Db* db, const std::string& key, int64_t* value) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, "SELECT value FROM meta WHERE key = ?"));
  s.Bind(1, std::string_view(key));
  Status st;
  *value = s.Step(&st) ? s.Int(0) : 0;
  return st;
}

Status SqliteStore::SetMetaInt(const std::string& key, int64_t value) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&write_db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"));
  s.Bind(1, std::string_view(key));
  s.Bind(2, value);
  return s.Run();
}

}  // namespace edgesync
