// store/lsn_fence.cc: LSNs are never given out twice, also
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
#include "store/lsn_fence.h"

#include "platform/log.h"

namespace edgesync {
namespace {

constexpr uint64_t kLsnFenceBlock = 65536;

Status SetFence(Db* db, int64_t fence) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('lsn_fence', ?)"));
  s.Bind(1, fence);
  return s.Run();
}

}  // namespace

Status LsnFence::Load(Db* db, const std::string& boot_id, uint64_t next, uint64_t* floor) {
  int64_t fence = 0;
  {
    Stmt s;
    ES_RETURN_IF_ERROR(s.Prepare(db, "SELECT value FROM meta WHERE key = 'lsn_fence'"));
    Status st;
    fence = s.Step(&st) ? s.Int(0) : 0;
    ES_RETURN_IF_ERROR(st);
  }
  std::string boot;
  ES_RETURN_IF_ERROR(db->QueryText("SELECT value FROM meta WHERE key='lsn_fence_boot'", &boot));
  reserved_ = static_cast<uint64_t>(fence);
  if (fence > 0 && boot != boot_id && static_cast<uint64_t>(fence) >= next) {
    ES_LOG(kWarn, "store {}: first open since the machine restarted, LSNs were reserved up to {} (sync = normal); "
                  "numbering goes on after them ({} to {} stay unused), in case a power cut took back commits "
                  "already read",
           path_, fence, next, fence);
    *floor = static_cast<uint64_t>(fence);
  }
  return Status::Ok();
}

Status LsnFence::Reserve(Db* db, const std::string& boot_id, uint64_t last) {
  if (!enabled_ || last <= reserved_) return Status::Ok();
  const uint64_t fence = last + kLsnFenceBlock;
  ES_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous=FULL"));
  Txn txn(db);
  Status s = txn.Begin();
  if (s.ok()) s = SetFence(db, static_cast<int64_t>(fence));
  if (s.ok()) {
    Stmt boot;
    s = boot.Prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('lsn_fence_boot', ?)");
    if (s.ok()) {
      boot.Bind(1, std::string_view(boot_id));
      s = boot.Run();
    }
  }
  if (s.ok()) s = txn.Commit();
  if (!s.ok()) txn.Rollback();
  Status back = db->Exec("PRAGMA synchronous=NORMAL");
  ES_RETURN_IF_ERROR(s);
  ES_RETURN_IF_ERROR(back);
  reserved_ = fence;
  return Status::Ok();
}

void LsnFence::Release(Db* db, uint64_t last) {
  if (!enabled_ || db->get() == nullptr || reserved_ <= last) return;
  Status s = db->Exec("PRAGMA synchronous=FULL");
  Txn txn(db);
  if (s.ok()) s = txn.Begin();
  if (s.ok()) s = SetFence(db, static_cast<int64_t>(last));
  if (s.ok()) s = txn.Commit();
  if (!s.ok()) {
    txn.Rollback();
    ES_LOG(kWarn, "store {}: LSN fence not lowered at close (the next boot skips up to {}): {}", path_, reserved_,
           s.ToString());
    return;
  }
  reserved_ = last;
}

}  // namespace edgesync
