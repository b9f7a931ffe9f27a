#include "agent/ingest/intake_gate.h"

namespace edgesync {

namespace {
// How often the thread looks at stop_ while intake does not change.
constexpr int64_t kPollMs = 200;
}  // namespace

void IntakeGate::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  open_ = ingest_->intake_open();
  Apply(open_);
  thread_ = std::thread([this] { Run(); });
}

void IntakeGate::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void IntakeGate::Apply(bool open) {
  if (open) {
    link_->Resume();
  } else {
    link_->Pause();
  }
}

void IntakeGate::Run() {
  while (!stop_) {
    const bool open = ingest_->WaitIntakeChange(open_, kPollMs);
    ingest_->KeepPresenceMark();
    ingest_->CorrectClockPeriods();
    if (open != open_) {
      open_ = open;
      Apply(open);
    }
  }
}

}  // namespace edgesync
