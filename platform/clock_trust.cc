#include "platform/clock_trust.h"

#include <sys/stat.h>
#include <sys/timex.h>

#include <fstream>
#include <string>

namespace edgesync {

const char* ClockSyncName(ClockSync sync) {
  switch (sync) {
    case ClockSync::kSynchronized:
      return "synchronized";
    case ClockSync::kUnsynchronized:
      return "unsynchronized";
    case ClockSync::kUnknown:
      return "unknown";
  }
  return "unknown";
}

ClockSync ClockSyncFromTimex(int result, int status) {
  if (result == -1) return ClockSync::kUnknown;
  if (result == TIME_ERROR || (status & STA_UNSYNC) != 0) return ClockSync::kUnsynchronized;
  return ClockSync::kSynchronized;
}

ClockSync KernelClockSync() {
  struct timex tx = {};  // modes 0: read only
  int result = adjtimex(&tx);
  return ClockSyncFromTimex(result, tx.status);
}

Status ParseClockTrustSource(const std::string& text, ClockTrustOptions* options) {
  if (text == "kernel") {
    options->source = ClockTrustOptions::Source::kKernel;
  } else if (text == "floor") {
    options->source = ClockTrustOptions::Source::kFloor;
  } else if (text.rfind("file:", 0) == 0 && text.size() > 6 && text[5] == '/') {
    options->source = ClockTrustOptions::Source::kFile;
    options->file = text.substr(5);
  } else {
    return Status::InvalidArgument("clock trust source must be \"kernel\", \"floor\" or \"file:/absolute/path\", got \"" +
                                   text + "\"");
  }
  return Status::Ok();
}

ClockTrust::ClockTrust(ClockTrustOptions options, Clock* clock, std::function<ClockSync()> sync_probe)
    : options_(std::move(options)), clock_(clock ? clock : SystemClock()), probe_(std::move(sync_probe)) {
  if (options_.source == ClockTrustOptions::Source::kFloor) {
    synced_ = true;
    return;
  }
  // Trusted earlier in this boot by another run of the process.
  if (!options_.marker_path.empty()) {
    std::ifstream in(options_.marker_path);
    std::string boot;
    const std::string now_boot = clock_->BootId();
    if (in && std::getline(in, boot) && !now_boot.empty() && boot == now_boot) {
      synced_ = true;
      last_ = ClockSync::kSynchronized;
      trusted_since_ms_ = clock_->WallMillis();
    }
  }
}

bool ClockTrust::AskSource() {
  if (options_.source == ClockTrustOptions::Source::kFile) {
    struct stat st;
    last_ = ::stat(options_.file.c_str(), &st) == 0 ? ClockSync::kSynchronized : ClockSync::kUnsynchronized;
  } else {
    last_ = probe_ ? probe_() : ClockSync::kUnknown;
  }
  return last_ == ClockSync::kSynchronized;
}

bool ClockTrust::Trusted() {
  const int64_t wall = clock_->WallMillis();
  if (wall < options_.epoch_floor_ms) return false;
  if (synced_.load(std::memory_order_acquire)) return true;
  MutexLock lock(&mu_);
  if (synced_.load(std::memory_order_relaxed)) return true;
  const int64_t mono = clock_->MonotonicMillis();
  if (mono < next_ask_ms_) return false;
  next_ask_ms_ = mono + 1000;
  if (!AskSource()) return false;
  trusted_since_ms_ = wall;
  if (!options_.marker_path.empty()) {
    const std::string boot = clock_->BootId();
    if (!boot.empty()) {
      // Best effort: without it a restart in this boot asks the source again.
      std::ofstream out(options_.marker_path, std::ios::trunc);
      out << boot << "\n";
    }
  }
  synced_.store(true, std::memory_order_release);
  return true;
}

ClockTrust::State ClockTrust::Snapshot() const {
  State s;
  s.source = options_.source == ClockTrustOptions::Source::kKernel ? "kernel"
             : options_.source == ClockTrustOptions::Source::kFile ? "file"
                                                                   : "floor";
  MutexLock lock(&mu_);
  s.last = last_;
  s.trusted = synced_.load() && clock_->WallMillis() >= options_.epoch_floor_ms;
  s.trusted_since_ms = s.trusted ? trusted_since_ms_ : 0;
  return s;
}

}  // namespace edgesync
