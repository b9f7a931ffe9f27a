// platform/systemd.h: readiness and watchdog for systemd (libsystemd).
//
// Active only when systemd started us with NOTIFY_SOCKET set (Type=notify in
// firmware-config/edgesync.service); otherwise every call is a cheap no-op,
// so the same binary runs by hand, in tests and under systemd.
//
// Thread safety: all methods may be called from any thread.
#ifndef EDGESYNC_PLATFORM_SYSTEMD_H_
#define EDGESYNC_PLATFORM_SYSTEMD_H_

#include <cstdint>
#include <string>

namespace edgesync {

class SystemdNotifier {
 public:
  SystemdNotifier();
  bool enabled() const { return enabled_; }
  // Watchdog period asked by WatchdogSec=, in ms; 0 when no watchdog.
  int64_t watchdog_interval_ms() const { return watchdog_ms_; }

  void Ready();
  void Stopping();
  void Reloading();
  void Status(const std::string& text);
  // Pets the watchdog; call at least every watchdog_interval_ms()/2.
  void WatchdogPing();

 private:
  void Send(const std::string& state);
  bool enabled_ = false;
  int64_t watchdog_ms_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_SYSTEMD_H_
