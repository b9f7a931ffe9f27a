#include "sync/region_selector.h"

#include <algorithm>
#include <cstdlib>

namespace edgesync {
namespace {

// Round trips closer than this are noise (jitter, a busy broker or board):
// max(5 ms, 25 % of the larger one).
int64_t MarginUs(int64_t a, int64_t b) { return std::max<int64_t>(5000, std::max(a, b) / 4); }

// The distance is the minimum of this many probes: 64 at the default 5 s
// probe interval is about five minutes. 8 (1.6 s at a 200 ms interval) let a
// write region busy with a long drain (every probe queued behind batches on
// a loaded board) look farther than an idle, equally near one, and writes
// flapped between them; a path that really got longer is noticed within the
// window, and a reconnect measures afresh.
constexpr size_t kSamples = 64;
// Round trips a region answering for the first time after the start choice
// needs before it is weighed: its first answer alone is a poor measure (a
// hub that just started, a loaded board), and once weighed a region that
// looked farther waits out failback_after_ms (seen: a near region's first
// probe under ThreadSanitizer came back slower than the far region's, and
// writes stayed on the far one for the 60 s of failback_after).
constexpr size_t kWeighSamples = 3;

}  // namespace

RegionSelector::RegionSelector(std::vector<Region> regions, int64_t health_timeout_ms, int64_t failback_after_ms,
                               int64_t startup_grace_ms)
    : regions_(std::move(regions)),
      state_(regions_.size()),
      health_timeout_ms_(health_timeout_ms),
      failback_after_ms_(failback_after_ms),
      startup_grace_ms_(startup_grace_ms) {
  for (size_t i = 1; i < regions_.size(); ++i) {
    if (regions_[i].preference < regions_[preferred_].preference) preferred_ = i;
  }
}

void RegionSelector::OnConnected(size_t region, bool connected, int64_t now_ms) {
  (void)now_ms;
  State& s = state_[region];
  s.connected = connected;
  if (!connected) {
    // A fresh probe answer is needed after a reconnect.
    s.last_answer_ms = -1;
    s.healthy_since_ms = -1;
    // The path may differ after a reconnect: measure afresh.
    s.samples.clear();
    s.next_sample = 0;
  }
}

void RegionSelector::OnProbeAnswered(size_t region, int64_t rtt_us, int64_t now_ms) {
  State& s = state_[region];
  if (!s.connected) return;
  if (s.samples.size() < kSamples) {
    s.samples.push_back(rtt_us);
  } else {
    s.samples[s.next_sample] = rtt_us;
  }
  s.next_sample = (s.next_sample + 1) % kSamples;
  s.rtt_us = *std::min_element(s.samples.begin(), s.samples.end());
  s.last_answer_ms = now_ms;
  if (s.healthy_since_ms < 0) s.healthy_since_ms = now_ms;
}

void RegionSelector::OnBatchAnswered(size_t region, int64_t now_ms) {
  State& s = state_[region];
  if (!s.connected || s.last_answer_ms < 0) return;  // measured by a probe first
  s.last_answer_ms = std::max(s.last_answer_ms, now_ms);
}

bool RegionSelector::Healthy(size_t region, int64_t now_ms) const {
  const State& s = state_[region];
  return s.connected && s.last_answer_ms >= 0 && now_ms - s.last_answer_ms <= health_timeout_ms_;
}

void RegionSelector::Refresh(int64_t now_ms) {
  for (size_t i = 0; i < state_.size(); ++i) {
    if (!Healthy(i, now_ms)) state_[i].healthy_since_ms = -1;
  }
}

bool RegionSelector::Nearer(size_t a, size_t b) const {
  int64_t ra = state_[a].rtt_us, rb = state_[b].rtt_us;
  if (std::llabs(ra - rb) > MarginUs(ra, rb)) return ra < rb;
  return regions_[a].preference < regions_[b].preference;
}

size_t RegionSelector::NearestOf(const std::vector<size_t>& candidates) const {
  size_t best = candidates[0];
  for (size_t i : candidates) {
    if (Nearer(i, best)) best = i;
  }
  return best;
}

int RegionSelector::Select(int64_t now_ms, bool* changed) {
  Refresh(now_ms);
  if (first_select_ms_ < 0) first_select_ms_ = now_ms;
  int before = current_;
  std::vector<size_t> healthy;
  for (size_t i = 0; i < state_.size(); ++i) {
    if (Healthy(i, now_ms)) healthy.push_back(i);
  }
  if (!settled_) {
    // Start: the nearest once every region answered or the grace passed (a
    // region that answers a little later is not overlooked); until then the
    // most preferred region if it answers, so writes start where the
    // config puts them first rather than wherever answered first.
    if (!healthy.empty() && (healthy.size() == state_.size() || now_ms - first_select_ms_ >= startup_grace_ms_)) {
      current_ = static_cast<int>(NearestOf(healthy));
      settled_ = true;
      for (size_t i : healthy) state_[i].weighed = true;
    } else {
      current_ = Healthy(preferred_, now_ms) ? static_cast<int>(preferred_) : -1;
    }
  } else if (current_ >= 0 && !Healthy(static_cast<size_t>(current_), now_ms)) {
    // Failover: preference order among the healthy ones.
    current_ = -1;
    for (size_t i : healthy) {
      if (current_ < 0 || regions_[i].preference < regions_[static_cast<size_t>(current_)].preference ||
          (regions_[i].preference == regions_[static_cast<size_t>(current_)].preference &&
           state_[i].rtt_us < state_[static_cast<size_t>(current_)].rtt_us)) {
        current_ = static_cast<int>(i);
      }
    }
  } else if (current_ < 0) {
    if (!healthy.empty()) current_ = static_cast<int>(NearestOf(healthy));
  } else {
    size_t cur = static_cast<size_t>(current_);
    // A region answering for the first time since start (it was down or
    // slow when the start choice was made) was never weighed: if nearer, it
    // takes the writes at once. failback_after guards against regions seen
    // to fail, not against one never measured.
    int fresh = -1;
    for (size_t i : healthy) {
      if (state_[i].weighed || state_[i].samples.size() < kWeighSamples) continue;
      state_[i].weighed = true;
      if (Nearer(i, cur) && (fresh < 0 || Nearer(i, static_cast<size_t>(fresh)))) fresh = static_cast<int>(i);
    }
    if (fresh >= 0) {
      current_ = fresh;
    } else {
      // Move to a nearer region once it has been healthy and nearer,
      // without a break, for failback_after.
      int best = -1;
      for (size_t i = 0; i < state_.size(); ++i) {
        State& s = state_[i];
        if (i == cur || !Healthy(i, now_ms) || !Nearer(i, cur)) {
          s.nearer_since_ms = -1;
          continue;
        }
        if (s.nearer_since_ms < 0) s.nearer_since_ms = now_ms;
        if (now_ms - s.nearer_since_ms >= failback_after_ms_ && now_ms - s.healthy_since_ms >= failback_after_ms_ &&
            (best < 0 || Nearer(i, static_cast<size_t>(best)))) {
          best = static_cast<int>(i);
        }
      }
      if (best >= 0) current_ = best;
    }
  }
  if (settled_) {
    // Regions healthy under a settled choice have been weighed by it, once
    // measured enough to be.
    for (size_t i : healthy) {
      if (state_[i].samples.size() >= kWeighSamples) state_[i].weighed = true;
    }
  }
  if (current_ != before) {
    for (State& s : state_) s.nearer_since_ms = -1;
  }
  *changed = current_ != before;
  if (*changed && current_ >= 0) ++switches_;
  return current_;
}

}  // namespace edgesync
