// platform/signals.h: process signals as flags, never as work in a handler.
//
// SIGTERM and SIGINT request a graceful stop (finish the batch in hand,
// close the store, exit 0); SIGHUP only sets a reload flag that the main loop
// picks up, as mosquitto does. SIGPIPE is ignored so a dropped socket is an
// error value, not a death. The handlers also write a byte to a self-pipe so
// a loop blocked in WaitForSignal wakes at once.
//
// Thread safety: Install once from main before starting threads; the query
// functions may be called from any thread.
#ifndef EDGESYNC_PLATFORM_SIGNALS_H_
#define EDGESYNC_PLATFORM_SIGNALS_H_

#include <cstdint>

namespace edgesync {

class Signals {
 public:
  static void Install();
  static bool StopRequested();
  // True once per SIGHUP received since the last call.
  static bool TakeReload();
  // Sleeps until a signal arrives or timeout_ms passes; true if woken by one.
  static bool WaitForSignal(int64_t timeout_ms);
  // Lets code and tests ask for a stop as if SIGTERM had arrived.
  static void RequestStop();
  // Clears the flags (tests that install several times in one process).
  static void ResetForTest();
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_SIGNALS_H_
