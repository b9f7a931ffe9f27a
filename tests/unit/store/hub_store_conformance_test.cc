// The hub store's contract (store/hub_store.h), run against every backend:
// SQLite (the Store adapter) and PostgreSQL (a real server started by the
// fixture in tests/support/postgres.h, a fresh database per test).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "platform/clock.h"
#include "store/hub_store.h"
#include "store/sqlite_hub_store.h"
#include "store/store.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const Origin kGw1{"gw-1", "0123456789abcdef0123456789abcdef"};
const Origin kGw2{"gw-2", "fedcba9876543210fedcba9876543210"};
const Origin kGw3{"gw-3", "00000000000000000000000000000003"};
constexpr int64_t kRetentionMs = 3600 * 1000;

std::vector<ChangeEntry> Entries(uint64_t from, uint64_t to, const std::string& device = "dev-1") {
  std::vector<ChangeEntry> v;
  for (uint64_t lsn = from; lsn <= to; ++lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = Reading{device, "temp", 1000 + static_cast<int64_t>(lsn), lsn * 0.25, "C\\x", 0};
    v.push_back(e);
  }
  return v;
}

OriginBatch Batch(const Origin& origin, const std::vector<ChangeEntry>& entries, uint64_t base = 0) {
  OriginBatch b;
  b.origin = origin;
  b.base_lsn = base;
  b.first_lsn = entries.empty() ? 0 : entries.front().lsn;
  b.entries = &entries;
  return b;
}

class HubStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {}
  static void TearDownTestSuite() {
    pg_.reset();
    pg_dir_.reset();
  }

  void SetUp() override {
    if (GetParam() == "postgresql") {
      if (!pg_) {
        pg_dir_ = std::make_unique<TempDir>();
        pg_ = std::make_unique<Postgres>(pg_dir_->File("pg"));
        ASSERT_TRUE(pg_->Start()) << pg_->log();
      }
      static int n = 0;
      db_ = "hub_test_" + std::to_string(++n);
      ASSERT_TRUE(pg_->CreateDatabase(db_)) << ReadAll(pg_dir_->File("pg/psql.log"));
    }
  }
  void TearDown() override {
    hubs_.clear();
    if (pg_ && !db_.empty()) pg_->DropDatabase(db_);
  }

  // A hub store of this test's backend (the same data on every call).
  HubStore* Open() {
    std::unique_ptr<HubStore> hub;
    if (GetParam() == "sqlite") {
      StoreOptions o;
      o.path = dir_.File("hub.db");
      o.gateway_id = "hub-test";
      o.clock = &clock_;
      o.remote_retention_ms = kRetentionMs;
      o.min_free_bytes = 0;
      std::unique_ptr<SqliteHubStore> sqlite;
      Status st = OpenSqliteHubStore(o, &sqlite);
      EXPECT_OK(st);
      if (!st.ok()) return nullptr;
      hub = std::move(sqlite);
    } else {
      Status st = OpenPostgresHubStore(PgOptions(), &hub);
      EXPECT_OK(st);
      if (!st.ok()) return nullptr;
    }
    hubs_.push_back(std::move(hub));
    return hubs_.back().get();
  }
  HubStoreOptions PgOptions() {
    HubStoreOptions o;
    o.location = pg_->Uri(db_);
    o.password_file = pg_->password_file();
    o.feed_retention_ms = kRetentionMs;
    o.clock = &clock_;
    return o;
  }

  ApplyResult Apply(HubStore* s, const OriginBatch& b) {
    ApplyResult r;
    Status st = s->Apply(b, &r);
    EXPECT_OK(st);
    return r;
  }

  // Every entry of the feed from the start, with its (origin, LSN) counted.
  std::vector<RegionFeedEntry> Feed(HubStore* s) {
    std::vector<RegionFeedEntry> all;
    ShardPositions after{};
    FeedRead page;
    do {
      Status st = s->ReadFeed(after, 7, &page);
      EXPECT_OK(st);
      EXPECT_FALSE(page.reset);
      if (!st.ok() || page.reset) break;
      EXPECT_LE(page.entries.size(), 7u);
      for (const auto& e : page.entries) {
        EXPECT_EQ(e.shard, RegionShardOf(e.remote.origin.gateway_id));
        EXPECT_GT(e.seq, after[e.shard]);  // in order inside its shard
        after[e.shard] = e.seq;
        all.push_back(e);
      }
      EXPECT_TRUE(AllAtOrBelow(after, page.next));
      EXPECT_TRUE(AllAtOrBelow(page.next, page.head));
      after = page.next;
    } while (!page.entries.empty());
    return all;
  }

  // Two writers append two origins at once while a reader follows the feed
  // by its continuation; the reader must see every entry, also what
  // committed late.
  void FollowTwoWriters(const Origin& o1, const Origin& o2) {
    HubStore* a = Open();
    ASSERT_NE(a, nullptr);
    HubStore* b = GetParam() == "postgresql" ? Open() : a;  // SQLite: one writer per file
    ASSERT_NE(b, nullptr);
    HubStore* reader = GetParam() == "postgresql" ? Open() : a;
    ASSERT_NE(reader, nullptr);
    constexpr uint64_t kBatches = 60, kPer = 20;
    std::atomic<int> writing{2};
    std::atomic<int> errors{0};
    auto run = [&](HubStore* s, const Origin& origin) {
      for (uint64_t i = 0; i < kBatches; ++i) {
        std::vector<ChangeEntry> span = Entries(i * kPer + 1, (i + 1) * kPer);
        ApplyResult r;
        Status st = s->Apply(Batch(origin, span), &r);
        if (!st.ok() || r.outcome != ApplyOutcome::kApplied) {
          if (errors++ == 0) ADD_FAILURE() << st.ToString() << " " << ApplyOutcomeName(r.outcome) << " " << r.detail;
        }
      }
      --writing;
    };
    std::thread t1(run, a, o1), t2(run, b, o2);
    std::set<std::pair<std::string, uint64_t>> seen;
    ShardPositions after{};
    FeedRead page;
    int duplicates = 0;
    // A failed read ends the reading, not the test body: the writers are
    // joined first (a joinable thread destroyed on the way out aborts).
    Status read;
    for (bool last = false; !last && read.ok();) {
      last = writing.load() == 0;  // one more full pass after both committed their last
      do {
        read = reader->ReadFeed(after, 50, &page);
        if (!read.ok()) break;
        if (page.reset) {
          read = Status::Conflict("the reader was reset at " + ShardPositionsText(after));
          break;
        }
        for (const auto& e : page.entries) {
          duplicates += !seen.insert({e.remote.origin.ToString(), e.remote.origin_lsn}).second;
        }
        after = page.next;
      } while (!page.entries.empty());
    }
    t1.join();
    t2.join();
    ASSERT_OK(read);
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(duplicates, 0);
    EXPECT_EQ(seen.size(), 2 * kBatches * kPer) << "the reader stepped over entries committed late";
  }

  static std::unique_ptr<TempDir> pg_dir_;
  static std::unique_ptr<Postgres> pg_;
  std::string db_;
  TempDir dir_;
  ManualClock clock_{1'800'000'000'000, 0};
  std::vector<std::unique_ptr<HubStore>> hubs_;
};

std::unique_ptr<TempDir> HubStoreTest::pg_dir_;
std::unique_ptr<Postgres> HubStoreTest::pg_;

TEST_P(HubStoreTest, AppliesABatchMovesTheMarkAndFeedsTheEntriesInOrder) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->backend(), GetParam());
  auto e = Entries(1, 10);
  ApplyResult r = Apply(s, Batch(kGw1, e));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_EQ(r.before, 0u);
  EXPECT_EQ(r.applied, 10u);
  uint64_t hw = 0;
  ASSERT_OK(s->HighWater(kGw1, &hw));
  EXPECT_EQ(hw, 10u);
  ASSERT_OK(s->HighWater(kGw2, &hw));
  EXPECT_EQ(hw, 0u);
  auto feed = Feed(s);
  ASSERT_EQ(feed.size(), 10u);
  for (size_t i = 0; i < feed.size(); ++i) {
    EXPECT_EQ(feed[i].remote.origin, kGw1);
    EXPECT_EQ(feed[i].remote.origin_lsn, i + 1);
    EXPECT_EQ(feed[i].remote.entry.reading.device_id, "dev-1");
    EXPECT_EQ(feed[i].remote.entry.reading.unit, "C\\x");  // survives COPY's escaping
    EXPECT_EQ(feed[i].remote.entry.reading.value, (i + 1) * 0.25);
    EXPECT_EQ(feed[i].remote.entry.reading.ts_ms, 1001 + static_cast<int64_t>(i));
  }
  FeedBoundsInfo bounds;
  ASSERT_OK(s->FeedBounds(&bounds));
  EXPECT_EQ(bounds.numbered, 10u);
  EXPECT_EQ(bounds.head[RegionShardOf(kGw1.gateway_id)], feed.back().seq);
  EXPECT_EQ(bounds.pruned, ShardPositions{});
  EXPECT_GT(bounds.oldest, 0u);
}

// A time correction (store/time_correction.h) is an entry like any other:
// held under the mark, fed on in order with its period, delta and span, in
// the batch with the readings it moves or on its own; a resend of it is
// already held.
TEST_P(HubStoreTest, ATimeCorrectionIsHeldAndFedOnLikeAnyEntry) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto e = Entries(1, 4);
  ChangeEntry c;
  c.lsn = 5;
  c.kind = ChangeEntry::Kind::kTimeCorrection;
  c.correction = TimeCorrection{2, 259'200'000, 1001, 1004};
  e.push_back(c);
  ApplyResult r = Apply(s, Batch(kGw1, e));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 5u);
  std::vector<ChangeEntry> alone{c};
  alone[0].lsn = 6;
  alone[0].correction.period = 3;
  alone[0].correction.delta_ms = -5;
  EXPECT_EQ(Apply(s, Batch(kGw1, alone)).high_water, 6u);
  EXPECT_EQ(Apply(s, Batch(kGw1, alone)).outcome, ApplyOutcome::kAlreadyHeld);
  auto feed = Feed(s);
  ASSERT_EQ(feed.size(), 6u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(feed[i].remote.entry.kind, ChangeEntry::Kind::kReading);
  const ChangeEntry& f = feed[4].remote.entry;
  ASSERT_EQ(f.kind, ChangeEntry::Kind::kTimeCorrection);
  EXPECT_EQ(feed[4].remote.origin_lsn, 5u);
  EXPECT_EQ(f.correction.period, 2u);
  EXPECT_EQ(f.correction.delta_ms, 259'200'000);
  EXPECT_EQ(f.correction.from_ms, 1001);
  EXPECT_EQ(f.correction.to_ms, 1004);
  EXPECT_EQ(feed[5].remote.entry.kind, ChangeEntry::Kind::kTimeCorrection);
  EXPECT_EQ(feed[5].remote.entry.correction.delta_ms, -5);
  // A sender's correction no store form could keep exactly is refused
  // whole, before it is stored: a feed that could not be read back would
  // stop every reader of the region.
  std::vector<ChangeEntry> huge{c};
  huge[0].lsn = 7;
  huge[0].correction.delta_ms = int64_t{1} << 60;
  EXPECT_EQ(Apply(s, Batch(kGw1, huge)).outcome, ApplyOutcome::kInvalid);
  huge[0].correction.delta_ms = kMaxCorrectionDeltaMs;  // the largest kept
  EXPECT_EQ(Apply(s, Batch(kGw1, huge)).outcome, ApplyOutcome::kApplied);
  feed = Feed(s);
  ASSERT_EQ(feed.size(), 7u);
  EXPECT_EQ(feed[6].remote.entry.correction.delta_ms, kMaxCorrectionDeltaMs);
}

// A gateway's series change from batch to batch (the PostgreSQL store
// first matches a batch against its sender's last one): every entry keeps
// its own series, whether the batch repeats, reorders, replaces, shifts a
// boundary between device and metric, or grows the last one's series.
TEST_P(HubStoreTest, EveryEntryKeepsItsSeriesWhenAGatewaysSeriesChange) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  struct Key {
    std::string device, metric, unit;
  };
  const std::vector<std::vector<Key>> batches = {
      {{"ab", "c", "u"}, {"ab", "d", ""}},
      {{"ab", "c", "u"}, {"ab", "d", ""}},        // the same again
      {{"ab", "d", ""}, {"ab", "c", "u"}},        // reordered
      {{"a", "bc", "u"}, {"ab", "d", ""}},        // the device/metric boundary moved
      {{"ab", "c", "u"}, {"ab", "d", "x"}},       // a unit changed
      {{"ab", "c", "u"}, {"ab", "d", "x"}, {"e", "f", "g"}},  // one more series
      {{"ab", "c", "u"}},                         // one fewer
  };
  std::vector<std::vector<ChangeEntry>> spans;
  std::vector<Key> want;
  uint64_t lsn = 0;
  for (const auto& keys : batches) {
    spans.emplace_back();
    for (const Key& k : keys) {
      ChangeEntry e;
      e.lsn = ++lsn;
      e.reading = Reading{k.device, k.metric, 1000 + static_cast<int64_t>(lsn), 1.5, k.unit, 0};
      spans.back().push_back(e);
      want.push_back(k);
    }
  }
  // One at a time, then the rest as one group (a sender's batches together).
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(Apply(s, Batch(kGw1, spans[i])).outcome, ApplyOutcome::kApplied);
  std::vector<OriginBatch> group;
  for (size_t i = 3; i < spans.size(); ++i) group.push_back(Batch(kGw1, spans[i]));
  std::vector<ApplyResult> results;
  ASSERT_OK(s->ApplyBatches(group, &results));
  for (const ApplyResult& r : results) EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  auto feed = Feed(s);
  ASSERT_EQ(feed.size(), want.size());
  for (size_t i = 0; i < feed.size(); ++i) {
    const Reading& r = feed[i].remote.entry.reading;
    EXPECT_EQ(feed[i].remote.origin_lsn, i + 1);
    EXPECT_EQ(r.device_id, want[i].device) << i;
    EXPECT_EQ(r.metric, want[i].metric) << i;
    EXPECT_EQ(r.unit, want[i].unit) << i;
  }
}

TEST_P(HubStoreTest, AResendIsAlreadyHeldAndAnOverlapAppliesOnlyItsNewEntries) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto e = Entries(1, 10);
  Apply(s, Batch(kGw1, e));
  ApplyResult again = Apply(s, Batch(kGw1, e));
  EXPECT_EQ(again.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(again.high_water, 10u);
  EXPECT_EQ(again.applied, 0u);
  auto overlap = Entries(6, 15);
  ApplyResult r = Apply(s, Batch(kGw1, overlap));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.applied, 5u);
  EXPECT_EQ(r.before, 10u);
  EXPECT_EQ(r.high_water, 15u);
  EXPECT_EQ(Feed(s).size(), 15u);
}

TEST_P(HubStoreTest, AGapIsRefusedAsAGapAndWritesNothing) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto e = Entries(1, 10);
  Apply(s, Batch(kGw1, e));
  auto later = Entries(12, 15);
  ApplyResult r = Apply(s, Batch(kGw1, later));
  EXPECT_EQ(r.outcome, ApplyOutcome::kGap);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_NE(r.detail.find("gap"), std::string::npos) << r.detail;
  EXPECT_EQ(Feed(s).size(), 10u);
}

TEST_P(HubStoreTest, InvalidBatchesAreInvalidNotGapsAndWriteNothing) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto bad_key = Entries(1, 3);
  bad_key[1].reading.device_id = "a/b";
  auto unordered = Entries(1, 3);
  std::swap(unordered[0], unordered[2]);
  auto good = Entries(1, 3);
  Origin bad_epoch{"gw-1", "not-an-epoch"};
  for (const OriginBatch& b : {Batch(kGw1, bad_key), Batch(kGw1, unordered), Batch(bad_epoch, good)}) {
    ApplyResult r = Apply(s, b);
    EXPECT_EQ(r.outcome, ApplyOutcome::kInvalid) << ApplyOutcomeName(r.outcome);
    EXPECT_FALSE(r.detail.empty());
  }
  EXPECT_TRUE(Feed(s).empty());
  EXPECT_EQ(Apply(s, Batch(kGw1, good)).outcome, ApplyOutcome::kApplied);
}

TEST_P(HubStoreTest, ABaseDeclaresEverythingBelowItHeldElsewhere) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto e = Entries(101, 105);
  ApplyResult r = Apply(s, Batch(kGw1, e, 100));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.before, 0u);
  EXPECT_EQ(r.high_water, 105u);
  std::vector<ChangeEntry> none;
  r = Apply(s, Batch(kGw2, none, 40));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 40u);
  EXPECT_EQ(r.applied, 0u);
}

// A sender told earlier that the store held up to 20 (held_claim): a mark
// of 10 means the store lost 11..20 (restored from a backup). Refused as
// regressed, before the base could jump over the loss; nothing written.
TEST_P(HubStoreTest, AMarkBelowWhatTheSenderWasToldIsRegressedAndWritesNothing) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  Apply(s, Batch(kGw1, Entries(1, 10)));
  auto e = Entries(31, 35);
  OriginBatch b = Batch(kGw1, e, 30);
  b.held_claim = 20;
  ApplyResult r = Apply(s, b);
  EXPECT_EQ(r.outcome, ApplyOutcome::kRegressed) << ApplyOutcomeName(r.outcome);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_NE(r.detail.find("below"), std::string::npos) << r.detail;
  EXPECT_EQ(Feed(s).size(), 10u);
  uint64_t held = 0;
  ASSERT_OK(s->HighWater(kGw1, &held));
  EXPECT_EQ(held, 10u);
  // The refill from the actual mark names it, and applies.
  auto refill = Entries(11, 20);
  OriginBatch f = Batch(kGw1, refill, 10);
  f.held_claim = 10;
  EXPECT_EQ(Apply(s, f).outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(Apply(s, b).outcome, ApplyOutcome::kApplied) << "held 20 now: the base may jump to 30";
}

TEST_P(HubStoreTest, ASpanWhoseFirstLsnsWereCompactedJoinsTheMark) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto e = Entries(1, 10);
  Apply(s, Batch(kGw1, e));
  auto later = Entries(13, 15);
  OriginBatch b = Batch(kGw1, later);
  b.first_lsn = 11;  // 11 and 12 were compacted away at the gateway
  ApplyResult r = Apply(s, b);
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 15u);
  // The same entries without the span's start are a gap.
  auto gap = Entries(18, 19);
  EXPECT_EQ(Apply(s, Batch(kGw1, gap)).outcome, ApplyOutcome::kGap);
}

TEST_P(HubStoreTest, AGroupOfManyOriginsAnswersEachBatchOnItsOwn) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto a1 = Entries(1, 5, "a"), a2 = Entries(6, 9, "a"), b1 = Entries(1, 4, "b"), b_gap = Entries(7, 8, "b");
  auto c1 = Entries(1, 2, "c");
  c1[0].reading.metric = "";  // invalid
  auto c2 = Entries(1, 3, "c");
  std::vector<OriginBatch> group = {Batch(kGw1, a1), Batch(kGw2, b1), Batch(kGw1, a2), Batch(kGw2, b_gap),
                                    Batch(kGw3, c1), Batch(kGw3, c2)};
  std::vector<ApplyResult> r;
  ASSERT_OK(s->ApplyBatches(group, &r));
  ASSERT_EQ(r.size(), group.size());
  EXPECT_EQ(r[0].outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r[1].outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r[2].outcome, ApplyOutcome::kApplied);  // follows the group's own first batch of gw-1
  EXPECT_EQ(r[2].before, 5u);
  EXPECT_EQ(r[2].high_water, 9u);
  EXPECT_EQ(r[3].outcome, ApplyOutcome::kGap);
  EXPECT_EQ(r[3].high_water, 4u);
  EXPECT_EQ(r[4].outcome, ApplyOutcome::kInvalid);
  EXPECT_EQ(r[5].outcome, ApplyOutcome::kApplied);
  auto feed = Feed(s);
  EXPECT_EQ(feed.size(), 5u + 4u + 4u + 3u);
  std::map<std::string, std::vector<uint64_t>> by_origin;
  for (const auto& e : feed) by_origin[e.remote.origin.gateway_id].push_back(e.remote.origin_lsn);
  EXPECT_EQ(by_origin["gw-1"], (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(by_origin["gw-2"], (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(by_origin["gw-3"], (std::vector<uint64_t>{1, 2, 3}));
}

// A busy hub's group with nothing to refuse (one transaction on SQLite):
// a resend and an overlap of one origin inside the group are decided
// against the marks the group's own earlier batches left.
TEST_P(HubStoreTest, AGroupDecidesResendsAndOverlapsAgainstItsOwnEarlierBatches) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto a1 = Entries(1, 5, "a"), a_overlap = Entries(3, 8, "a"), b1 = Entries(1, 4, "b"), b2 = Entries(5, 6, "b");
  std::vector<OriginBatch> group = {Batch(kGw1, a1), Batch(kGw2, b1), Batch(kGw1, a1), Batch(kGw1, a_overlap),
                                    Batch(kGw2, b2)};
  std::vector<ApplyResult> r;
  ASSERT_OK(s->ApplyBatches(group, &r));
  ASSERT_EQ(r.size(), group.size());
  EXPECT_EQ(r[0].outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r[0].applied, 5u);
  EXPECT_EQ(r[2].outcome, ApplyOutcome::kAlreadyHeld);  // a resend of the group's first batch
  EXPECT_EQ(r[2].high_water, 5u);
  EXPECT_EQ(r[3].outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r[3].before, 5u);
  EXPECT_EQ(r[3].applied, 3u);  // 6..8
  EXPECT_EQ(r[3].high_water, 8u);
  EXPECT_EQ(r[4].outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r[4].high_water, 6u);
  uint64_t hw = 0;
  ASSERT_OK(s->HighWater(kGw1, &hw));
  EXPECT_EQ(hw, 8u);
  ASSERT_OK(s->HighWater(kGw2, &hw));
  EXPECT_EQ(hw, 6u);
  auto feed = Feed(s);
  EXPECT_EQ(feed.size(), 8u + 6u);
  std::map<std::string, std::vector<uint64_t>> by_origin;
  for (const auto& e : feed) by_origin[e.remote.origin.gateway_id].push_back(e.remote.origin_lsn);
  EXPECT_EQ(by_origin["gw-1"], (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(by_origin["gw-2"], (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
}

TEST_P(HubStoreTest, DeviceRecordsTravelThroughTheFeed) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  std::vector<ChangeEntry> e(2);
  e[0].lsn = 1;
  e[0].kind = ChangeEntry::Kind::kDeviceUpsert;
  e[0].device = DeviceRecord{"dev-9", "Boiler\nroom", "Basement \\ north", "C", false};
  e[1].lsn = 2;
  e[1].kind = ChangeEntry::Kind::kDeviceDelete;
  e[1].device = DeviceRecord{"dev-8", "", "", "", true};
  EXPECT_EQ(Apply(s, Batch(kGw1, e)).outcome, ApplyOutcome::kApplied);
  auto feed = Feed(s);
  ASSERT_EQ(feed.size(), 2u);
  EXPECT_EQ(feed[0].remote.entry.kind, ChangeEntry::Kind::kDeviceUpsert);
  EXPECT_EQ(feed[0].remote.entry.device.name, "Boiler\nroom");
  EXPECT_EQ(feed[0].remote.entry.device.location, "Basement \\ north");
  EXPECT_EQ(feed[0].remote.entry.device.default_unit, "C");
  EXPECT_EQ(feed[1].remote.entry.kind, ChangeEntry::Kind::kDeviceDelete);
  EXPECT_TRUE(feed[1].remote.entry.device.deleted);
  EXPECT_EQ(feed[1].remote.entry.device.device_id, "dev-8");
}

TEST_P(HubStoreTest, PruningRemovesOldEntriesAndAReaderBehindGetsAReset) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto old_entries = Entries(1, 10);
  Apply(s, Batch(kGw1, old_entries));
  clock_.Advance(kRetentionMs + 1000);
  auto fresh = Entries(11, 15);
  Apply(s, Batch(kGw1, fresh));
  auto other = Entries(1, 3, "dev-2");
  Apply(s, Batch(kGw2, other));  // another shard, not old
  FeedBoundsInfo before;
  ASSERT_OK(s->FeedBounds(&before));
  PruneResult pruned, step;
  do {
    ASSERT_OK(s->PruneStep(4, &step));
    pruned.Add(step);
  } while (step.more);
  EXPECT_EQ(pruned.remote, 10);
  // A reader from the beginning lost gw-1's shard: an explicit reset, no
  // entries, and a restart position no later than any entry still served.
  FeedRead page;
  ASSERT_OK(s->ReadFeed(ShardPositions{}, 100, &page));
  EXPECT_TRUE(page.reset);
  EXPECT_TRUE(page.entries.empty());
  const int shard1 = RegionShardOf(kGw1.gateway_id);
  EXPECT_GT(page.next[shard1], 0u);
  EXPECT_TRUE(AllAtOrBelow(page.next, page.head));
  FeedBoundsInfo bounds;
  ASSERT_OK(s->FeedBounds(&bounds));
  EXPECT_EQ(bounds.head, before.head);
  EXPECT_EQ(bounds.numbered, before.numbered);
  EXPECT_GT(bounds.pruned[shard1], 0u);
  // From the restart position: everything still served, nothing else.
  std::multiset<std::pair<std::string, uint64_t>> rest;
  ShardPositions after = page.next;
  do {
    ASSERT_OK(s->ReadFeed(after, 3, &page));
    ASSERT_FALSE(page.reset);
    for (const auto& e : page.entries) rest.insert({e.remote.origin.gateway_id, e.remote.origin_lsn});
    after = page.next;
  } while (!page.entries.empty());
  std::multiset<std::pair<std::string, uint64_t>> want{{"gw-1", 11}, {"gw-1", 12}, {"gw-1", 13}, {"gw-1", 14},
                                                        {"gw-1", 15}, {"gw-2", 1},  {"gw-2", 2},  {"gw-2", 3}};
  EXPECT_EQ(rest, want);
  // A reader at the pruned marks is not reset. On PostgreSQL the marks are
  // per shard: gw-2's shard lost nothing (SQLite's one sequence moves every
  // shard's mark together).
  ASSERT_OK(s->ReadFeed(bounds.pruned, 100, &page));
  EXPECT_FALSE(page.reset);
  if (GetParam() == "postgresql") {
    EXPECT_EQ(bounds.pruned[RegionShardOf(kGw2.gateway_id)], 0u);
  }
  // Everything old: the feed is empty, the heads stay, readers at them are fine.
  clock_.Advance(kRetentionMs + 1000);
  do {
    ASSERT_OK(s->PruneStep(100, &step));
  } while (step.more);
  ASSERT_OK(s->FeedBounds(&bounds));
  EXPECT_EQ(bounds.oldest, 0u);
  EXPECT_EQ(bounds.head, before.head);
  ASSERT_OK(s->ReadFeed(bounds.head, 100, &page));
  EXPECT_FALSE(page.reset);
  EXPECT_TRUE(page.entries.empty());
  // The marks outlive the entries: a resend is still already held.
  EXPECT_EQ(Apply(s, Batch(kGw1, fresh)).outcome, ApplyOutcome::kAlreadyHeld);
}

TEST_P(HubStoreTest, EpochAndMarksOutliveAReopen) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  std::string epoch = s->epoch();
  EXPECT_EQ(epoch.size(), 32u);
  auto e = Entries(1, 7);
  Apply(s, Batch(kGw1, e));
  hubs_.clear();
  HubStore* again = Open();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->epoch(), epoch);
  uint64_t hw = 0;
  ASSERT_OK(again->HighWater(kGw1, &hw));
  EXPECT_EQ(hw, 7u);
}

OriginBatch Live(const Origin& origin, const std::vector<ChangeEntry>& entries) {
  OriginBatch b = Batch(origin, entries);
  b.live = true;
  return b;
}

using Spans = std::vector<LsnSpan>;

// How often the feed holds each LSN of an origin.
std::map<uint64_t, int> LsnCounts(const std::vector<RegionFeedEntry>& feed, const Origin& origin) {
  std::map<uint64_t, int> counts;
  for (const auto& e : feed) {
    if (e.remote.origin == origin) ++counts[e.remote.origin_lsn];
  }
  return counts;
}

// Every LSN of from..to exactly once, and nothing else.
void ExpectEachOnce(const std::map<uint64_t, int>& counts, uint64_t from, uint64_t to) {
  EXPECT_EQ(counts.size(), to - from + 1);
  for (uint64_t l = from; l <= to; ++l) {
    auto it = counts.find(l);
    EXPECT_TRUE(it != counts.end() && it->second == 1) << "LSN " << l << " held "
                                                       << (it == counts.end() ? 0 : it->second) << " times";
  }
}

// Two lanes (sync/PROTOCOL.md, "Two lanes"): a live batch above the mark is
// held as a span, the mark stays; live batches grow it; a resend of it is
// already held; the backlog reaching it merges it into the mark; a batch
// of the backlog above the mark is a gap as before. Each LSN is fed once.
TEST_P(HubStoreTest, ALiveSpanIsHeldAboveTheMarkUntilTheBacklogReachesIt) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto first = Entries(1, 10);
  Apply(s, Batch(kGw1, first));
  auto live1 = Entries(20, 25), live2 = Entries(26, 30);
  OriginBatch b = Live(kGw1, live1);
  b.complete_through_ms = 7'000;
  ApplyResult r = Apply(s, b);
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_EQ(r.applied, 6u);
  EXPECT_EQ(r.held, (Spans{{20, 25}}));
  EXPECT_EQ(r.complete_through_ms, 0) << "a watermark moves only over gap-free LSNs";
  uint64_t hw = 0;
  ASSERT_OK(s->HighWater(kGw1, &hw));
  EXPECT_EQ(hw, 10u);
  r = Apply(s, Live(kGw1, live2));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.held, (Spans{{20, 30}}));
  // A resend of the live lane (after a reconnect, from its start).
  auto resend = Entries(20, 30);
  r = Apply(s, Live(kGw1, resend));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_EQ(r.held, (Spans{{20, 30}}));
  // A backlog batch that does not follow the mark is a gap, as before; the
  // answer still names the spans.
  auto far = Entries(15, 17);
  r = Apply(s, Batch(kGw1, far));
  EXPECT_EQ(r.outcome, ApplyOutcome::kGap);
  EXPECT_EQ(r.held, (Spans{{20, 30}}));
  // A sender whose record says the store held more than its mark: regressed,
  // nothing written, and the answer names the spans too.
  auto next = Entries(11, 12);
  OriginBatch claimed = Batch(kGw1, next);
  claimed.held_claim = 15;
  r = Apply(s, claimed);
  EXPECT_EQ(r.outcome, ApplyOutcome::kRegressed);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_EQ(r.held, (Spans{{20, 30}}));
  // The backlog up to the span: the mark jumps past it.
  auto backlog = Entries(11, 19);
  r = Apply(s, Batch(kGw1, backlog));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.applied, 9u);
  EXPECT_EQ(r.high_water, 30u);
  EXPECT_TRUE(r.held.empty());
  ASSERT_OK(s->HighWater(kGw1, &hw));
  EXPECT_EQ(hw, 30u);
  // The live batch's watermark comes with its resend, now under the mark.
  b = Live(kGw1, live1);
  b.complete_through_ms = 7'000;
  r = Apply(s, b);
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.complete_through_ms, 7'000);
  // A non-live batch above the mark is a gap, and holds nothing.
  auto above = Entries(40, 45);
  r = Apply(s, Batch(kGw1, above));
  EXPECT_EQ(r.outcome, ApplyOutcome::kGap);
  EXPECT_TRUE(r.held.empty());
  ExpectEachOnce(LsnCounts(Feed(s), kGw1), 1, 30);
}

TEST_P(HubStoreTest, TheBacklogMergesSeveralSpansAndAddsOnlyWhatTheyLack) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto a = Entries(20, 25), b = Entries(30, 35), c = Entries(50, 55);
  EXPECT_EQ(Apply(s, Live(kGw1, a)).held, (Spans{{20, 25}}));
  EXPECT_EQ(Apply(s, Live(kGw1, b)).held, (Spans{{20, 25}, {30, 35}}));
  EXPECT_EQ(Apply(s, Live(kGw1, c)).held, (Spans{{20, 25}, {30, 35}, {50, 55}}));
  // A live batch that bridges two spans.
  auto bridge = Entries(26, 29);
  EXPECT_EQ(Apply(s, Live(kGw1, bridge)).held, (Spans{{20, 35}, {50, 55}}));
  // The backlog from 1 runs into the first span and past it.
  auto backlog = Entries(1, 40);
  ApplyResult r = Apply(s, Batch(kGw1, backlog));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.applied, 19u + 5u);  // 1..19 and 36..40
  EXPECT_EQ(r.high_water, 40u);
  EXPECT_EQ(r.held, (Spans{{50, 55}}));
  auto rest = Entries(41, 49);
  r = Apply(s, Batch(kGw1, rest));
  EXPECT_EQ(r.high_water, 55u);
  EXPECT_TRUE(r.held.empty());
  ExpectEachOnce(LsnCounts(Feed(s), kGw1), 1, 55);
}

// The live lane and the backlog of one origin in one group (a busy hub):
// decided in order, each entry fed once.
TEST_P(HubStoreTest, ALiveBatchAndTheBacklogInOneGroupAreEachFedOnce) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto live = Entries(20, 25), backlog1 = Entries(1, 12), backlog2 = Entries(13, 22), live2 = Entries(26, 27);
  std::vector<OriginBatch> group = {Live(kGw1, live), Batch(kGw1, backlog1), Live(kGw1, live2),
                                    Batch(kGw1, backlog2), Batch(kGw2, backlog1)};
  std::vector<ApplyResult> r;
  ASSERT_OK(s->ApplyBatches(group, &r));
  ASSERT_EQ(r.size(), group.size());
  EXPECT_EQ(r[0].held, (Spans{{20, 25}}));
  EXPECT_EQ(r[1].high_water, 12u);
  EXPECT_EQ(r[2].held, (Spans{{20, 27}}));
  EXPECT_EQ(r[3].outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r[3].applied, 7u);  // 13..19
  EXPECT_EQ(r[3].high_water, 27u);
  EXPECT_TRUE(r[3].held.empty());
  const auto feed = Feed(s);
  ExpectEachOnce(LsnCounts(feed, kGw1), 1, 27);
  ExpectEachOnce(LsnCounts(feed, kGw2), 1, 12);
}

TEST_P(HubStoreTest, AtMostEightSpansAreHeldAndANinthIsAGap) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  std::vector<std::vector<ChangeEntry>> spans;
  for (uint64_t i = 0; i < kMaxHeldRanges + 1; ++i) spans.push_back(Entries(100 + i * 10, 104 + i * 10));
  ApplyResult r;
  for (uint64_t i = 0; i < kMaxHeldRanges; ++i) {
    r = Apply(s, Live(kGw1, spans[i]));
    EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  }
  ASSERT_EQ(r.held.size(), 8u);
  const Spans eight = r.held;
  r = Apply(s, Live(kGw1, spans.back()));
  EXPECT_EQ(r.outcome, ApplyOutcome::kGap);
  EXPECT_NE(r.detail.find("holds 8 spans"), std::string::npos) << r.detail;
  EXPECT_EQ(r.held, eight);
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(LsnCounts(Feed(s), kGw1).size(), 8u * 5u) << "the refused span wrote nothing";
  // The backlog (one lane) then joins them all.
  auto backlog = Entries(1, 200);
  r = Apply(s, Batch(kGw1, backlog));
  EXPECT_EQ(r.high_water, 200u);
  EXPECT_TRUE(r.held.empty());
  ExpectEachOnce(LsnCounts(Feed(s), kGw1), 1, 200);
}

TEST_P(HubStoreTest, HeldSpansOutliveAReopen) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto first = Entries(1, 10), live = Entries(20, 25), other = Entries(40, 41);
  Apply(s, Batch(kGw1, first));
  Apply(s, Live(kGw1, live));
  EXPECT_EQ(Apply(s, Live(kGw1, other)).held, (Spans{{20, 25}, {40, 41}}));
  hubs_.clear();
  HubStore* again = Open();
  ASSERT_NE(again, nullptr);
  ApplyResult r = Apply(again, Live(kGw1, live));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.held, (Spans{{20, 25}, {40, 41}}));
  auto backlog = Entries(11, 19);
  r = Apply(again, Batch(kGw1, backlog));
  EXPECT_EQ(r.high_water, 25u);
  EXPECT_EQ(r.held, (Spans{{40, 41}}));
  hubs_.clear();
  again = Open();
  ASSERT_NE(again, nullptr);
  r = Apply(again, Batch(kGw1, backlog));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.high_water, 25u);
  EXPECT_EQ(r.held, (Spans{{40, 41}}));
  std::map<uint64_t, int> counts = LsnCounts(Feed(again), kGw1);
  EXPECT_EQ(counts[40], 1);
  EXPECT_EQ(counts[41], 1);
  counts.erase(40);
  counts.erase(41);
  ExpectEachOnce(counts, 1, 25);
}

// Two writers apply the same live batches above the mark at once (two hubs
// around a lease handover): the spans are part of the compare-and-set, so
// every entry lands once.
TEST_P(HubStoreTest, TwoWritersNeverBothApplyTheSameLiveSpan) {
  HubStore* a = Open();
  ASSERT_NE(a, nullptr);
  HubStore* b = GetParam() == "postgresql" ? Open() : a;
  ASSERT_NE(b, nullptr);
  constexpr uint64_t kBatches = 30, kPer = 20, kFrom = 1001;
  std::vector<std::vector<ChangeEntry>> spans;
  for (uint64_t i = 0; i < kBatches; ++i) spans.push_back(Entries(kFrom + i * kPer, kFrom + (i + 1) * kPer - 1));
  std::atomic<uint64_t> applied{0};
  std::atomic<int> errors{0};
  auto run = [&](HubStore* s) {
    for (uint64_t i = 0; i < kBatches; ++i) {
      ApplyResult r;
      if (!s->Apply(Live(kGw1, spans[i]), &r).ok() ||
          (r.outcome != ApplyOutcome::kApplied && r.outcome != ApplyOutcome::kAlreadyHeld)) {
        ++errors;
      }
      applied += r.applied;
    }
  };
  std::thread t1(run, a), t2(run, b);
  t1.join();
  t2.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied.load(), kBatches * kPer);
  ApplyResult r = Apply(a, Live(kGw1, spans.front()));
  EXPECT_EQ(r.held, (Spans{{kFrom, kFrom + kBatches * kPer - 1}}));
  const auto counts = LsnCounts(Feed(a), kGw1);
  EXPECT_EQ(counts.size(), kBatches * kPer);
  for (const auto& [lsn, n] : counts) EXPECT_EQ(n, 1) << "LSN " << lsn;
}

OriginBatch Completing(const Origin& origin, const std::vector<ChangeEntry>& entries, int64_t through_ms) {
  OriginBatch b = Batch(origin, entries);
  b.complete_through_ms = through_ms;
  return b;
}

// The completeness watermark (BatchCompletes): kept only once the mark
// holds the whole batch, only ever raised, per origin, across a reopen.
TEST_P(HubStoreTest, TheWatermarkMovesOnlyOverGapFreeLsnsAndNeverBack) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto first = Entries(1, 10), second = Entries(11, 20), third = Entries(21, 30);
  ApplyResult r = Apply(s, Completing(kGw1, first, 1'000));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.complete_through_ms, 1'000);
  // A gap: nothing held past 10, so its watermark means nothing yet.
  r = Apply(s, Completing(kGw1, third, 3'000));
  EXPECT_EQ(r.outcome, ApplyOutcome::kGap);
  EXPECT_EQ(r.complete_through_ms, 0);
  // An older time (a clock that was corrected) never lowers it.
  r = Apply(s, Completing(kGw1, second, 500));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.complete_through_ms, 1'000);
  // A resend whose answer was lost carries a later watermark: kept, the
  // mark and the feed untouched.
  r = Apply(s, Completing(kGw1, second, 2'000));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.complete_through_ms, 2'000);
  // A batch without one (an older sender, an untrusted clock) leaves it.
  r = Apply(s, Completing(kGw1, third, 0));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.complete_through_ms, 2'000);
  // Another origin's is its own.
  auto other = Entries(1, 5);
  r = Apply(s, Completing(kGw2, other, 9'000));
  EXPECT_EQ(r.complete_through_ms, 9'000);
  EXPECT_EQ(Feed(s).size(), 35u);

  // In one group, a batch past a gap completes once the batch before it
  // in the group filled the gap.
  auto fourth = Entries(31, 40), fifth = Entries(41, 50);
  std::vector<OriginBatch> group = {Completing(kGw1, fifth, 5'000), Completing(kGw1, fourth, 4'000),
                                    Completing(kGw1, fifth, 6'000)};
  std::vector<ApplyResult> results;
  ASSERT_OK(s->ApplyBatches(group, &results));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].outcome, ApplyOutcome::kGap);
  EXPECT_EQ(results[1].complete_through_ms, 4'000);
  EXPECT_EQ(results[2].outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(results[2].complete_through_ms, 6'000);

  hubs_.clear();
  HubStore* again = Open();
  ASSERT_NE(again, nullptr);
  r = Apply(again, Completing(kGw1, fifth, 0));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.complete_through_ms, 6'000) << "the watermark is durable beside the mark";
  r = Apply(again, Completing(kGw2, other, 0));
  EXPECT_EQ(r.complete_through_ms, 9'000);
}

// A feed page carries an origin's watermark only once its continuation
// holds every entry the watermark covers (PageWatermarks).
TEST_P(HubStoreTest, AFeedPageCarriesAWatermarkOnlyWhereItsReaderHoldsWhatItCovers) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto first = Entries(1, 10), second = Entries(11, 20);
  Apply(s, Completing(kGw1, first, 1'000));
  Apply(s, Completing(kGw1, second, 2'000));
  auto other = Entries(1, 4);
  Apply(s, Batch(kGw2, other));  // no watermark: none listed
  std::vector<OriginWatermark> all;
  ASSERT_OK(s->FeedWatermarks(&all));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].origin, kGw1);
  EXPECT_EQ(all[0].complete_through_ms, 2'000);

  // A reader that stops inside gw-1's entries does not get it; one that
  // reaches them all does.
  ShardPositions start{};
  FeedRead page;
  ASSERT_OK(s->ReadFeed(start, 15, &page));
  std::vector<OriginWatermark> carried = PageWatermarks(all, start, page.next);
  size_t gw1_entries = 0;
  for (const auto& e : page.entries) gw1_entries += e.remote.origin == kGw1;
  ASSERT_LT(gw1_entries, 20u);
  EXPECT_TRUE(carried.empty()) << "a page short of the entries it covers";
  ShardPositions at = page.next;
  while (!page.entries.empty()) {
    ASSERT_OK(s->ReadFeed(at, 15, &page));
    carried = PageWatermarks(all, start, page.next);
    at = page.next;
  }
  ASSERT_EQ(carried.size(), 1u);
  EXPECT_EQ(carried[0].origin, kGw1);
  EXPECT_EQ(carried[0].complete_through_ms, 2'000);
  // A reader already past it gets it again while few origins have one.
  EXPECT_EQ(PageWatermarks(all, at, at).size(), 1u);
}

TEST(PageWatermarksTest, ManyOriginsGetOnlyThoseChangedInThePagesSpan) {
  std::vector<OriginWatermark> all;
  for (int i = 0; i < 100; ++i) {
    all.push_back(OriginWatermark{Origin{"gw-" + std::to_string(i), std::string(32, 'a')}, 1'000 + i,
                                  static_cast<uint64_t>(10 * (i + 1))});
  }
  ShardPositions after{}, next{};
  after.fill(200);  // seq 210.. changed since: gw-20..
  next.fill(500);   // valid up to seq 500: ..gw-49
  std::vector<OriginWatermark> got = PageWatermarks(all, after, next);
  ASSERT_EQ(got.size(), 30u);
  EXPECT_EQ(got.front().origin.gateway_id, "gw-20");
  EXPECT_EQ(got.back().origin.gateway_id, "gw-49");
  // Unknown watermarks are never sent.
  all[25].complete_through_ms = 0;
  EXPECT_EQ(PageWatermarks(all, after, next).size(), 29u);
}

// Two writers of one store apply the same spans at once: every entry lands
// once, and (where the store tells) the applied counts add up to it.
TEST_P(HubStoreTest, TwoWritersNeverBothApplyTheSameSpan) {
  HubStore* a = Open();
  ASSERT_NE(a, nullptr);
  HubStore* b = GetParam() == "postgresql" ? Open() : a;  // SQLite: one writer per file, through one adapter
  ASSERT_NE(b, nullptr);
  constexpr uint64_t kBatches = 40, kPer = 25;
  std::vector<std::vector<ChangeEntry>> spans;
  for (uint64_t i = 0; i < kBatches; ++i) spans.push_back(Entries(i * kPer + 1, (i + 1) * kPer));
  std::atomic<uint64_t> applied{0};
  std::atomic<int> errors{0};
  auto run = [&](HubStore* s) {
    for (uint64_t i = 0; i < kBatches; ++i) {
      ApplyResult r;
      // A writer that lost the race for span i sees a gap at i+1 only if
      // it skipped i: it never does, as both walk every span.
      if (!s->Apply(Batch(kGw1, spans[i]), &r).ok()) ++errors;
      applied += r.applied;
    }
  };
  std::thread t1(run, a), t2(run, b);
  t1.join();
  t2.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied.load(), kBatches * kPer);
  auto feed = Feed(a);
  std::set<uint64_t> lsns;
  for (const auto& e : feed) lsns.insert(e.remote.origin_lsn);
  EXPECT_EQ(feed.size(), kBatches * kPer);
  EXPECT_EQ(lsns.size(), kBatches * kPer);
}

// A page merges the shards in the order the entries were applied, up to
// its size, also when a position points inside what one apply wrote (one
// stored chunk on PostgreSQL).
TEST_P(HubStoreTest, APageMergesShardsInApplyOrderFromInsideABatch) {
  ASSERT_NE(RegionShardOf(kGw1.gateway_id), RegionShardOf(kGw2.gateway_id));
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto a1 = Entries(1, 5), b1 = Entries(1, 5, "dev-2"), a2 = Entries(6, 10);
  Apply(s, Batch(kGw1, a1));
  Apply(s, Batch(kGw2, b1));
  Apply(s, Batch(kGw1, a2));
  auto order = [](const FeedRead& page) {
    std::vector<std::pair<std::string, uint64_t>> v;
    for (const auto& e : page.entries) v.push_back({e.remote.origin.gateway_id, e.remote.origin_lsn});
    return v;
  };
  FeedRead page;
  ASSERT_OK(s->ReadFeed(ShardPositions{}, 12, &page));
  std::vector<std::pair<std::string, uint64_t>> want;
  for (uint64_t l = 1; l <= 5; ++l) want.push_back({"gw-1", l});
  for (uint64_t l = 1; l <= 5; ++l) want.push_back({"gw-2", l});
  want.push_back({"gw-1", 6});
  want.push_back({"gw-1", 7});
  EXPECT_EQ(order(page), want);
  // From inside gw-1's first batch: its rest, gw-2's, then gw-1's second.
  const int shard1 = RegionShardOf(kGw1.gateway_id), shard2 = RegionShardOf(kGw2.gateway_id);
  ShardPositions at = page.next;
  at[shard1] = page.entries[2].seq;  // gw-1's LSN 3
  at[shard2] = 0;
  ASSERT_OK(s->ReadFeed(at, 100, &page));
  want.clear();
  for (uint64_t l = 4; l <= 5; ++l) want.push_back({"gw-1", l});
  for (uint64_t l = 1; l <= 5; ++l) want.push_back({"gw-2", l});
  for (uint64_t l = 6; l <= 10; ++l) want.push_back({"gw-1", l});
  EXPECT_EQ(order(page), want);
  EXPECT_EQ(page.next, page.head);
}

// A gateway id of the given shard other than `not_this`.
std::string GatewayOfShard(int shard, const std::string& not_this) {
  for (int i = 0;; ++i) {
    std::string id = "gw-x" + std::to_string(i);
    if (RegionShardOf(id) == shard && id != not_this) return id;
  }
}

// Two writers (two hubs of a region on PostgreSQL) append origins of two
// shards at once while a reader follows the feed: it must see every entry.
// A shard's numbers become visible in their order, or the reader would step
// over a late commit.
TEST_P(HubStoreTest, AReaderFollowingTwoWritersMissesNoLateCommit) {
  ASSERT_NE(RegionShardOf(kGw1.gateway_id), RegionShardOf(kGw2.gateway_id));
  FollowTwoWriters(kGw1, kGw2);
}

// The same on one shard: two hubs that both act for a shard around a lease
// handover (one still applying what it took before its lease went).
TEST_P(HubStoreTest, AReaderFollowingTwoWritersOfOneShardMissesNoLateCommit) {
  Origin same{GatewayOfShard(RegionShardOf(kGw1.gateway_id), kGw1.gateway_id), kGw2.epoch};
  FollowTwoWriters(kGw1, same);
}

// Priority by topic (sync/PROTOCOL.md, "Priority by topic"). An origin's
// log where LSNs divisible by 7 are level 1 (alarms) and those divisible
// by 11 (and not 7) level 2; `level` picks one level's entries (-1: all).
std::vector<ChangeEntry> Levelled(uint64_t from, uint64_t to, int level = -1) {
  std::vector<ChangeEntry> v;
  for (ChangeEntry& e : Entries(from, to)) {
    const uint32_t l = e.lsn % 7 == 0 ? 1 : e.lsn % 11 == 0 ? 2 : 0;
    if (level >= 0 && l != static_cast<uint32_t>(level)) continue;
    e.reading.quality = WithPriority(kQualityReceiveTime, l);
    v.push_back(e);
  }
  return v;
}

OriginBatch PriorityBatch(const Origin& origin, const std::vector<ChangeEntry>& entries, uint8_t level,
                          uint64_t first, uint64_t last) {
  OriginBatch b = Batch(origin, entries);
  b.priority = level;
  b.first_lsn = first;
  b.last_lsn = last;
  return b;
}

// Priority batches run ahead of the backlog: their entries are fed at once,
// the mark stays and the answers carry the level's mark; the backlog over
// them then feeds everything else, each entry once, with the level bits as
// they came.
TEST_P(HubStoreTest, APriorityBatchThenTheBacklogOverItHoldEachEntryOnce) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto start = Levelled(1, 10);
  Apply(s, Batch(kGw1, start));
  auto alarms = Levelled(11, 120, 1), warnings = Levelled(11, 60, 2);
  ApplyResult r = Apply(s, PriorityBatch(kGw1, alarms, 1, 11, 120));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied) << r.detail;
  EXPECT_EQ(r.applied, alarms.size());
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_TRUE(r.held.empty());
  EXPECT_EQ(r.priority_held, (PriorityMarks{120, 0, 0}));
  r = Apply(s, PriorityBatch(kGw1, warnings, 2, 11, 60));
  EXPECT_EQ(r.applied, warnings.size());
  EXPECT_EQ(r.priority_held, (PriorityMarks{120, 60, 0}));
  // A resend: already held, nothing fed again.
  r = Apply(s, PriorityBatch(kGw1, alarms, 1, 11, 120));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.priority_held, (PriorityMarks{120, 60, 0}));
  // The alarms are in the feed while the backlog has not reached them.
  std::map<uint64_t, int> counts = LsnCounts(Feed(s), kGw1);
  for (const ChangeEntry& e : alarms) EXPECT_EQ(counts[e.lsn], 1) << "alarm " << e.lsn;
  // The backlog, every entry, in batches of 25.
  std::vector<std::vector<ChangeEntry>> backlog;
  for (uint64_t f = 11; f <= 150; f += 25) backlog.push_back(Levelled(f, std::min<uint64_t>(150, f + 24)));
  uint64_t applied = 0;
  for (const auto& b : backlog) {
    r = Apply(s, Batch(kGw1, b));
    EXPECT_EQ(r.outcome, ApplyOutcome::kApplied) << r.detail;
    applied += r.applied;
    EXPECT_EQ(r.high_water, b.back().lsn);
    EXPECT_EQ(r.priority_held, (PriorityMarks{120, 60, 0}));
  }
  EXPECT_EQ(applied, 140u - alarms.size() - warnings.size());
  // A priority batch below the mark adds nothing and still answers.
  r = Apply(s, PriorityBatch(kGw1, alarms, 1, 11, 120));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.high_water, 150u);
  const auto feed = Feed(s);
  ExpectEachOnce(LsnCounts(feed, kGw1), 1, 150);
  for (const auto& e : feed) {
    const uint32_t want = e.remote.origin_lsn % 7 == 0 ? 1 : e.remote.origin_lsn % 11 == 0 ? 2 : 0;
    EXPECT_EQ(QualityPriority(e.remote.entry.reading.quality), want) << e.remote.origin_lsn;
    EXPECT_EQ(QualityFlags(e.remote.entry.reading.quality), uint32_t{kQualityReceiveTime});
  }
}

// A priority batch that starts past its level's mark + 1 (and the mark + 1)
// is a gap: nothing fed, the answer names the marks to resume from. An
// empty one moves its level's mark over a span without its level.
TEST_P(HubStoreTest, APriorityGapWritesNothingAndAnEmptyBatchMovesTheMark) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto start = Levelled(1, 10);
  Apply(s, Batch(kGw1, start));
  auto later = Levelled(40, 80, 1);
  ApplyResult r = Apply(s, PriorityBatch(kGw1, later, 1, 40, 80));
  EXPECT_EQ(r.outcome, ApplyOutcome::kGap);
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_EQ(r.priority_held, (PriorityMarks{0, 0, 0}));
  EXPECT_EQ(LsnCounts(Feed(s), kGw1).size(), 10u) << "the gap wrote nothing";
  // 11..13 holds no alarm: an empty batch says so, and 14.. follows.
  const std::vector<ChangeEntry> none;
  r = Apply(s, PriorityBatch(kGw1, none, 1, 11, 13));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied) << r.detail;
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.priority_held, (PriorityMarks{13, 0, 0}));
  auto next = Levelled(14, 80, 1);
  r = Apply(s, PriorityBatch(kGw1, next, 1, 14, 80));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied) << r.detail;
  EXPECT_EQ(r.applied, next.size());
  EXPECT_EQ(r.priority_held, (PriorityMarks{80, 0, 0}));
  // Now the batch that was a gap is already held.
  EXPECT_EQ(Apply(s, PriorityBatch(kGw1, later, 1, 40, 80)).outcome, ApplyOutcome::kAlreadyHeld);
  // Level 3 has its own mark: still 0, so 40 is a gap for it.
  const std::vector<ChangeEntry> empty3;
  EXPECT_EQ(Apply(s, PriorityBatch(kGw1, empty3, 3, 40, 80)).outcome, ApplyOutcome::kGap);
  // Malformed: entries of another level, live, past the span.
  auto warnings = Levelled(11, 40, 2);
  EXPECT_EQ(Apply(s, PriorityBatch(kGw1, warnings, 1, 11, 40)).outcome, ApplyOutcome::kInvalid);
  OriginBatch live = PriorityBatch(kGw1, later, 1, 81, 90);
  EXPECT_EQ(Apply(s, live).outcome, ApplyOutcome::kInvalid);
  live = PriorityBatch(kGw1, none, 1, 81, 90);
  live.live = true;
  EXPECT_EQ(Apply(s, live).outcome, ApplyOutcome::kInvalid);
  EXPECT_EQ(LsnCounts(Feed(s), kGw1).size(), 10u + next.size());
}

// The marks outlive a reopen (a hub restarted mid-drain): a resend is
// already held, the backlog still skips what the priority batches brought.
TEST_P(HubStoreTest, PriorityMarksOutliveAReopen) {
  HubStore* s = Open();
  ASSERT_NE(s, nullptr);
  auto alarms = Levelled(1, 70, 1), warnings = Levelled(1, 50, 2);
  EXPECT_EQ(Apply(s, PriorityBatch(kGw1, alarms, 1, 1, 70)).priority_held, (PriorityMarks{70, 0, 0}));
  EXPECT_EQ(Apply(s, PriorityBatch(kGw1, warnings, 2, 1, 50)).applied, 4u);  // 11, 22, 33, 44
  hubs_.clear();
  HubStore* again = Open();
  ASSERT_NE(again, nullptr);
  ApplyResult r = Apply(again, PriorityBatch(kGw1, alarms, 1, 1, 70));
  EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(r.priority_held, (PriorityMarks{70, 50, 0}));
  auto backlog = Levelled(1, 80);
  r = Apply(again, Batch(kGw1, backlog));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 80u);
  EXPECT_EQ(r.applied, 80u - 10u - 4u);  // 7..70 level 1; 11..44 level 2
  ExpectEachOnce(LsnCounts(Feed(again), kGw1), 1, 80);
  // A sender told 80 by a store that lost it: regressed, marks named.
  hubs_.clear();
  again = Open();
  ASSERT_NE(again, nullptr);
  OriginBatch claim = PriorityBatch(kGw1, alarms, 1, 1, 70);
  claim.held_claim = 90;
  r = Apply(again, claim);
  EXPECT_EQ(r.outcome, ApplyOutcome::kRegressed);
  EXPECT_EQ(r.priority_held, (PriorityMarks{70, 50, 0}));
}

// Priority batches, live spans and the backlog of one origin, applied by two
// writers at once (two hubs around a lease handover): the priority marks
// are part of the compare-and-set, so every entry lands once.
TEST_P(HubStoreTest, TwoWritersNeverBothApplyAPriorityEntry) {
  HubStore* a = Open();
  ASSERT_NE(a, nullptr);
  HubStore* b = GetParam() == "postgresql" ? Open() : a;
  ASSERT_NE(b, nullptr);
  constexpr uint64_t kLast = 600, kStep = 50;
  std::vector<std::vector<ChangeEntry>> alarms, backlog;
  for (uint64_t f = 1; f <= kLast; f += kStep) {
    alarms.push_back(Levelled(f, f + kStep - 1, 1));
    backlog.push_back(Levelled(f, f + kStep - 1));
  }
  std::atomic<uint64_t> applied{0};
  std::atomic<int> errors{0};
  // One writer sends priority batches then the backlog, the other the
  // backlog interleaved with priority batches: each in order on its own.
  auto run = [&](HubStore* s, bool priority_first) {
    auto priority = [&](size_t i) {
      ApplyResult r;
      Status st;
      // A lost compare-and-set after the store's own retries: the hub
      // answers StoreError and the sender sends the batch again.
      do {
        r = ApplyResult{};
        st = s->Apply(PriorityBatch(kGw1, alarms[i], 1, 1 + i * kStep, (i + 1) * kStep), &r);
      } while (st.code() == Status::Code::kConflict);
      if (!st.ok() || (r.outcome != ApplyOutcome::kApplied && r.outcome != ApplyOutcome::kAlreadyHeld &&
                       r.outcome != ApplyOutcome::kGap)) {
        ADD_FAILURE() << "priority batch " << i << ": " << st.ToString() << ", " << ApplyOutcomeName(r.outcome) << " "
                      << r.detail;
        ++errors;
      }
      applied += r.applied;
    };
    auto lane = [&](size_t i) {
      ApplyResult r;
      Status st;
      do {
        r = ApplyResult{};
        st = s->Apply(Batch(kGw1, backlog[i]), &r);
      } while (st.code() == Status::Code::kConflict);
      if (!st.ok() || (r.outcome != ApplyOutcome::kApplied && r.outcome != ApplyOutcome::kAlreadyHeld)) {
        ADD_FAILURE() << "backlog batch " << i << ": " << st.ToString() << ", " << ApplyOutcomeName(r.outcome) << " "
                      << r.detail;
        ++errors;
      }
      applied += r.applied;
    };
    for (size_t i = 0; i < alarms.size(); ++i) {
      if (priority_first) {
        priority(i);
      } else {
        lane(i);
        priority(i);
      }
    }
    if (priority_first) {
      for (size_t i = 0; i < backlog.size(); ++i) lane(i);
    }
  };
  std::thread t1(run, a, true), t2(run, b, false);
  t1.join();
  t2.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(applied.load(), kLast);
  uint64_t hw = 0;
  ASSERT_OK(a->HighWater(kGw1, &hw));
  EXPECT_EQ(hw, kLast);
  ExpectEachOnce(LsnCounts(Feed(a), kGw1), 1, kLast);
}

#ifdef EDGESYNC_HAVE_POSTGRESQL
// What only the PostgreSQL backend meets: its login, its schema version, and
// a database server that goes away under it.
class PostgresHubStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pg_.Start()) << pg_.log();
    ASSERT_TRUE(pg_.CreateDatabase("hub"));
  }
  HubStoreOptions Options() { return HubStoreOptionsFor(pg_, "hub"); }
  TempDir dir_;
  Postgres pg_{dir_.File("pg")};
};

TEST_F(PostgresHubStoreTest, APasswordInTheLocationIsRefusedAndAWrongOneIsAClearError) {
  HubStoreOptions o = Options();
  o.location = "postgresql://edgesync:" + pg_.password() + "@127.0.0.1:" + std::to_string(pg_.port()) + "/hub";
  std::unique_ptr<HubStore> hub;
  Status st = OpenPostgresHubStore(o, &hub);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("password_file"), std::string::npos) << st.ToString();
  EXPECT_EQ(st.message().find(pg_.password()), std::string::npos) << "the secret is echoed: " << st.ToString();
  o = Options();
  WriteAll(dir_.File("wrong"), "not-the-password\n");
  o.password_file = dir_.File("wrong");
  st = OpenPostgresHubStore(o, &hub);
  EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("password authentication failed"), std::string::npos) << st.ToString();
  o.password_file = dir_.File("missing");
  EXPECT_EQ(OpenPostgresHubStore(o, &hub).code(), Status::Code::kInvalidArgument);
}

TEST_F(PostgresHubStoreTest, ANewerSchemaIsRefusedUntouched) {
  std::unique_ptr<HubStore> hub;
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  hub.reset();
  ASSERT_TRUE(pg_.Sql("hub", "UPDATE es_meta SET value = '99' WHERE key = 'schema_version'"));
  Status st = OpenPostgresHubStore(Options(), &hub);
  EXPECT_EQ(st.code(), Status::Code::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("schema version 99, newer than this edgesync's"), std::string::npos)
      << st.ToString();
  std::string version;
  ASSERT_TRUE(pg_.Query("hub", "SELECT value FROM es_meta WHERE key = 'schema_version'", &version));
  EXPECT_EQ(version.substr(0, version.find('\n')), "99") << "the refused database is left as it was";
}

// A database of schema 5 (marks without held spans) is migrated at open:
// its marks stay, and it holds a live lane's spans from then on.
TEST_F(PostgresHubStoreTest, ASchema5DatabaseKeepsItsMarksAndHoldsSpansAfterTheUpgrade) {
  std::unique_ptr<HubStore> hub;
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  auto first = Entries(1, 10);
  ApplyResult r;
  ASSERT_OK(hub->Apply(Batch(kGw1, first), &r));
  hub.reset();
  // Schema 5 as its migrations left it.
  ASSERT_TRUE(pg_.Sql("hub", "ALTER TABLE es_origins DROP COLUMN held_spans; "
                             "UPDATE es_meta SET value = '5' WHERE key = 'schema_version'"));
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  uint64_t hw = 0;
  ASSERT_OK(hub->HighWater(kGw1, &hw));
  EXPECT_EQ(hw, 10u);
  auto live = Entries(20, 22);
  OriginBatch b = Batch(kGw1, live);
  b.live = true;
  ASSERT_OK(hub->Apply(b, &r));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.held, (std::vector<LsnSpan>{{20, 22}}));
  std::string spans;
  ASSERT_TRUE(pg_.Query("hub", "SELECT held_spans FROM es_origins WHERE gateway_id = 'gw-1'", &spans));
  EXPECT_EQ(spans.substr(0, spans.find('\n')), "{20,22}");
}

// A database of schema 6 (marks and held spans, no priority marks) is
// migrated at open: its mark and spans stay, every priority mark starts at
// 0, and it keeps them from then on.
TEST_F(PostgresHubStoreTest, ASchema6DatabaseKeepsItsMarksAndSpansAndKeepsPriorityMarksAfterTheUpgrade) {
  std::unique_ptr<HubStore> hub;
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  auto first = Entries(1, 10), live = Entries(20, 22);
  ApplyResult r;
  ASSERT_OK(hub->Apply(Batch(kGw1, first), &r));
  OriginBatch b = Batch(kGw1, live);
  b.live = true;
  ASSERT_OK(hub->Apply(b, &r));
  hub.reset();
  // Schema 6 as its migrations left it.
  ASSERT_TRUE(pg_.Sql("hub", "ALTER TABLE es_origins DROP COLUMN priority_held; "
                             "UPDATE es_meta SET value = '6' WHERE key = 'schema_version'"));
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  std::string version;
  ASSERT_TRUE(pg_.Query("hub", "SELECT value FROM es_meta WHERE key = 'schema_version'", &version));
  EXPECT_EQ(version.substr(0, version.find('\n')), "7");
  auto alarms = Levelled(11, 40, 1);  // 14, 21, 28, 35; 21 is in the span
  ASSERT_OK(hub->Apply(PriorityBatch(kGw1, alarms, 1, 11, 40), &r));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied) << r.detail;
  EXPECT_EQ(r.applied, 3u);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_EQ(r.held, (std::vector<LsnSpan>{{20, 22}}));
  EXPECT_EQ(r.priority_held, (PriorityMarks{40, 0, 0}));
  std::string marks;
  ASSERT_TRUE(pg_.Query("hub", "SELECT priority_held FROM es_origins WHERE gateway_id = 'gw-1'", &marks));
  EXPECT_EQ(marks.substr(0, marks.find('\n')), "{40,0,0}");
  auto backlog = Levelled(11, 40);
  ASSERT_OK(hub->Apply(Batch(kGw1, backlog), &r));
  EXPECT_EQ(r.high_water, 40u);
  EXPECT_EQ(r.applied, 30u - 3u - 3u);
  std::map<uint64_t, int> counts;
  FeedRead page;
  ASSERT_OK(hub->ReadFeed(ShardPositions{}, 1000, &page));
  for (const auto& e : page.entries) ++counts[e.remote.origin_lsn];
  ExpectEachOnce(counts, 1, 40);
}

// A priority_held value that is not three marks is refused as damage.
TEST_F(PostgresHubStoreTest, DamagedPriorityMarksAreACorruption) {
  std::unique_ptr<HubStore> hub;
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  auto first = Entries(1, 10), next = Entries(11, 12);
  ApplyResult r;
  ASSERT_OK(hub->Apply(Batch(kGw1, first), &r));
  for (const char* bad : {"{}", "{1,2}", "{1,2,3,4}"}) {
    ASSERT_TRUE(pg_.Sql("hub", std::string("UPDATE es_origins SET priority_held = '") + bad +
                                   "' WHERE gateway_id = 'gw-1'"));
    Status st = hub->Apply(Batch(kGw1, next), &r);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << bad << ": " << st.ToString();
    EXPECT_NE(st.message().find("priority_held"), std::string::npos) << st.ToString();
  }
}

// A held_spans value that is not an ascending list of spans is refused as
// damage, never decided against.
TEST_F(PostgresHubStoreTest, DamagedHeldSpansAreACorruption) {
  std::unique_ptr<HubStore> hub;
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  auto first = Entries(1, 10);
  ApplyResult r;
  ASSERT_OK(hub->Apply(Batch(kGw1, first), &r));
  ASSERT_TRUE(pg_.Sql("hub", "UPDATE es_origins SET held_spans = '{30,20}' WHERE gateway_id = 'gw-1'"));
  auto next = Entries(11, 12);
  Status st = hub->Apply(Batch(kGw1, next), &r);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("held_spans"), std::string::npos) << st.ToString();
  ASSERT_TRUE(pg_.Sql("hub", "UPDATE es_origins SET held_spans = '{20,30,40}' WHERE gateway_id = 'gw-1'"));
  EXPECT_EQ(hub->Apply(Batch(kGw1, next), &r).code(), Status::Code::kCorruption);
}

// A damaged chunk row is a clear Corruption naming it, never a crash or
// made-up entries; the rest of the feed is still served around it.
TEST_F(PostgresHubStoreTest, ADamagedFeedChunkIsACorruptionNamingIt) {
  std::unique_ptr<HubStore> hub;
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  auto first = Entries(1, 10), second = Entries(11, 20);
  ApplyResult r;
  ASSERT_OK(hub->Apply(Batch(kGw1, first), &r));
  ASSERT_OK(hub->Apply(Batch(kGw1, second), &r));
  const int shard = RegionShardOf(kGw1.gateway_id);
  // Flip a byte inside the first chunk's zstd frame (its checksum catches it).
  ASSERT_TRUE(pg_.Sql("hub", "UPDATE es_feed_chunks SET data = set_byte(data, length(data) - 3, "
                             "get_byte(data, length(data) - 3) # 255) WHERE last_seq = 10"));
  FeedRead page;
  Status st = hub->ReadFeed(ShardPositions{}, 100, &page);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find(std::to_string(shard) + "/10"), std::string::npos) << st.ToString();
  EXPECT_TRUE(page.entries.empty());
  ShardPositions after{};
  after[shard] = 10;
  ASSERT_OK(hub->ReadFeed(after, 100, &page));
  EXPECT_EQ(page.entries.size(), 10u);
}

TEST_F(PostgresHubStoreTest, AServerKilledUnderTheHubIsAStoreErrorAndTheHubReconnects) {
  std::unique_ptr<HubStore> hub;
  ASSERT_OK(OpenPostgresHubStore(Options(), &hub));
  auto first = Entries(1, 10);
  ApplyResult r;
  ASSERT_OK(hub->Apply(Batch(kGw1, first), &r));
  pg_.Kill9();
  // The server process that served this connection notices its parent's
  // death at its next wait for the client: until then it may still answer.
  uint64_t hw = 0;
  ASSERT_TRUE(WaitFor([&] { return !hub->HighWater(kGw1, &hw).ok(); }, 30000));
  auto next = Entries(11, 20);
  Status st = hub->Apply(Batch(kGw1, next), &r);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  ASSERT_TRUE(pg_.Start()) << pg_.log();
  // The next call reconnects; what committed before the kill is held.
  ASSERT_TRUE(WaitFor([&] { return hub->HighWater(kGw1, &hw).ok(); }, 30000));
  EXPECT_EQ(hw, 10u);
  ASSERT_OK(hub->Apply(Batch(kGw1, next), &r));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 20u);
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

std::vector<std::string> Backends() {
  std::vector<std::string> b = {"sqlite"};
#ifdef EDGESYNC_HAVE_POSTGRESQL
  b.push_back("postgresql");
#endif
  return b;
}

INSTANTIATE_TEST_SUITE_P(Backends, HubStoreTest, ::testing::ValuesIn(Backends()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace edgesync::test
