#include "agent/store_figures.h"

#include <algorithm>
#include <cstdio>

#include "platform/files.h"
#include "store/checkpoint_names.h"

namespace edgesync {

StoreStats StoreCounts::Get(StoreGauges* store, int64_t now_ms, uint64_t remote_applied) {
  if (counted_at_ms_ < 0 || now_ms - counted_at_ms_ >= kCountEveryMs) {
    StoreStats fresh;
    if (store->Stats(&fresh).ok()) {
      counted_ = fresh;
      counted_at_ms_ = now_ms;
      remote_applied_at_count_ = remote_applied;
    }
  }
  StoreStats s = counted_;
  s.remote_entries += static_cast<int64_t>(remote_applied - std::min(remote_applied, remote_applied_at_count_));
  uint64_t head = store->LastLsn();
  if (head > s.last_lsn) {
    s.entries += static_cast<int64_t>(head - s.last_lsn);
    s.last_lsn = head;
  }
  return s;
}

namespace {

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

nlohmann::json StoreFigures(StoreGauges* store, const StoreStats& s, const std::string& data_dir,
                            const std::vector<std::string>& regions, int64_t now_wall_ms) {
  using json = nlohmann::json;
  json j;
  Result<uint64_t> free_bytes = FreeBytes(data_dir);
  json ranges = json::array();
  std::vector<RangeInfo> list;
  if (store->ListRanges(&list).ok()) {
    for (const RangeInfo& r : list) {
      if (!r.active) continue;  // split parents hold nothing new
      ranges.push_back({{"id", r.id}, {"min", Hex(r.min)}, {"max", Hex(r.max)}});
    }
  }
  j["store"] = {{"origin", store->origin().ToString()},
                {"file_bytes", s.file_bytes},
                {"free_bytes", free_bytes.ok() ? static_cast<int64_t>(*free_bytes) : -1},
                {"entries", s.entries},
                {"remote_entries", s.remote_entries},
                {"last_lsn", s.last_lsn},
                {"acked_lsn", s.acked_lsn},
                {"dead_letters", s.dead_letters},
                {"rejected_full", s.rejected_full},
                {"dropped_oldest", s.dropped_oldest},
                {"dropped_acked", s.dropped_acked},
                {"corrupt_chunks", s.corrupt_chunks},
                {"ranges", ranges}};
  uint64_t checkpoint = 0;
  store->GetCheckpoint(checkpoint::kUpstream, &checkpoint);
  json per_region = json::object();
  json feed = json::object();
  for (const std::string& r : regions) {
    uint64_t v = 0;
    store->GetCheckpoint(checkpoint::UpstreamOf(r), &v);
    per_region[r] = v;
    v = 0;
    store->GetCheckpoint(checkpoint::FeedOf(r), &v);
    feed[r] = v;
  }
  j["upstream"] = {{"checkpoint", checkpoint}, {"regions", per_region}, {"feed_positions", feed}};
  uint64_t readings = s.last_lsn > checkpoint ? s.last_lsn - checkpoint : 0;
  BacklogInfo b;
  double age_s = 0;
  if (store->Backlog(checkpoint, &b).ok() && b.oldest_written_ms > 0 && readings > 0) {
    age_s = std::max<double>(0, static_cast<double>(now_wall_ms - b.oldest_written_ms) / 1000.0);
  }
  j["backlog"] = {{"readings", readings},
                  {"bytes", static_cast<int64_t>(static_cast<double>(readings) * b.avg_entry_bytes)},
                  {"oldest_age_s", age_s}};
  return j;
}

}  // namespace edgesync
