// tests/sanitizers/callback_race.cc: proves that tsan.supp does not hide a
// race in our own code when that code runs on one of Paho's threads.
//
// Contract: built and run only in the ThreadSanitizer tree (ctest
// sanitizers.tsan_callback_race). A real Mosquitto broker, a real Paho link
// (NewPahoMqttLink); the message handler (on Paho's receive thread, below
// mqtt::async_client::on_message_arrived in libpaho-mqttpp3) and the main
// thread both write one plain int with nothing ordering them. The test
// passes only if ThreadSanitizer reports that race; it fails if a
// suppression (a `race:` entry naming a Paho library, which matches every
// stack with a Paho frame anywhere below it) swallows it. The program starts
// the broker and runs the client as a child (itself with --race), which
// exits non-zero at the report (halt_on_error, tests/sanitizers/options.cc),
// so the test matches the report text rather than the exit code.
//
// Thread safety: the race is the point; everything else is single-threaded.

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "sync/mqtt_link.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"

namespace {

int unguarded = 0;  // written by two threads without a lock, on purpose

__attribute__((noinline)) void TouchFromHandler() { unguarded = unguarded + 1; }
__attribute__((noinline)) void TouchFromMain() { unguarded = unguarded + 1; }

// The racing client, in a process of its own: ThreadSanitizer ends it at the
// report, before any destructor could stop a broker it owned.
int RaceOn(const std::string& uri) {
  using namespace edgesync;
  MqttLinkOptions options;
  options.uri = uri;
  options.client_id = "tsan-guard";
  std::unique_ptr<MqttLink> link;
  Status st = NewPahoMqttLink(options, &link);
  if (!st.ok()) {
    std::fprintf(stderr, "link: %s\n", st.ToString().c_str());
    return 2;
  }
  link->SetMessageHandler([](MqttMessage&&) { TouchFromHandler(); });
  link->Subscribe("guard/race", 0);
  if (!link->Connect(60000).ok()) {
    std::fprintf(stderr, "link did not connect\n");
    return 2;
  }
  // The broker delivers our own publishes back to us. Their sends order
  // the handler's writes after the main thread's earlier ones, but nothing
  // orders the writes below against the handler's: a race whatever the
  // timing, which ThreadSanitizer reports once both have run.
  for (int i = 0; i < 20; ++i) link->Publish("guard/race", "x", 0, false, 1000);
  const int64_t deadline = edgesync::test::NowMs() + 60000;
  while (link->counters().received < 20 && edgesync::test::NowMs() < deadline) {
    TouchFromMain();
    edgesync::test::SleepMs(1);
  }
  TouchFromMain();
  link->Disconnect(2000);
  std::printf("no race reported (%lld messages received)\n", static_cast<long long>(link->counters().received));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace edgesync;
  if (argc == 3 && std::string(argv[1]) == "--race") return RaceOn(argv[2]);
  test::TempDir dir;
  test::Broker broker(dir.path());
  if (!broker.Start()) {
    std::fprintf(stderr, "broker did not start\n");
    return 2;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = '\0';
  test::Process client;  // its report goes to our stderr, which ctest reads
  if (!client.Start({self, "--race", broker.uri()})) return 2;
  int code = client.Wait(180000);
  broker.Stop();
  return code;
}
