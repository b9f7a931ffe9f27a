// `edgesync feed --lease OWNER`: several consumers (processes) share the
// change feed of one gateway's store, one owner per partition key range,
// through the store's leases: the change-feed-processor model.
//
// Each round (every lease_expiry_ms / 3) an owner:
//  - counts the live owners: those whose leases moved (renewed) within the
//    expiry, observed on its own monotonic clock (a wall-clock step changes
//    nothing), plus itself;
//  - with N active ranges and K live owners, holds between floor(N/K) and
//    ceil(N/K): acquires free or expired leases up to ceil(N/K); below
//    floor(N/K) takes one from the owner holding the most, if that owner
//    holds more than floor(N/K) (how a newcomer gets work); above ceil(N/K)
//    releases one;
//  - renews what it holds.
// Between rounds it reads each held range from the lease's continuation and
// checkpoints the new continuation after printing the page (JSON lines with
// "range" added). A lost compare-and-set (Conflict) means the range moved to
// another owner: it is dropped. Delivery is at least once and in LSN order
// per range: a killed owner's range resumes from its last checkpoint, so
// what it printed after that checkpoint is printed again by the next owner.
// A range that split is not leased; its children start from its checkpoint
// (Store::AcquireLease). SIGTERM/SIGINT release every lease at once.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <nlohmann/json.hpp>
#include <vector>

#include "agent/roles.h"
#include "platform/clock.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "store/store.h"

namespace edgesync {

namespace {

class LeasedFeed {
 public:
  LeasedFeed(RangeLeases* store, const Config& config, const FeedOptions& options)
      : store_(store), owner_(options.lease_owner), options_(options),
        expiry_ms_(config.store_lease_expiry_ms) {}

  Status Run() {
    int64_t next_round = 0;
    while (!Signals::StopRequested()) {
      int64_t now = SystemClock()->MonotonicMillis();
      if (now >= next_round) {
        ES_RETURN_IF_ERROR(Balance(now));
        next_round = now + std::max<int64_t>(expiry_ms_ / 3, 50);
      }
      bool full = false;
      for (auto it = held_.begin(); it != held_.end();) {
        bool page_full = false;
        Status s = ReadOne(&it->second, &page_full);
        if (s.code() == Status::Code::kConflict || s.code() == Status::Code::kNotFound) {
          ES_LOG(kInfo, "feed {}: range {} no longer ours: {}", owner_, it->first, s.ToString());
          it = held_.erase(it);
          continue;
        }
        ES_RETURN_IF_ERROR(s);
        full = full || page_full;
        ++it;
      }
      if (!full) Signals::WaitForSignal(options_.poll_ms);
    }
    for (auto& [range, lease] : held_) store_->ReleaseLease(lease);
    return Status::Ok();
  }

 private:
  Status ReadOne(Lease* lease, bool* full) {
    FeedStart start;
    if (lease->continuation.empty()) {
      start.kind = FeedStart::Kind::kBeginning;
    } else {
      start.kind = FeedStart::Kind::kToken;
      start.token = lease->continuation;
    }
    FeedPage page;
    ES_RETURN_IF_ERROR(store_->ReadFeed(lease->range_id, start, static_cast<size_t>(options_.max_entries), &page));
    *full = page.entries.size() >= static_cast<size_t>(options_.max_entries);
    if (page.entries.empty()) return Status::Ok();
    for (const ChangeEntry& e : page.entries) {
      nlohmann::json j = FeedEntryJson(e);
      j["range"] = lease->range_id;
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    std::fflush(stdout);
    Lease next;
    ES_RETURN_IF_ERROR(store_->CheckpointLease(*lease, page.continuation, &next));
    *lease = next;
    return Status::Ok();
  }

  Status Balance(int64_t now) {
    std::vector<RangeInfo> ranges;
    ES_RETURN_IF_ERROR(store_->ListRanges(&ranges));
    std::vector<Lease> leases;
    ES_RETURN_IF_ERROR(store_->ListLeases(&leases));
    std::map<uint32_t, Lease> by_range;
    for (const Lease& l : leases) {
      by_range[l.range_id] = l;
      auto& seen = seen_[l.range_id];
      if (seen.version != l.version) seen = {l.version, now};
    }
    auto live = [&](const Lease& l) {
      return !l.owner.empty() && (l.owner == owner_ || now - seen_[l.range_id].since_ms < expiry_ms_);
    };
    std::set<std::string> owners = {owner_};
    std::map<std::string, std::vector<Lease>> owned;
    std::vector<uint32_t> active;
    for (const RangeInfo& r : ranges) {
      if (!r.active) {
        held_.erase(r.id);  // split: its children carry on from its checkpoint
        continue;
      }
      active.push_back(r.id);
      auto it = by_range.find(r.id);
      if (it != by_range.end() && live(it->second)) {
        owners.insert(it->second.owner);
        owned[it->second.owner].push_back(it->second);
      }
    }
    size_t low = active.size() / owners.size();
    size_t high = (active.size() + owners.size() - 1) / owners.size();
    // Renew what is held (a checkpoint also renews; idle ranges need this).
    for (auto it = held_.begin(); it != held_.end();) {
      Lease next;
      Status s = store_->RenewLease(it->second, &next);
      if (s.ok()) {
        it->second = next;
        ++it;
      } else {
        ES_LOG(kInfo, "feed {}: lost range {}: {}", owner_, it->first, s.ToString());
        it = held_.erase(it);
      }
    }
    // Free and expired ranges first.
    for (uint32_t id : active) {
      if (held_.size() >= high) break;
      if (held_.count(id)) continue;
      auto it = by_range.find(id);
      if (it != by_range.end() && live(it->second)) continue;
      Lease l;
      if (store_->AcquireLease(id, owner_, &l).ok()) {
        ES_LOG(kInfo, "feed {}: acquired range {}", owner_, id);
        held_[id] = l;
      }
    }
    // Still below the share: take one from the busiest owner above it.
    if (held_.size() < low) {
      const std::vector<Lease>* busiest = nullptr;
      for (const auto& [name, list] : owned) {
        if (name != owner_ && list.size() > low && (!busiest || list.size() > busiest->size())) busiest = &list;
      }
      if (busiest != nullptr) {
        Lease l;
        if (store_->TakeLease(busiest->back(), owner_, &l).ok()) {
          ES_LOG(kInfo, "feed {}: took range {} from {} (rebalancing)", owner_, l.range_id, busiest->back().owner);
          held_[l.range_id] = l;
        }
      }
    }
    // Above the share (an owner joined): give one back per round.
    if (held_.size() > high) {
      auto last = std::prev(held_.end());
      store_->ReleaseLease(last->second);
      ES_LOG(kInfo, "feed {}: released range {} (rebalancing)", owner_, last->first);
      held_.erase(last);
    }
    return Status::Ok();
  }

  struct Seen {
    int64_t version = -1;
    int64_t since_ms = 0;  // monotonic: when this version was first seen
  };
  RangeLeases* store_;
  std::string owner_;
  FeedOptions options_;
  int64_t expiry_ms_;
  std::map<uint32_t, Lease> held_;
  std::map<uint32_t, Seen> seen_;
};

}  // namespace

int RunLeasedFeed(const Config& config, const FeedOptions& options) {
  if (options.max_entries < 1) {
    std::fprintf(stderr, "edgesync feed: --max must be at least 1\n");
    return 1;
  }
  std::unique_ptr<Store> store;
  Status st = OpenStoreForLeases(config, &store);
  if (st.ok()) {
    Signals::Install();
    LeasedFeed feed(store.get(), config, options);
    st = feed.Run();
  }
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync feed: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace edgesync
