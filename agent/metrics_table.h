// agent/metrics_table.h: every plain status figure of a gateway and a region
// hub, written once: where the snapshot (status.json, `status --json`)
// holds it, its Prometheus name, type and help, how `edgesync status` labels
// it and whether the status page shows it. /metrics (agent/prometheus.cc)
// and the figure lines of `edgesync status` (agent/status_text.cc) walk
// these tables over the snapshot; `edgesync metrics reference` prints
// them as the Markdown table of docs/STATUS.md; tests read the snapshot
// through the constants below (metrics::kUplinkAcksLate), so a figure that
// does not exist fails to compile instead of reading as 0.
//
// Not in the tables: families with labels (per region, origin, reason or
// clock period state) and histograms. They are lists inside the snapshot,
// not one number at a section and key, and stay hand-written in
// agent/prometheus.cc beside the table walk.
//
// Contract: one row per figure; a row's section and key name a number (or a
// bool, or an array counted) of the snapshot a running process of that
// role writes. Names and values are what dashboards read: a row is only
// appended, never renamed.
//
// Thread safety: constant data and pure functions.
#ifndef EDGESYNC_AGENT_METRICS_TABLE_H_
#define EDGESYNC_AGENT_METRICS_TABLE_H_

#include <string>
#include <vector>

namespace edgesync {

// A figure's place in the snapshot: snapshot[section][key], or
// snapshot[key] when section is "".
struct StatusKey {
  const char* section;
  const char* key;
};

enum class MetricType { kCounter, kGauge };

// How the snapshot's value becomes the sample's.
enum class MetricValue {
  kNumber,           // as it is
  kBool,             // true = 1, false = 0
  kMillisAsSeconds,  // milliseconds in the snapshot, seconds in /metrics
  kArraySize,        // the array's length (0 when absent)
  kMillisSinceEpoch, // a wall time: ms since the Unix epoch, s in /metrics, UTC in `edgesync status`
};

// When /metrics has a sample of it (within a section the snapshot has).
enum class MetricWhen {
  kAlways,       // 0 when the key is absent
  kKeyPresent,   // only when the key is there
  kGatePositive, // only while the section's `gate` key is above 0 (unknown = 0)
  kNonNegative,  // only when the key is there and >= 0 (-1 = not yet)
};

enum class MetricRole { kBoth, kGateway, kHub };

struct Metric {
  StatusKey field;
  const char* prometheus;
  MetricType type;
  MetricValue value;
  MetricWhen when;
  const char* gate;         // the key kGatePositive looks at, else ""
  MetricRole role;
  bool on_page;             // the status page shows it (agent/status_page.html)
  // Its label in `edgesync status`, "" where not shown: "group: name"
  // prints `name` among the group's lines ("store: size"), a label without
  // ": " is a group of one figure ("origins").
  const char* status_text;
  const char* help;
};

// X(Name, role, section, key, prometheus, type, value, when, gate, on_page, status_text, help)
// clang-format off
#define EDGESYNC_METRICS(X) \
  X(kStartedMs, kBoth, "", "started_ms", "edgesync_start_time_seconds", kGauge, kMillisSinceEpoch, kAlways, "", false, "", \
    "Start time of the process since the Unix epoch.") \
  X(kStoreFileBytes, kBoth, "store", "file_bytes", "edgesync_store_file_bytes", kGauge, kNumber, kAlways, "", true, "store: size", \
    "Size of the store file and its WAL.") \
  X(kStoreFreeBytes, kBoth, "store", "free_bytes", "edgesync_store_free_bytes", kGauge, kNumber, kAlways, "", true, "store: free", \
    "Free space on the store's filesystem.") \
  X(kStoreEntries, kBoth, "store", "entries", "edgesync_store_entries", kGauge, kNumber, kAlways, "", true, "store: entries", \
    "Local change-log entries held.") \
  X(kStoreRemoteEntries, kBoth, "store", "remote_entries", "edgesync_store_remote_entries", kGauge, kNumber, kAlways, "", true, \
    "store: in the read view", "Entries held in the read view (other origins).") \
  X(kStoreLastLsn, kBoth, "store", "last_lsn", "edgesync_store_last_lsn", kGauge, kNumber, kAlways, "", true, "store: LSN head", \
    "The LSN head: the last local log sequence number.") \
  X(kStoreDeadLetters, kBoth, "store", "dead_letters", "edgesync_store_dead_letters_total", kCounter, kNumber, kAlways, "", true, \
    "store: dead letters", "Rejected payloads recorded since the store was created.") \
  X(kStoreRejectedFull, kBoth, "store", "rejected_full", "edgesync_store_rejected_full_total", kCounter, kNumber, kAlways, "", false, \
    "store: refused when full", "Appends refused because the store was full.") \
  X(kStoreDroppedOldest, kBoth, "store", "dropped_oldest", "edgesync_store_dropped_oldest_total", kCounter, kNumber, kAlways, "", \
    false, "store: dropped oldest", "Unacknowledged readings dropped by the drop-oldest disk policy since creation.") \
  X(kStoreDroppedAcked, kBoth, "store", "dropped_acked", "edgesync_store_dropped_acked_total", kCounter, kNumber, kAlways, "", false, \
    "store: dropped oldest (acknowledged)", \
    "Acknowledged readings dropped to make room when the store or its filesystem was full, since creation.") \
  X(kStoreCorruptChunks, kBoth, "store", "corrupt_chunks", "edgesync_store_corrupt_chunks_total", kCounter, kNumber, kAlways, "", \
    false, "", "Read view and region feed chunks refused as damaged since the store was opened.") \
  X(kStoreRanges, kBoth, "store", "ranges", "edgesync_store_ranges", kGauge, kArraySize, kAlways, "", false, "store: ranges", \
    "Active partition key ranges.") \
  X(kUpstreamCheckpoint, kBoth, "upstream", "checkpoint", "edgesync_upstream_checkpoint", kGauge, kNumber, kAlways, "", true, \
    "backlog: upstream checkpoint", "Highest LSN acknowledged by a region.") \
  X(kBacklogReadings, kBoth, "backlog", "readings", "edgesync_backlog_readings", kGauge, kNumber, kAlways, "", true, \
    "backlog: readings", "Entries not yet acknowledged by a region.") \
  X(kBacklogBytes, kBoth, "backlog", "bytes", "edgesync_backlog_bytes", kGauge, kNumber, kAlways, "", true, "backlog: ~size", \
    "Estimated bytes of the entries not yet acknowledged.") \
  X(kBacklogOldestAgeS, kBoth, "backlog", "oldest_age_s", "edgesync_backlog_oldest_age_seconds", kGauge, kNumber, kAlways, "", \
    true, "backlog: oldest (s)", "Age of the oldest entry not yet acknowledged.") \
  X(kProcessRssBytes, kBoth, "process", "rss_bytes", "edgesync_process_resident_memory_bytes", kGauge, kNumber, kAlways, "", \
    false, "", "Resident set size.") \
  X(kRecentErrors, kBoth, "", "recent_errors", "edgesync_log_recent_errors", kGauge, kArraySize, kKeyPresent, "", false, \
    "recent errors", "Warning and error lines held in the recent-errors ring.") \
  X(kClockTrusted, kGateway, "clock", "trusted", "edgesync_clock_trusted", kGauge, kBool, kAlways, "", false, \
    "clock: trusted", "1 once the gateway trusts its wall clock in this boot (ingest.clock_trust), else 0.") \
  X(kIngestMessages, kGateway, "ingest", "messages", "edgesync_ingest_messages_total", kCounter, kNumber, kAlways, "", true, \
    "ingest: messages", "MQTT messages received from the local broker.") \
  X(kIngestReadingsAccepted, kGateway, "ingest", "readings_accepted", "edgesync_ingest_readings_accepted_total", kCounter, \
    kNumber, kAlways, "", false, "", "Readings accepted by ingest.") \
  X(kIngestReadingsCommitted, kGateway, "ingest", "readings_committed", "edgesync_ingest_readings_committed_total", kCounter, \
    kNumber, kAlways, "", true, "ingest: readings committed", "Readings committed to the store.") \
  X(kIngestBatches, kGateway, "ingest", "batches", "edgesync_ingest_batches_total", kCounter, kNumber, kAlways, "", false, "", \
    "Group commits to the store.") \
  X(kIngestCommitFailures, kGateway, "ingest", "commit_failures", "edgesync_ingest_commit_failures_total", kCounter, kNumber, \
    kAlways, "", false, "", "Group commits that failed.") \
  X(kIngestDuplicatesSkipped, kGateway, "ingest", "duplicates_skipped", "edgesync_ingest_duplicates_skipped_total", kCounter, \
    kNumber, kAlways, "", false, "", "Redelivered messages skipped.") \
  X(kIngestReplayed, kGateway, "ingest", "replayed", "edgesync_ingest_readings_replayed_total", kCounter, kNumber, kAlways, \
    "", false, "", "Readings replayed from the intake journal at start (taken before a stop, not yet committed then).") \
  X(kIngestOverruns, kGateway, "ingest", "overruns", "edgesync_ingest_overruns_total", kCounter, kNumber, kAlways, "", false, \
    "", "Messages that waited on the receive thread for room in ingest's queue.") \
  X(kIngestDeadLetters, kGateway, "ingest", "dead_letters", "edgesync_ingest_dead_letters_total", kCounter, kNumber, kAlways, "", \
    true, "ingest: dead letters", "Payloads dead-lettered by ingest.") \
  X(kIngestUntrustedClock, kGateway, "ingest", "untrusted_clock", "edgesync_ingest_untrusted_clock_total", kCounter, kNumber, \
    kAlways, "", false, "clock: readings so far (while not trusted)", \
    "Readings stamped by the gateway while its clock was not trusted (quality untrusted_clock).") \
  X(kIngestJournalBytes, kGateway, "ingest", "journal_bytes", "edgesync_ingest_journal_bytes", kGauge, kNumber, kAlways, "", \
    false, "", "Bytes of the intake journal on disk.") \
  X(kIngestPaused, kGateway, "ingest", "paused", "edgesync_ingest_paused", kGauge, kBool, kAlways, "", false, "ingest: paused", \
    "1 while ingest takes no messages from the local broker (the store refuses commits).") \
  X(kIngestPauses, kGateway, "ingest", "pauses", "edgesync_ingest_pauses_total", kCounter, kNumber, kAlways, "", false, \
    "ingest: pauses", "Times ingest stopped taking messages from the local broker.") \
  X(kIngestPausedMs, kGateway, "ingest", "paused_ms", "edgesync_ingest_paused_seconds_total", kCounter, kMillisAsSeconds, \
    kAlways, "", false, "ingest: paused in all (s)", "Time ingest spent not taking messages from the local broker.") \
  X(kIngestMqttConnected, kGateway, "ingest_mqtt", "connected", "edgesync_ingest_broker_connected", kGauge, kBool, kAlways, "", \
    false, "local broker: connected", "1 when connected to the local broker.") \
  X(kIngestMqttConnectionLosses, kGateway, "ingest_mqtt", "connection_losses", \
    "edgesync_ingest_broker_connection_losses_total", kCounter, kNumber, kAlways, "", false, "local broker: connection losses", \
    "Connections to the local broker lost.") \
  X(kIngestMqttReceived, kGateway, "ingest_mqtt", "received", "edgesync_ingest_broker_messages_received_total", kCounter, \
    kNumber, kAlways, "", false, "", "Messages the MQTT client received from the local broker (redeliveries included).") \
  X(kIngestMqttPaused, kGateway, "ingest_mqtt", "paused", "edgesync_ingest_broker_reading_paused", kGauge, kBool, kAlways, "", \
    false, "", "1 while the MQTT client has stopped reading from the local broker (ingest paused it).") \
  X(kUplinkBatchesSent, kGateway, "uplink", "batches_sent", "edgesync_uplink_batches_sent_total", kCounter, kNumber, kAlways, \
    "", true, "uplink: batches sent", "Batches sent to the write region (resends included).") \
  X(kUplinkCheckpoint, kGateway, "uplink", "checkpoint", "edgesync_uplink_checkpoint", kGauge, kNumber, kAlways, "", false, \
    "", "The uplink's resume point: the highest LSN its write region acknowledged.") \
  X(kUplinkEntriesSent, kGateway, "uplink", "entries_sent", "edgesync_uplink_entries_sent_total", kCounter, kNumber, kAlways, \
    "", false, "", "Entries sent to the write region (resends included).") \
  X(kUplinkBytesSent, kGateway, "uplink", "bytes_sent", "edgesync_uplink_sent_bytes_total", kCounter, kNumber, kAlways, "", \
    false, "", "Payload bytes of the batches sent.") \
  X(kUplinkLinkBytesSent, kGateway, "uplink", "link_bytes_sent", "edgesync_uplink_link_sent_bytes_total", kCounter, kNumber, \
    kAlways, "", true, "uplink: link bytes sent", \
    "MQTT PUBLISH packets sent to regions, framing included (batches, resends, probes).") \
  X(kUplinkLinkBytesPerS, kGateway, "uplink", "link_bytes_per_s", "edgesync_uplink_link_send_rate_bytes_per_second", kGauge, \
    kNumber, kAlways, "", true, "uplink: link bytes/s", \
    "Bytes per second of MQTT PUBLISH packets sent to regions, over the last seconds.") \
  X(kUplinkMaxBytesPerS, kGateway, "uplink", "max_bytes_per_s", "edgesync_uplink_cap_bytes_per_second", kGauge, kNumber, \
    kAlways, "", true, "uplink: cap (bytes/s, 0 = none)", "The uplink's cap (uplink.max_bytes_per_s); 0 = none.") \
  X(kUplinkCapWaitMs, kGateway, "uplink", "cap_wait_ms", "edgesync_uplink_cap_wait_seconds_total", kCounter, kMillisAsSeconds, \
    kAlways, "", true, "uplink: waited on it (s)", "Time a batch was ready and waited for the uplink's cap.") \
  X(kUplinkAcks, kGateway, "uplink", "acks", "edgesync_uplink_acks_total", kCounter, kNumber, kAlways, "", true, \
    "uplink: acknowledgements", "Acknowledgements received from regions.") \
  X(kUplinkCompleteThroughMs, kGateway, "uplink", "complete_through_ms", "edgesync_uplink_complete_through_seconds", kGauge, \
    kMillisSinceEpoch, kGatePositive, "complete_through_ms", true, "uplink: complete through", \
    "This gateway's acknowledged completeness watermark (Unix time): every reading committed before it is held by a region.") \
  X(kUplinkCompleteAgeMs, kGateway, "uplink", "complete_age_ms", "edgesync_uplink_complete_age_seconds", kGauge, \
    kMillisAsSeconds, kGatePositive, "complete_through_ms", false, "uplink: complete through (s ago)", \
    "Age of this gateway's acknowledged watermark.") \
  X(kUplinkResends, kGateway, "uplink", "resends", "edgesync_uplink_resends_total", kCounter, kNumber, kAlways, "", true, \
    "uplink: resends", "Times the uplink resent from its checkpoint.") \
  X(kUplinkAckTimeouts, kGateway, "uplink", "ack_timeouts", "edgesync_uplink_ack_timeouts_total", kCounter, kNumber, kAlways, \
    "", true, "uplink: answer timeouts", "Batches not acknowledged in time.") \
  X(kUplinkRefusals, kGateway, "uplink", "refusals", "edgesync_uplink_refusals_total", kCounter, kNumber, kAlways, "", true, "", \
    "Batches a region refused.") \
  X(kUplinkAcksIgnored, kGateway, "uplink", "acks_ignored", "edgesync_uplink_acks_ignored_total", kCounter, kNumber, kAlways, \
    "", false, "uplink: answers ignored", \
    "Answers ignored: to no batch in flight, from another region or for another origin.") \
  X(kUplinkAcksLate, kGateway, "uplink", "acks_late", "edgesync_uplink_acks_late_total", kCounter, kNumber, kAlways, "", true, \
    "uplink: answers ignored (late, to resent batches)", \
    "Of the answers ignored, late answers to batches given up on and resent (routine after an outage).") \
  X(kUplinkRegionSwitches, kGateway, "uplink", "region_switches", "edgesync_uplink_region_switches_total", kCounter, kNumber, \
    kAlways, "", false, "", "Changes of the write region.") \
  X(kUplinkRegionRegressions, kGateway, "uplink", "region_regressions", "edgesync_uplink_region_regressions_total", kCounter, \
    kNumber, kAlways, "", false, "", \
    "Answers saying a region's store lost what it had acknowledged (it is refilled).") \
  X(kUplinkRefillsPending, kGateway, "uplink", "refills_pending", "edgesync_uplink_refills_pending", kGauge, kNumber, kAlways, \
    "", false, "", "Regions to refill (or to ask) after losing what they acknowledged.") \
  X(kUplinkRefillLost, kGateway, "uplink", "refill_lost", "edgesync_uplink_refill_lost_total", kCounter, kNumber, kAlways, "", \
    false, "", "LSNs a region had acknowledged and lost that this gateway no longer held to refill it with.") \
  X(kUplinkCorrectionsWithheld, kGateway, "uplink", "corrections_withheld", "edgesync_uplink_corrections_withheld_total", \
    kCounter, kNumber, kAlways, "", true, "uplink: time corrections withheld", \
    "Time corrections left out of batches to a region of protocol 5 or older (its readings keep their stamped times).") \
  X(kUplinkInflight, kGateway, "uplink", "inflight", "edgesync_uplink_inflight_batches", kGauge, kNumber, kAlways, "", false, "", \
    "Batches sent and not yet acknowledged.") \
  X(kUplinkLiveLaneOpen, kGateway, "uplink", "live_lane_open", "edgesync_uplink_live_lane_open", kGauge, kBool, kAlways, "", \
    false, "uplink: live lane open", "1 while a live lane runs ahead of a backlog (two lanes, sync/uplink.h).") \
  X(kUplinkLiveLanesOpened, kGateway, "uplink", "live_lanes_opened", "edgesync_uplink_live_lanes_opened_total", kCounter, \
    kNumber, kAlways, "", false, "", "Live lanes opened ahead of a backlog.") \
  X(kUplinkPriorityBatchesSent, kGateway, "uplink", "priority_batches_sent", "edgesync_uplink_priority_batches_sent_total", \
    kCounter, kNumber, kAlways, "", true, "uplink: priority batches sent", \
    "Priority batches sent ahead of a backlog (uplink.priority_topics), resends included.") \
  X(kUplinkPriorityReadingsSent, kGateway, "uplink", "priority_readings_sent", "edgesync_uplink_priority_readings_sent_total", \
    kCounter, kNumber, kAlways, "", true, "uplink: priority readings sent", \
    "Readings of a priority topic sent in priority batches ahead of a backlog, resends included.") \
  X(kUplinkLiveLaneWaiting, kGateway, "uplink_live_lane", "waiting", "edgesync_uplink_live_lane_waiting_readings", kGauge, kNumber, kAlways, "", \
    true, "live lane: waiting", "Readings of the live lane (readings committed since a backlog began) committed and not yet acknowledged by the region.") \
  X(kUplinkLiveLaneWaitingBytes, kGateway, "uplink_live_lane", "waiting_bytes", "edgesync_uplink_live_lane_waiting_bytes", kGauge, kNumber, kAlways, "", \
    true, "live lane: bytes waiting", "Link bytes the waiting readings of the live lane (readings committed since a backlog began) take, at its recent bytes per reading.") \
  X(kUplinkLiveLaneOldestAgeMs, kGateway, "uplink_live_lane", "oldest_age_ms", "edgesync_uplink_live_lane_oldest_age_seconds", kGauge, kMillisAsSeconds, \
    kAlways, "", true, "live lane: oldest waiting (s)", "Age of the oldest waiting reading of the live lane (readings committed since a backlog began), by its own time.") \
  X(kUplinkLiveLaneReadingsPerS, kGateway, "uplink_live_lane", "readings_per_s", "edgesync_uplink_live_lane_send_rate_readings_per_second", kGauge, \
    kNumber, kAlways, "", true, "live lane: readings/s", "Readings of the live lane (readings committed since a backlog began) acknowledged per second, over the last seconds.") \
  X(kUplinkLiveLaneBytesPerS, kGateway, "uplink_live_lane", "bytes_per_s", "edgesync_uplink_live_lane_send_rate_bytes_per_second", kGauge, kNumber, \
    kAlways, "", true, "live lane: link bytes/s", "Link bytes per second of the live lane (readings committed since a backlog began)'s batches, over the last seconds.") \
  X(kUplinkLiveLaneEtaS, kGateway, "uplink_live_lane", "eta_s", "edgesync_uplink_live_lane_time_to_finish_seconds", kGauge, kNumber, kNonNegative, "", \
    true, "live lane: time to finish (s)", "Waiting readings of the live lane (readings committed since a backlog began) over its send rate; absent while nothing moves.") \
  X(kUplinkBacklogLaneWaiting, kGateway, "uplink_backlog_lane", "waiting", "edgesync_uplink_backlog_lane_waiting_readings", kGauge, kNumber, kAlways, "", \
    true, "backlog lane: waiting", "Readings of the backlog lane (the older readings, oldest first) committed and not yet acknowledged by the region.") \
  X(kUplinkBacklogLaneWaitingBytes, kGateway, "uplink_backlog_lane", "waiting_bytes", "edgesync_uplink_backlog_lane_waiting_bytes", kGauge, kNumber, kAlways, "", \
    true, "backlog lane: bytes waiting", "Link bytes the waiting readings of the backlog lane (the older readings, oldest first) take, at its recent bytes per reading.") \
  X(kUplinkBacklogLaneOldestAgeMs, kGateway, "uplink_backlog_lane", "oldest_age_ms", "edgesync_uplink_backlog_lane_oldest_age_seconds", kGauge, kMillisAsSeconds, \
    kAlways, "", true, "backlog lane: oldest waiting (s)", "Age of the oldest waiting reading of the backlog lane (the older readings, oldest first), by its own time.") \
  X(kUplinkBacklogLaneReadingsPerS, kGateway, "uplink_backlog_lane", "readings_per_s", "edgesync_uplink_backlog_lane_send_rate_readings_per_second", kGauge, \
    kNumber, kAlways, "", true, "backlog lane: readings/s", "Readings of the backlog lane (the older readings, oldest first) acknowledged per second, over the last seconds.") \
  X(kUplinkBacklogLaneBytesPerS, kGateway, "uplink_backlog_lane", "bytes_per_s", "edgesync_uplink_backlog_lane_send_rate_bytes_per_second", kGauge, kNumber, \
    kAlways, "", true, "backlog lane: link bytes/s", "Link bytes per second of the backlog lane (the older readings, oldest first)'s batches, over the last seconds.") \
  X(kUplinkBacklogLaneEtaS, kGateway, "uplink_backlog_lane", "eta_s", "edgesync_uplink_backlog_lane_time_to_finish_seconds", kGauge, kNumber, kNonNegative, "", \
    true, "backlog lane: time to finish (s)", "Waiting readings of the backlog lane (the older readings, oldest first) over its send rate; absent while nothing moves.") \
  X(kReadViewPages, kGateway, "read_view", "pages", "edgesync_feed_pages_total", kCounter, kNumber, kAlways, "", false, "", \
    "Feed pages pulled from regions.") \
  X(kReadViewTimeouts, kGateway, "read_view", "timeouts", "edgesync_feed_timeouts_total", kCounter, kNumber, kAlways, "", false, \
    "", "Feed requests not answered in time.") \
  X(kRetentionPasses, kGateway, "retention", "passes", "edgesync_retention_passes_total", kCounter, kNumber, kAlways, "", \
    false, "", "Passes of the retention worker (pruning and compaction) since start.") \
  X(kRetentionReadingsPruned, kGateway, "retention", "readings_pruned", "edgesync_retention_readings_pruned_total", kCounter, \
    kNumber, kAlways, "", false, "", "Readings the retention worker removed (acknowledged, past their age or for space).") \
  X(kRetentionCompactedSpans, kGateway, "retention", "compacted_spans", "edgesync_retention_compacted_spans_total", kCounter, \
    kNumber, kAlways, "", false, "", "Spans of commit chunks rewritten as series blocks by compaction.") \
  X(kRetentionCompactedReadings, kGateway, "retention", "compacted_readings", \
    "edgesync_retention_compacted_readings_total", kCounter, kNumber, kAlways, "", false, "", \
    "Readings rewritten by compaction.") \
  X(kRetentionCompactedBytesBefore, kGateway, "retention", "compacted_bytes_before", \
    "edgesync_retention_compacted_bytes_before_total", kCounter, kNumber, kAlways, "", false, "", \
    "Bytes of the commit chunks compaction rewrote.") \
  X(kRetentionCompactedBytesAfter, kGateway, "retention", "compacted_bytes_after", \
    "edgesync_retention_compacted_bytes_after_total", kCounter, kNumber, kAlways, "", false, "", \
    "Bytes of the series blocks compaction wrote for them.") \
  X(kRetentionErrors, kGateway, "retention", "errors", "edgesync_retention_errors_total", kCounter, kNumber, kAlways, "", false, \
    "", "Retention or compaction steps that failed (retried on the next pass).") \
  X(kHubBatchesApplied, kHub, "hub", "batches_applied", "edgesync_hub_batches_applied_total", kCounter, kNumber, kAlways, "", \
    true, "hub: batches applied", "Batches applied.") \
  X(kHubAlreadyHeld, kHub, "hub", "already_held", "edgesync_hub_batches_already_held_total", kCounter, kNumber, kAlways, "", \
    false, "", "Batches answered OK that held nothing new (resends).") \
  X(kHubShed, kHub, "hub", "shed", "edgesync_hub_batches_shed_total", kCounter, kNumber, kAlways, "", false, "", \
    "Messages dropped because the receive queue was full (their gateways resend them).") \
  X(kHubEntriesReceived, kHub, "hub", "entries_received", "edgesync_hub_entries_received_total", kCounter, kNumber, kAlways, \
    "", false, "", "Entries received in batches.") \
  X(kHubEntriesApplied, kHub, "hub", "entries_applied", "edgesync_hub_entries_applied_total", kCounter, kNumber, kAlways, "", \
    true, "hub: readings applied", "Entries new to the region.") \
  X(kHubFeedHead, kHub, "hub", "feed_head", "edgesync_hub_feed_head", kGauge, kNumber, kAlways, "", true, "hub: feed head", \
    "The region feed's head sequence number.") \
  X(kHubFeedRequests, kHub, "hub", "feed_requests", "edgesync_hub_feed_requests_total", kCounter, kNumber, kAlways, "", false, \
    "hub: feed pages served", "Feed pages served.") \
  X(kHubFeedRequestsSuperseded, kHub, "hub", "feed_requests_superseded", "edgesync_hub_feed_requests_superseded_total", \
    kCounter, kNumber, kAlways, "", false, "hub: requests superseded", \
    "Feed requests dropped unanswered: a newer one of the same sender came before their turn.") \
  X(kHubFeedCorrectionsWithheld, kHub, "hub", "feed_corrections_withheld", \
    "edgesync_hub_feed_corrections_withheld_total", kCounter, kNumber, kAlways, "", false, \
    "hub: time corrections withheld from old readers", \
    "Time corrections left out of feed pages to readers of protocol 5 or older.") \
  X(kHubPings, kHub, "hub", "pings", "edgesync_hub_pings_total", kCounter, kNumber, kAlways, "", false, "", \
    "Round-trip probes answered.") \
  X(kHubFeedResets, kHub, "hub", "feed_resets", "edgesync_hub_feed_resets_total", kCounter, kNumber, kAlways, "", false, \
    "hub: feed resets", "Explicit resets sent to feed readers.") \
  X(kHubHoleJumps, kHub, "hub", "hole_jumps", "edgesync_hub_hole_jumps_total", kCounter, kNumber, kAlways, "", false, "", \
    "Batches applied from a base above the high-water mark (failover).") \
  X(kHubRegressed, kHub, "hub", "regressed", "edgesync_hub_regressed_total", kCounter, kNumber, kAlways, "", false, "", \
    "Batches answered Regressed: the sender's record names a store of another epoch or a higher mark.") \
  X(kHubLostAtOrigin, kHub, "hub", "lost_at_origin", "edgesync_hub_lost_at_origin_total", kCounter, kNumber, kAlways, "", false, \
    "", "LSNs refilling gateways no longer held (pruned after this region acknowledged them and lost them).") \
  X(kHubLateReadings, kHub, "hub", "late_readings", "edgesync_hub_late_readings_total", kCounter, kNumber, kAlways, "", false, \
    "", "Readings that arrived stamped over a minute before their origin's watermark, all origins.") \
  X(kHubPriorityBatchesApplied, kHub, "hub", "priority_batches_applied", "edgesync_hub_priority_batches_applied_total", \
    kCounter, kNumber, kAlways, "", false, "hub: priority batches", \
    "Priority batches (protocol 8) answered OK, applied or already held; also in batches_applied.") \
  X(kHubPriorityEntriesApplied, kHub, "hub", "priority_entries_applied", "edgesync_hub_priority_entries_applied_total", \
    kCounter, kNumber, kAlways, "", false, "hub: priority readings", \
    "Entries new to the region that came in priority batches, ahead of their backlog; also in entries_applied.") \
  X(kHubShards, kHub, "hub", "shards", "edgesync_hub_shards_held", kGauge, kArraySize, kAlways, "", false, "shards: holds", \
    "Region shards this hub holds (listens to and applies).") \
  X(kHubLiveHubs, kHub, "hub", "live_hubs", "edgesync_hub_live_hubs", kGauge, kNumber, kAlways, "", false, "shards: live hubs", \
    "The region's live hubs, as this hub's last lease round counted them.") \
  X(kHubShardsTaken, kHub, "hub", "shards_taken", "edgesync_hub_shard_takeovers_total", kCounter, kNumber, kAlways, "", false, \
    "shards: taken", "Free or expired shards this hub took.") \
  X(kHubShardsStolen, kHub, "hub", "shards_stolen", "edgesync_hub_shard_steals_total", kCounter, kNumber, kAlways, "", false, \
    "shards: stolen", "Shards this hub took from a busier hub.") \
  X(kHubShardsHandedOver, kHub, "hub", "shards_handed_over", "edgesync_hub_shard_handovers_total", kCounter, kNumber, kAlways, \
    "", false, "shards: handed over", \
    "Shards this hub gave up: taken by another hub, expired, or released at shutdown.") \
  X(kHubLeaseErrors, kHub, "hub", "lease_errors", "edgesync_hub_lease_renew_failures_total", kCounter, kNumber, kAlways, "", \
    false, "shards: renew failures", "Lease rounds that failed to renew this hub's leases (database unreachable).") \
  X(kHubLeaseRenewedAgoMs, kHub, "hub", "lease_renewed_ago_ms", "edgesync_hub_lease_renewal_age_seconds", kGauge, \
    kMillisAsSeconds, kNonNegative, "", false, "shards: leases renewed (s ago)", \
    "Time since this hub last renewed its shard leases.") \
  X(kHubNotOwned, kHub, "hub", "not_owned", "edgesync_hub_messages_not_owned_total", kCounter, kNumber, kAlways, "", false, "", \
    "Messages of a shard this hub does not hold: dropped, resent by their gateway to the holder.") \
  X(kHubOriginCount, kHub, "hub", "origin_count", "edgesync_hub_origins", kGauge, kNumber, kKeyPresent, "", false, "origins", \
    "Origins (gateway stores) this hub answered since it started.")
// clang-format on

namespace metrics {
// One constant per row: metrics::kUplinkAcksLate is {"uplink", "acks_late"}.
#define EDGESYNC_METRIC_KEY(name, role, section, key, ...) inline constexpr StatusKey name{section, key};
EDGESYNC_METRICS(EDGESYNC_METRIC_KEY)
#undef EDGESYNC_METRIC_KEY
}  // namespace metrics

// Every row, in the order /metrics and the reference list them.
const std::vector<Metric>& AllMetrics();
// The rows a process of that role has in its snapshot: kBoth rows and its
// own (role kGateway or kHub).
std::vector<Metric> MetricsOf(MetricRole role);

// docs/STATUS.md's figure table ("## Every figure"), as Markdown.
std::string MetricsReference();

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_METRICS_TABLE_H_
