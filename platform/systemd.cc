#include "platform/systemd.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>

namespace edgesync {

SystemdNotifier::SystemdNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && socket[0] != '\0';
  uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0) watchdog_ms_ = static_cast<int64_t>(usec / 1000);
}

void SystemdNotifier::Send(const std::string& state) {
  if (enabled_) sd_notify(0, state.c_str());
}

void SystemdNotifier::Ready() { Send("READY=1"); }
void SystemdNotifier::Stopping() { Send("STOPPING=1"); }
void SystemdNotifier::Reloading() { Send("RELOADING=1"); }
void SystemdNotifier::Status(const std::string& text) { Send("STATUS=" + text); }
void SystemdNotifier::WatchdogPing() {
  if (watchdog_ms_ > 0) Send("WATCHDOG=1");
}

}  // namespace edgesync
