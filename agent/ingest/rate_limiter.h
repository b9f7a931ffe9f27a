// agent/ingest/rate_limiter.h: a token bucket per deviceId, so one flooding
// device (a hot partition) cannot crowd out the others, measured on the
// device's own clock so that a backlog is not mistaken for a flood.
//
// Each bucket refills by how far its clock has moved. The caller gives, for
// each message, the time the device says its readings were taken when that
// can be trusted (docs/INGEST.md "Hot partitions"), else the arrival time.
// The bucket clock is the latest such time seen, bounded to
// [now - max_lag_ms, now + kMaxAheadMs]: readings the broker (or the device)
// kept while the gateway was away carry times spread over the outage, so
// they refill the bucket as they did when they were taken, however fast the
// broker now delivers them; a device flooding in its own time is refused as
// before. The bounds cap what a device with a wrong or lying clock can win:
// its clock never passes now + kMaxAheadMs and never moves back, so over any
// span of arrival time D it gets at most rate x (D + max_lag + ahead) + burst
// readings, the same as a real backlog of max_lag.
//
// A bucket also refills by its arrival time, whichever moved further: a
// device whose clock stands still (a stuck RTC, a timestamp printed with too
// few digits) still gets its rate in real time instead of being refused
// forever once its burst is spent. This at most doubles the bound above.
//
// Absences: readings without their own time (bare numbers) carry only our
// arrival time, so a backlog of them looks like a flood. The gateway tells
// the limiter when it stopped taking messages (Away) and when it took them
// again from a session the broker kept (Back), on its monotonic clock
// (platform/clock.h: one clock for every process of a boot, blind to
// wall-clock steps). Each bucket is then credited, on top of its burst,
// with rate x the absence time it has not been credited yet (an absence at
// most max_away_ms long: the broker keeps nothing for an older session),
// and that time no longer refills it on arrival; so a device within its
// rate while we were away has its queue taken whole. The credit is spent
// before the bucket's tokens and lasts while an absence is recent: until
// max(its length, kMinCreditWindowMs) after Back (the broker replays a
// queue faster than it was filled while ingest takes at least twice what
// the sensors send), then it is dropped. A bucket thus gives at most
// rate x (the time since it was made, time away included) + burst
// readings; a runaway loses what exceeds that. An absence the broker kept
// nothing for (Back(queued = false)) credits nothing from then on.
//
// Memory is bounded: at most max_devices buckets are kept. When full, a
// bucket that has refilled completely (an idle device, indistinguishable
// from a new one) is evicted first, else the least recently seen; an
// evicted device's refused readings move into evicted_rejections.
//
// Refusals are reported (for the log) once per device per report interval:
// Allow sets *report to the readings refused since the last report when one
// is due.
//
// Thread safety: not thread-safe; the ingest owns one and serialises calls.
#ifndef EDGESYNC_AGENT_INGEST_RATE_LIMITER_H_
#define EDGESYNC_AGENT_INGEST_RATE_LIMITER_H_

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "firmware-config/ingest_defaults.h"

namespace edgesync {

class RateLimiter {
 public:
  // How far ahead of the gateway's wall clock a device's time still counts
  // (clock drift between an RTC-less sensor and NTP); later times count as
  // now.
  static constexpr int64_t kMaxAheadMs = 60000;

  // How long after Back an absence's credit lasts, at least.
  static constexpr int64_t kMinCreditWindowMs = 60000;
  // At most this many absences are remembered (the oldest is forgotten).
  static constexpr size_t kMaxAbsences = 16;
  // mono_ms arguments: "no monotonic time given" (no absence credit).
  static constexpr int64_t kNoMono = INT64_MIN;

  RateLimiter(double rate_per_s, double burst, size_t max_devices = 10000, int64_t max_lag_ms = 0,
              int64_t report_interval_ms = 10000, int64_t max_away_ms = ingest_options::kMaxAwayS * 1000);

  // The gateway takes no messages from mono_ms on (a no-op while away).
  void Away(int64_t mono_ms);
  // The gateway takes messages again at mono_ms; queued: the broker kept
  // our session (session present), else the absence is void.
  void Back(int64_t mono_ms, bool queued);
  // How long the current absence has lasted at mono_ms (0 when not away).
  int64_t away_ms(int64_t mono_ms) const;

  // Takes n tokens from the device's bucket. device_ms: the device's own
  // time of the readings (the latest of them) or the arrival time; now_ms:
  // the gateway's wall clock. False (and counted) when the bucket holds
  // fewer than n (absence credit included); then *report (if given) is the
  // number of readings refused since the device's last report when a report
  // is due, else 0. mono_ms: the gateway's monotonic time, for the absence
  // credit (kNoMono: none).
  bool Allow(const std::string& device_id, int64_t device_ms, int64_t now_ms, double n = 1,
             int64_t* report = nullptr, int64_t mono_ms = kNoMono);
  size_t tracked() const { return buckets_.size(); }
  int64_t evicted_rejections() const { return evicted_rejections_; }
  // The devices with the most refused readings, most first.
  std::vector<std::pair<std::string, int64_t>> TopRejected(size_t n) const;

 private:
  struct Bucket {
    double tokens;
    int64_t clock_ms;    // the device's time, bounded as above
    int64_t arrival_ms;  // our wall clock at its latest message
    int64_t rejected = 0;            // readings, since the bucket was made
    int64_t unreported = 0;          // readings refused since the last report
    int64_t reported_ms = INT64_MIN; // wall time of the last report
    std::list<std::string>::iterator lru;
    double credit = 0;                   // tokens from absences, above the burst
    int64_t credited_to_ms = INT64_MIN;  // monotonic: absence time up to here is credited
  };
  struct Absence {
    int64_t from_ms;
    int64_t to_ms;  // kOngoing while away
  };
  static constexpr int64_t kOngoing = INT64_MAX;
  // credited_ms: time away credited by this call (not refilled again).
  void Refill(Bucket* b, int64_t clock_ms, int64_t arrival_ms, int64_t credited_ms) const;
  // Adds the absence time since the bucket's last credit (returned, ms);
  // drops the credit once no absence is recent.
  int64_t Credit(Bucket* b, int64_t mono_ms);
  void ForgetOldAbsences(int64_t mono_ms);
  void EvictOne(int64_t now_ms);

  double rate_;
  double burst_;
  size_t max_devices_;
  int64_t max_lag_ms_;
  int64_t report_interval_ms_;
  int64_t max_away_ms_;
  std::vector<Absence> absences_;  // oldest first, at most kMaxAbsences
  std::unordered_map<std::string, Bucket> buckets_;
  std::list<std::string> lru_;  // most recently seen at the front
  int64_t evicted_rejections_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_RATE_LIMITER_H_
