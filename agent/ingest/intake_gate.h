// agent/ingest/intake_gate.h: takes the link to the local broker down while
// ingest takes no more messages, and back up when it does again.
//
// Why a link pause and not a wait: Paho C 1.3.12 runs every client's
// callbacks on one receive thread, so a message callback that waits for a
// store that refuses commits (full under reject-new) also stops the
// uplink's answers and reconnects; nothing is acknowledged, nothing can be
// pruned, and only a restart got the gateway out. Paho sends a QoS 1
// PUBACK when the callback returns and cannot hold it back (returning 0
// from MQTTAsync_messageArrived only makes Paho call again), and an
// unsubscribe would make the broker drop what sensors publish meanwhile.
// A clean disconnect keeps the persistent session: the local broker queues
// the sensors' QoS 1 messages (max_queued_messages raised, docs/INGEST.md)
// and delivers them after the reconnect.
//
// Contract: Start applies ingest's current state to the link before
// returning (call it before the link's Start, so a gateway that starts
// with a journal to commit does not connect first), then follows every
// change on its own thread. Stop ends the thread and leaves the link as it
// is. The thread also keeps ingest's presence mark fresh
// (Ingest::KeepPresenceMark) and corrects the untrusted clock periods once
// the clock is trusted (Ingest::CorrectClockPeriods), every kPollMs.
//
// Thread safety: Start/Stop from the owner.
#ifndef EDGESYNC_AGENT_INGEST_INTAKE_GATE_H_
#define EDGESYNC_AGENT_INGEST_INTAKE_GATE_H_

#include <atomic>
#include <thread>

#include "agent/ingest/ingest.h"
#include "sync/mqtt_link.h"

namespace edgesync {

class IntakeGate {
 public:
  IntakeGate(Ingest* ingest, MqttLink* link) : ingest_(ingest), link_(link) {}
  ~IntakeGate() { Stop(); }
  void Start();
  void Stop();

 private:
  void Apply(bool open);
  void Run();

  Ingest* ingest_;
  MqttLink* link_;
  bool open_ = true;  // as applied; only the thread touches it after Start
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_INTAKE_GATE_H_
