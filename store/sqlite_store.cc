// The store's owner (store/sqlite_store.h): opening the file, and every
// call whose work a component does (leases, checkpoints, feed positions,
// dead letters, figures; the log's read side; retention and compaction),
// each under the mutex of the connection it uses. The writer's own work
// (appends and the other change-log entries) is in sqlite_store_log.cc.
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
#include "store/chunk_compactor.h"
#include "store/dead_letter_table.h"
#include "store/feed_position_table.h"
#include "store/hub_feed.h"
#include "store/lease_table.h"
#include "store/read_view_tables.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/store_defaults.h"
#include "store/store_file.h"
#include "store/token.h"

namespace edgesync {
namespace {

Status OpenStore(const StoreOptions& options, std::unique_ptr<SqliteStore>* store) {
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
    ES_RETURN_IF_ERROR(store_file::Create(options).Annotate("creating it"));
  }
  ES_RETURN_IF_ERROR(store_file::Precheck(options.path));
  auto s = std::make_unique<SqliteStore>(options);
  ES_RETURN_IF_ERROR(s->Init());
  *store = std::move(s);
  return Status::Ok();
}

}  // namespace

// The one place that names the context: callers add none of their own.
Status OpenSqliteStore(const StoreOptions& options, std::unique_ptr<SqliteStore>* store) {
  if (options.path.empty()) return Status::InvalidArgument("store path is empty");
  return OpenStore(options, store).Annotate("opening store " + options.path);
}

Status Store::Open(const StoreOptions& options, std::unique_ptr<Store>* store) {
  std::unique_ptr<SqliteStore> s;
  ES_RETURN_IF_ERROR(OpenSqliteStore(options, &s));
  *store = std::move(s);
  return Status::Ok();
}

SqliteStore::SqliteStore(const StoreOptions& options)
    : options_(options),
      clock_(options.clock ? options.clock : SystemClock()),
      ranges_(options_.split_max_entries, options_.split_max_bytes),
      lsn_fence_(options.sync == StoreOptions::Sync::kNormal && !options.read_only, options.path),
      retention_(options_, clock_) {}

SqliteStore::~SqliteStore() {
  MutexLock lock(&write_mu_);
  ReleaseLsnFence();
  // The connections close (and the last one removes the -wal and -shm
  // files) after this body, with the gate held: see store_lock.h.
  if (!options_.read_only) lock_.BeginWriterClose(options_.busy_timeout_ms);
  if (!ranges_.has_pending() || write_db_.get() == nullptr) return;
  Status s = ranges_.Flush();
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
  ES_RETURN_IF_ERROR(w_insert_batch_.Prepare(&write_db_, "INSERT OR REPLACE INTO batches VALUES(?, ?)"));
  // Replies and marks may come out of order: a checkpoint only moves forward.
  ES_RETURN_IF_ERROR(w_set_checkpoint_.Prepare(&write_db_,
                                               "INSERT INTO checkpoints VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET "
                                               "value=max(value, excluded.value)"));
  ES_RETURN_IF_ERROR(w_high_.Prepare(&write_db_, kHighLsnSql));
  ES_RETURN_IF_ERROR(ranges_.Open(&write_db_));
  ES_RETURN_IF_ERROR(w_data_version_.Prepare(&write_db_, "PRAGMA data_version"));
  ES_RETURN_IF_ERROR(series_reader_.Open(&read_db_, &series_index_));
  ES_RETURN_IF_ERROR(log_reader_.Open(&read_db_, &series_reader_, origin_.epoch));
  ES_RETURN_IF_ERROR(r_origin_.Prepare(&read_db_, /*can_insert=*/false));
  query_reader_.Open(&read_db_, &series_reader_, &origin_catalog_, &r_origin_, &remote_rows_, origin_);

  ES_RETURN_IF_ERROR(series_writer_.Open(&write_db_, &series_index_));
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
    const int64_t wal_max_bytes = wal_pages * (page_size + 24) + 65536;
    retention_.set_wal_max_bytes(wal_max_bytes);
    ES_RETURN_IF_ERROR(write_db_.Exec("PRAGMA wal_autocheckpoint=" + std::to_string(wal_pages)));
    ES_RETURN_IF_ERROR(write_db_.Exec("PRAGMA journal_size_limit=" + std::to_string(wal_max_bytes)));
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
  if (new_origin) ES_RETURN_IF_ERROR(store_file::MakeEpoch(&new_epoch));
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


// Queries and summaries (store/query_reader.h).
Status SqliteStore::Query(const QueryRequest& q, std::vector<QueryRow>* rows) {
  MutexLock lock(&read_mu_);
  return query_reader_.Query(q, rows);
}

Status SqliteStore::ListDevices(std::vector<DeviceSummary>* devices) {
  MutexLock lock(&read_mu_);
  return query_reader_.ListDevices(devices);
}

Status SqliteStore::Backlog(uint64_t after_lsn, BacklogInfo* info) {
  MutexLock lock(&read_mu_);
  return query_reader_.Backlog(after_lsn, info);
}

// Other origins' entries: the read view (store/read_view_tables.h),
// written through the writer's connection, read through the read
// connection. A hub's region feed is SqliteHubStore's
// (store/sqlite_hub_store.cc), on the same connections.

// Their statements (and the origin statements a hub's writer shares) are
// prepared on first use and kept for the connection's life: a store that
// never applies remote entries pays nothing.
Status SqliteStore::PrepareApply() {
  if (apply_prepared_) return Status::Ok();
  ES_RETURN_IF_ERROR(w_origin_.Prepare(&write_db_, /*can_insert=*/true));
  ES_RETURN_IF_ERROR(read_view_.Open(&write_db_, &series_writer_, &origin_catalog_, &w_origin_, &remote_rows_));
  apply_prepared_ = true;
  return Status::Ok();
}

// The end of a read-view or hub write: on failure the transaction is rolled
// back and the series and origins it interned are forgotten (their rows are
// gone with it); on success they become part of the caches.
Status SqliteStore::EndRemoteWrite(Txn* txn, const Status& status) {
  if (!status.ok()) {
    txn->Rollback();
    series_writer_.Rollback();
    origin_catalog_.Forget();
    read_view_.RolledBack();
    return status;
  }
  series_writer_.Commit();
  read_view_.Committed();
  return Status::Ok();
}

Status SqliteStore::ApplyRemote(const std::vector<RemoteEntry>& entries, int64_t* applied) {
  *applied = 0;
  // Entries of an origin this store had before it was re-identified are its
  // own local rows (same LSNs), as the feed puller skips the current one's.
  auto former = [&](const RemoteEntry& r) {
    return std::find(former_origins_.begin(), former_origins_.end(), r.origin) != former_origins_.end();
  };
  if (!former_origins_.empty() && std::any_of(entries.begin(), entries.end(), former)) {
    std::vector<RemoteEntry> rest;
    for (const RemoteEntry& r : entries) {
      if (!former(r)) rest.push_back(r);
    }
    return ApplyRemote(rest, applied);
  }
  const Origin* checked = nullptr;  // entries mostly share one origin: validate it once
  for (size_t i = 0; i < entries.size(); ++i) {
    const RemoteEntry& r = entries[i];
    Status v;
    if (!checked || !(r.origin == *checked)) {
      v = ValidateOrigin(r.origin);
      checked = &r.origin;
    }
    if (v.ok()) v = ValidateChangeEntry(r.entry);
    if (v.ok() && r.entry.lsn != r.origin_lsn) v = Status::InvalidArgument("entry LSN differs from origin LSN");
    if (!v.ok()) return v.Annotate("remote entry " + std::to_string(i));
  }
  if (entries.empty()) return Status::Ok();
  MutexLock lock(&write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  series_writer_.Commit();
  int64_t count = 0;
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(read_view_.Apply(entries, clock_->WallMillis(), &count));
    return txn.Commit();
  }();
  ES_RETURN_IF_ERROR(EndRemoteWrite(&txn, s));
  *applied = count;
  return Status::Ok();
}

Status SqliteStore::KeepWatermarks(const std::vector<OriginWatermark>& watermarks) {
  for (const OriginWatermark& w : watermarks) ES_RETURN_IF_ERROR(ValidateOrigin(w.origin));
  if (watermarks.empty()) return Status::Ok();
  MutexLock lock(&write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(read_view_.KeepWatermarks(watermarks, origin_));
    return txn.Commit();
  }();
  return EndRemoteWrite(&txn, s);
}

Status SqliteStore::ListWatermarks(std::vector<OriginWatermark>* watermarks) {
  MutexLock lock(&read_mu_);
  return ListStoreWatermarks(&read_db_, origin_, watermarks);
}

// Coordination: leases (store/lease_table.h), named checkpoints, feed
// positions (store/feed_position_table.h), upstream acknowledgements, dead
// letters (store/dead_letter_table.h) and figures.
namespace {

Status ValidateMark(const CheckpointMark& mark) {
  ES_RETURN_IF_ERROR(ValidateName("checkpoint name", mark.name));
  if (mark.value > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("checkpoint value too large");
  return Status::Ok();
}

}  // namespace

Status SqliteStore::AcquireLease(uint32_t range_id, const std::string& owner, Lease* lease) {
  ES_RETURN_IF_ERROR(lease_table::ValidateOwner(owner));
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  ES_RETURN_IF_ERROR(RefreshWriteRanges());
  const RangeRow* range = FindRange(ranges_.rows(), range_id);
  if (!range) return Status::NotFound("range " + std::to_string(range_id) + " does not exist");
  if (!range->info.active) return Status::NotFound("range " + std::to_string(range_id) + " has split; lease its children");
  std::vector<uint32_t> ancestors;
  for (uint32_t p = range->info.parent; p != 0;) {
    ancestors.push_back(p);
    const RangeRow* parent = FindRange(ranges_.rows(), p);
    p = parent ? parent->info.parent : 0;
  }
  ES_RETURN_IF_ERROR(
      lease_table::Acquire(&write_db_, *clock_, range_id, owner, ancestors, options_.lease_expiry_ms, lease));
  return txn.Commit();
}

Status SqliteStore::RenewLease(const Lease& held, Lease* lease) {
  return CheckpointLease(held, held.continuation, lease);
}

Status SqliteStore::CheckpointLease(const Lease& held, const std::string& continuation, Lease* lease) {
  MutexLock lock(&write_mu_);
  return lease_table::Checkpoint(&write_db_, *clock_, held, continuation, lease);
}

Status SqliteStore::ReleaseLease(const Lease& held) {
  MutexLock lock(&write_mu_);
  return lease_table::Release(&write_db_, held);
}

// A consumer takes a range from another (rebalancing); see store.h.
Status SqliteStore::TakeLease(const Lease& seen, const std::string& owner, Lease* lease) {
  MutexLock lock(&write_mu_);
  return lease_table::Take(&write_db_, *clock_, seen, owner, lease);
}

Status SqliteStore::ListLeases(std::vector<Lease>* leases) {
  MutexLock lock(&read_mu_);
  return lease_table::List(&read_db_, leases);
}

Status SqliteStore::GetCheckpoint(const std::string& name, uint64_t* value) {
  ES_RETURN_IF_ERROR(ValidateName("checkpoint name", name));
  MutexLock lock(&read_mu_);
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_, "SELECT value FROM checkpoints WHERE name=?"));
  s.Bind(1, std::string_view(name));
  Status st;
  *value = s.Step(&st) ? static_cast<uint64_t>(s.Int(0)) : 0;
  return st;
}

Status SqliteStore::SetCheckpoint(const std::string& name, uint64_t value) {
  const CheckpointMark mark{name, value};
  ES_RETURN_IF_ERROR(ValidateMark(mark));
  MutexLock lock(&write_mu_);
  return MoveCheckpoint(mark);
}

Status SqliteStore::AppendReadingsMarked(const std::vector<Reading>& readings, const CheckpointMark& mark,
                                         AppendResult* result) {
  ES_RETURN_IF_ERROR(ValidateMark(mark));
  return AppendWithMark(readings, &mark, result);
}

Status SqliteStore::GetFeedPosition(const std::string& region, FeedPosition* position) {
  ES_RETURN_IF_ERROR(feed_position_table::ValidateRegion(region));
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  ES_RETURN_IF_ERROR(feed_position_table::Read(&read_db_, region, position));
  return snapshot.Commit();
}

Status SqliteStore::SetFeedPosition(const std::string& region, const FeedPosition& position, bool reset) {
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  ES_RETURN_IF_ERROR(feed_position_table::Write(&write_db_, region, position, reset));
  return txn.Commit();
}

Status SqliteStore::AckUpstream(const std::string& target, uint64_t lsn) {
  ES_RETURN_IF_ERROR(ValidateName("upstream target", target));
  MutexLock lock(&write_mu_);
  // From the file, not the cached LastLsn: another process may be the writer.
  uint64_t next = 0;
  ES_RETURN_IF_ERROR(NextLsn(&next));
  if (lsn >= next) {
    return Status::InvalidArgument("ack of LSN " + std::to_string(lsn) + " beyond the last LSN " +
                                   std::to_string(next - 1));
  }
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&write_db_,
                               "INSERT INTO acks VALUES(?, ?) ON CONFLICT(target) DO UPDATE SET lsn=max(lsn, excluded.lsn)"));
  s.Bind(1, std::string_view(target));
  s.Bind(2, static_cast<int64_t>(lsn));
  return s.Run();
}

Status SqliteStore::AddDeadLetters(const std::vector<DeadLetter>& letters) {
  MutexLock lock(&write_mu_);
  return dead_letter_table::Add(&write_db_, letters, options_.dead_letter_cap);
}

Status SqliteStore::ListDeadLetters(size_t max, std::vector<DeadLetter>* letters) {
  MutexLock lock(&read_mu_);
  return dead_letter_table::List(&read_db_, max, letters);
}

Status SqliteStore::Stats(StoreStats* stats) {
  *stats = StoreStats{};
  stats->last_lsn = last_lsn_.load();
  stats->rejected_full = rejected_full_.load();
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t v = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &v));
  stats->acked_lsn = static_cast<uint64_t>(v);
  ES_RETURN_IF_ERROR(read_db_.QueryInt(
      "SELECT (SELECT count(*) FROM log) + (SELECT ifnull(sum(last_lsn - first_lsn + 1), 0) FROM chunks)",
      &stats->entries));
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT (SELECT ifnull(sum(n), 0) FROM view_chunks) + "
                                       "(SELECT ifnull(sum(n), 0) FROM region_chunks)",
                                       &stats->remote_entries));
  stats->corrupt_chunks = remote_rows_.corrupt();
  ES_RETURN_IF_ERROR(ReadMetaInt(&read_db_, "dropped_oldest", &stats->dropped_oldest));
  ES_RETURN_IF_ERROR(ReadMetaInt(&read_db_, "dropped_acked", &stats->dropped_acked));
  ES_RETURN_IF_ERROR(ReadMetaInt(&read_db_, "dead_letters", &stats->dead_letters));
  int64_t high = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt(kHighLsnSql, &high));
  stats->last_lsn = std::max<uint64_t>(stats->last_lsn, static_cast<uint64_t>(high));
  struct stat st;
  if (::stat(options_.path.c_str(), &st) == 0) stats->file_bytes += st.st_size;
  if (::stat((options_.path + "-wal").c_str(), &st) == 0) stats->file_bytes += st.st_size;
  return Status::Ok();
}

// The change log's read side (store/log_reader.h), each call in one read
// transaction.

Status SqliteStore::GetDevice(const std::string& device_id, DeviceRecord* device) {
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", device_id));
  MutexLock lock(&read_mu_);
  return log_reader_.GetDevice(device_id, device);
}

Status SqliteStore::ListRanges(std::vector<RangeInfo>* ranges) {
  MutexLock lock(&read_mu_);
  return log_reader_.ListRanges(ranges);
}

Status SqliteStore::ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries) {
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);  // one snapshot across chunks and device lookups
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  return log_reader_.ReadLog(after_lsn, max_entries, entries);
}

Status SqliteStore::ReadLogLevel(uint64_t after_lsn, uint32_t level, size_t max_entries, size_t max_scan,
                                 std::vector<ChangeEntry>* entries, uint64_t* scanned_to) {
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  return log_reader_.ReadLogLevel(after_lsn, level, max_entries, max_scan, entries, scanned_to);
}

Status SqliteStore::CompleteThrough(uint64_t lsn, int64_t* through_ms) {
  *through_ms = 0;
  if (lsn > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("LSN out of range");
  // In this order: a commit group not yet announced when `writing` is read
  // takes its written_at after `now`.
  const int64_t now = clock_->WallMillis();
  const bool writing = appending_.load() > 0;
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);  // the group past lsn and the newest one, of one state
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  return log_reader_.CompleteThrough(lsn, now, writing, through_ms);
}

Status SqliteStore::ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) {
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  return log_reader_.ReadFeed(range_id, from, max_entries, page);
}

// Retention's steps (store/log_retention.h) and compaction's
// (store/chunk_compactor.h), each in transactions of its own.

Status SqliteStore::PruneStep(int64_t max_rows, PruneResult* result) {
  *result = PruneResult{};
  if (max_rows <= 0) return Status::InvalidArgument("prune step: max_rows must be positive");
  const int64_t now = clock_->WallMillis();
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    uint64_t next = 0;
    ES_RETURN_IF_ERROR(NextLsn(&next));
    ES_RETURN_IF_ERROR(retention_.Step(&write_db_, static_cast<int64_t>(next) - 1, max_rows, now, result));
    return txn.Commit();
  }();
  if (!s.ok()) {
    txn.Rollback();
    *result = PruneResult{};
    // The rows, LSNs and caches of this connection are what they were; the
    // next data_version check reloads ranges if anything else changed.
    cached_high_lsn_ = -1;
  }
  return s;
}

Status SqliteStore::Prune(PruneResult* result) {
  *result = PruneResult{};
  constexpr int64_t kStep = 20000;
  for (;;) {
    PruneResult step;
    ES_RETURN_IF_ERROR(PruneStep(kStep, &step));
    result->Add(step);
    result->space_low = result->space_low || step.space_low;
    if (!step.more) return Status::Ok();
  }
}

// Compaction's step (store/chunk_compactor.h): the run read from a
// snapshot, encoded without a lock, swapped in under the writer's.
Status SqliteStore::CompactStep(CompactResult* result) {
  *result = CompactResult{};
  if (options_.read_only) return Status::InvalidArgument("compaction: the store is open read-only");
  const chunk_compactor::Options options{options_.compact_span_readings, options_.compact_after_ms,
                                         options_.compact_only_smaller};
  chunk_compactor::Plan plan;
  {
    MutexLock lock(&read_mu_);
    Txn snapshot(&read_db_);
    ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
    ES_RETURN_IF_ERROR(chunk_compactor::FindRun(&read_db_, options, clock_->WallMillis(), &plan));
  }
  if (plan.run.empty()) return Status::Ok();
  ES_RETURN_IF_ERROR(chunk_compactor::Encode(options, &plan));
  bool swapped = false;
  {
    MutexLock lock(&write_mu_);
    Status s = chunk_compactor::Swap(&write_db_, &plan, &swapped);
    if (!s.ok()) {
      cached_high_lsn_ = -1;
      return s;
    }
  }
  if (!swapped) return Status::Ok();  // raced with retention: the next pass reads again
  if (plan.keep) {
    result->kept = 1;
    result->kept_readings = plan.result.readings;
    result->more = true;
    return Status::Ok();
  }
  *result = plan.result;
  result->spans = 1;
  result->more = true;  // the next span may be due already; a step that finds none says so
  return Status::Ok();
}

}  // namespace edgesync
