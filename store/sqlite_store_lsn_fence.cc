// store/sqlite_store_lsn_fence.cc: LSNs are never given out twice, also
// across a power cut with sync = normal.
//
// With synchronous=NORMAL a commit is a write into the WAL, synced only at a
// checkpoint: a power cut takes back the commits since, yet their LSNs may
// already be upstream (the uplink reads committed entries) or in a feed
// consumer's continuation. Numbering on from the highest LSN left in the
// file would give those LSNs to other readings, which the region would then
// ignore as already held. So LSNs are given out only up to a fence recorded
// durably in meta ('lsn_fence', written in a commit synced with
// synchronous=FULL), kLsnFenceBlock at a time, together with the boot id of
// the machine that recorded it ('lsn_fence_boot'):
// - a store opened in the same boot (edgesync was killed or restarted, the
//   kernel kept every commit) numbers on from its highest LSN: no gap;
// - one opened in another boot numbers on after the fence: whatever a power
//   cut took back, no LSN it could have shown is used again. The LSNs in
//   between are never used (a gap, which the hub passes over as it passes
//   over pruned ones: sync/PROTOCOL.md);
// - a clean close lowers the fence to the last LSN (synced), so a reboot
//   after a clean stop leaves no gap either.
// With sync = full every commit is synced before a reader can see it, so no
// fence is written; one left by an earlier normal run is still honoured.
// Found and checked by tests/integration/power_cut_test.cc.
//
// Cost: one synced commit of one meta row per kLsnFenceBlock LSNs (at the
// reference 8,000 readings/s, one every ~8 s, fewer than the WAL
// checkpoints' own syncs).
#include "store/sqlite_store.h"

#include "platform/log.h"

namespace edgesync {
namespace {

constexpr uint64_t kLsnFenceBlock = 65536;

}  // namespace

Status SqliteStore::LoadLsnFence() {
  int64_t fence = 0;
  ES_RETURN_IF_ERROR(GetMetaInt(&write_db_, "lsn_fence", &fence));
  std::string boot;
  ES_RETURN_IF_ERROR(write_db_.QueryText("SELECT value FROM meta WHERE key='lsn_fence_boot'", &boot));
  lsn_reserved_ = static_cast<uint64_t>(fence);
  uint64_t next = 0;
  ES_RETURN_IF_ERROR(NextLsn(&next));
  if (fence > 0 && boot != clock_->BootId() && static_cast<uint64_t>(fence) >= next) {
    ES_LOG(kWarn, "store {}: first open since the machine restarted, LSNs were reserved up to {} (sync = normal); "
                  "numbering goes on after them ({} to {} stay unused), in case a power cut took back commits "
                  "already read",
           options_.path, fence, next, fence);
    lsn_floor_ = static_cast<uint64_t>(fence);
    cached_high_lsn_ = -1;
    next = lsn_floor_ + 1;
  }
  last_lsn_ = next - 1;
  return Status::Ok();
}

Status SqliteStore::ReserveLsns(uint64_t last) {
  if (options_.sync != StoreOptions::Sync::kNormal || options_.read_only || last <= lsn_reserved_) {
    return Status::Ok();
  }
  const uint64_t fence = last + kLsnFenceBlock;
  ES_RETURN_IF_ERROR(write_db_.Exec("PRAGMA synchronous=FULL"));
  Txn txn(&write_db_);
  Status s = txn.Begin();
  if (s.ok()) s = SetMetaInt("lsn_fence", static_cast<int64_t>(fence));
  if (s.ok()) {
    Stmt boot;
    s = boot.Prepare(&write_db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('lsn_fence_boot', ?)");
    const std::string id = clock_->BootId();
    if (s.ok()) {
      boot.Bind(1, std::string_view(id));
      s = boot.Run();
    }
  }
  if (s.ok()) s = txn.Commit();
  if (!s.ok()) txn.Rollback();
  Status back = write_db_.Exec("PRAGMA synchronous=NORMAL");
  ES_RETURN_IF_ERROR(s);
  ES_RETURN_IF_ERROR(back);
  lsn_reserved_ = fence;
  return Status::Ok();
}

void SqliteStore::ReleaseLsnFence() {
  const uint64_t last = last_lsn_.load();
  if (options_.sync != StoreOptions::Sync::kNormal || options_.read_only || write_db_.get() == nullptr ||
      lsn_reserved_ <= last) {
    return;
  }
  Status s = write_db_.Exec("PRAGMA synchronous=FULL");
  Txn txn(&write_db_);
  if (s.ok()) s = txn.Begin();
  if (s.ok()) s = SetMetaInt("lsn_fence", static_cast<int64_t>(last));
  if (s.ok()) s = txn.Commit();
  if (!s.ok()) {
    txn.Rollback();
    ES_LOG(kWarn, "store {}: LSN fence not lowered at close (the next boot skips up to {}): {}", options_.path,
           lsn_reserved_, s.ToString());
    return;
  }
  lsn_reserved_ = last;
}

}  // namespace edgesync
