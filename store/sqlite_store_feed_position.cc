// The read view's positions in the region hubs' feeds: (hub epoch, seq) per
// region. The seq stays the checkpoint "feed:<region>" (what status and
// older tools read); the epoch lives in meta under "feed_epoch:<region>",
// so no schema change was needed. Both move in one transaction.
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {
namespace {

Status ValidateRegion(const std::string& region) {
  if (region.empty() || region.size() > 64) return Status::InvalidArgument("feed position: region name 1..64 bytes");
  return Status::Ok();
}

}  // namespace

Status SqliteStore::GetFeedPosition(const std::string& region, FeedPosition* position) {
  ES_RETURN_IF_ERROR(ValidateRegion(region));
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  Stmt e;
  ES_RETURN_IF_ERROR(e.Prepare(&read_db_, "SELECT value FROM meta WHERE key=?"));
  std::string key = "feed_epoch:" + region;
  e.Bind(1, std::string_view(key));
  Status st;
  position->epoch = e.Step(&st) ? e.Text(0) : "";
  ES_RETURN_IF_ERROR(st);
  Stmt c;
  ES_RETURN_IF_ERROR(c.Prepare(&read_db_, "SELECT value FROM checkpoints WHERE name=?"));
  std::string name = "feed:" + region;
  c.Bind(1, std::string_view(name));
  position->seq = c.Step(&st) ? static_cast<uint64_t>(c.Int(0)) : 0;
  ES_RETURN_IF_ERROR(st);
  return snapshot.Commit();
}

Status SqliteStore::SetFeedPosition(const std::string& region, const FeedPosition& position, bool reset) {
  ES_RETURN_IF_ERROR(ValidateRegion(region));
  if (!IsEpoch(position.epoch)) return Status::InvalidArgument("feed position: epoch is not 32 lower-case hex");
  if (position.seq > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("feed position: seq too large");
  std::lock_guard<std::mutex> lock(write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  std::string key = "feed_epoch:" + region;
  std::string name = "feed:" + region;
  Stmt e;
  ES_RETURN_IF_ERROR(e.Prepare(&write_db_, "SELECT value FROM meta WHERE key=?"));
  e.Bind(1, std::string_view(key));
  Status st;
  std::string epoch = e.Step(&st) ? e.Text(0) : "";
  ES_RETURN_IF_ERROR(st);
  Stmt c;
  ES_RETURN_IF_ERROR(c.Prepare(&write_db_, "SELECT value FROM checkpoints WHERE name=?"));
  c.Bind(1, std::string_view(name));
  uint64_t seq = c.Step(&st) ? static_cast<uint64_t>(c.Int(0)) : 0;
  ES_RETURN_IF_ERROR(st);
  // A position without an epoch predates epochs: the first epoch heard
  // adopts it (the hub vouched for it by not resetting it).
  if (!reset && (epoch == position.epoch || epoch.empty()) && position.seq < seq) {
    return Status::InvalidArgument("feed position of " + region + " would move back from " + std::to_string(seq) +
                                   " to " + std::to_string(position.seq) + " within one epoch");
  }
  Stmt put_epoch;
  ES_RETURN_IF_ERROR(put_epoch.Prepare(&write_db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"));
  put_epoch.Bind(1, std::string_view(key));
  put_epoch.Bind(2, std::string_view(position.epoch));
  ES_RETURN_IF_ERROR(put_epoch.Run());
  Stmt put_seq;
  ES_RETURN_IF_ERROR(put_seq.Prepare(&write_db_, "INSERT OR REPLACE INTO checkpoints(name, value) VALUES(?, ?)"));
  put_seq.Bind(1, std::string_view(name));
  put_seq.Bind(2, static_cast<int64_t>(position.seq));
  ES_RETURN_IF_ERROR(put_seq.Run());
  return txn.Commit();
}

}  // namespace edgesync
