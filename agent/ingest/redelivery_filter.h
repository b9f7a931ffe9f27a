// agent/ingest/redelivery_filter.h: recognises a QoS 1 message the broker
// sends again (DUP set) although ingest already took it.
//
// Why: Paho sends a message's PUBACK after the callback returns. When the
// link goes down around that moment (intake paused, the broker restarted)
// the PUBACK is lost and the broker redelivers the message with DUP set and
// its original packet identifier (MQTT 3.1.1 4.4, 5.0 4.4). A reading that
// carries its own time is found in the store; a bare number is stamped with
// the receive time, so only the message itself can tell it was taken.
//
// How: the packet ids and a fingerprint (topic and payload) of the last
// messages taken are kept. A DUP message whose id and fingerprint match one
// of them is a redelivery. A packet id is reused once its PUBACK arrived,
// so a match could also be a later, identical message that reused the id
// and was cut off before we saw it. That cannot happen while the broker
// hands out ids in sequence, as Mosquitto does (last id + 1, per client): an
// id comes back only after 65,535 others, and an entry is dropped well
// before that (kWindow ids). So matching is on only while every fresh
// message's id followed the previous one by a small step (a redelivery of a
// message never read, sent before a cut, carries the sequence on); the first id out
// of sequence turns matching off for good (logged, counted), and ingest
// then stores a redelivered bare number again rather than risk dropping a
// new one. A connect without the broker's session starts the sequence
// afresh (nothing of the old session can be redelivered).
//
// A broker killed -9 comes back from its last saved state (Mosquitto's
// autosave): it numbers on from the id it had saved, behind the newest we
// saw, and sends again, as fresh messages, the ones it had queued then and
// handed to us since. Such a step back opens a replay window up to the
// newest id seen before it: a message in it may be one already taken
// (MayBeReplayed), so ingest looks for its timed readings in the store; a
// bare number in it cannot be told apart and is stored again.
//
// Thread safety: all methods take the filter's own mutex.
#ifndef EDGESYNC_AGENT_INGEST_REDELIVERY_FILTER_H_
#define EDGESYNC_AGENT_INGEST_REDELIVERY_FILTER_H_

#include <cstdint>
#include <deque>
#include <string_view>
#include <unordered_map>

#include "platform/mutex.h"

namespace edgesync {

class RedeliveryFilter {
 public:
  // Entries kept: the last kCapacity messages taken, and none whose id is
  // more than kWindow ids behind the newest (so a wrap of the 16-bit id
  // space can never reach one).
  static constexpr size_t kCapacity = 4096;
  static constexpr int64_t kWindow = 16384;
  // The largest step between two fresh ids still taken as a sequence (the
  // broker skips the ids of messages it dropped for a full queue).
  static constexpr int64_t kMaxStep = 4096;

  // What tells two messages under one packet id apart: topic and payload.
  static uint64_t Fingerprint(std::string_view topic, std::string_view payload);

  // Every message as it arrives (packet_id 0 = QoS 0 or unknown: ignored).
  // Returns MayBeReplayed's answer for a fresh message (false for a DUP),
  // so ingest's hot path takes the filter's mutex once.
  bool Arrived(int packet_id, bool duplicate);
  // A message ingest took (its readings journaled or committed).
  void Taken(int packet_id, uint64_t fingerprint);
  // Whether a DUP message is one already taken.
  bool AlreadyTaken(int packet_id, uint64_t fingerprint) const;
  // Whether a fresh message (after Arrived) lies in a replay window: the
  // broker stepped its ids back, and may be sending again what we took.
  bool MayBeReplayed(int packet_id) const;
  // At start, the messages the previous run took, oldest first, from the
  // intake journal (which keeps the fingerprint's low byte). They count
  // until the first fresh message: if its id does not follow the last one
  // restored by a small step (the broker dropped or numbered messages we
  // never saw), they are forgotten, not trusted.
  void Restored(int packet_id, bool duplicate, uint8_t fingerprint_low);
  // A connect without the broker's session: nothing taken can come again.
  void SessionLost();

  bool matching() const;
  // Times an out-of-sequence id turned matching off (0 or 1).
  int64_t sequence_breaks() const;

 private:
  struct Entry {
    uint64_t fingerprint = 0;
    bool low_byte_only = false;  // restored from the journal
    int64_t position = 0;        // of the newest fresh id when it was taken
  };
  void Put(int packet_id, Entry entry) REQUIRES(mu_);
  void Forget(int packet_id, int64_t position) REQUIRES(mu_);
  void Evict() REQUIRES(mu_);  // entries more than kWindow ids behind
  void Clear() REQUIRES(mu_);

  mutable Mutex mu_;
  bool matching_ GUARDED_BY(mu_) = true;
  int64_t breaks_ GUARDED_BY(mu_) = 0;
  int last_fresh_ GUARDED_BY(mu_) = 0;   // 0 = none yet
  int64_t position_ GUARDED_BY(mu_) = 0; // fresh ids seen, counted by their steps
  bool restored_ GUARDED_BY(mu_) = false; // entries restored, no fresh message since
  // The replay window after a step back: fresh ids up to replay_end_ (the
  // newest before the step) may be messages taken before; 0 = none.
  int replay_end_ GUARDED_BY(mu_) = 0;
  int64_t replay_left_ GUARDED_BY(mu_) = 0;  // ids from the current one to replay_end_
  std::unordered_map<int, Entry> entries_ GUARDED_BY(mu_);
  std::deque<std::pair<int, int64_t>> order_ GUARDED_BY(mu_);  // (id, position) as taken
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_REDELIVERY_FILTER_H_
