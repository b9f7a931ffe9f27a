// The PostgreSQL hub store opens a database an older edgesync made and
// serves its feed as it was: a real schema-2 and a real schema-3 database
// (built here with the SQL those versions ran, store/pg/pg_hub_store.cc at
// commits 67c8caf and 0c0f067), filled with feed rows, opened with this
// code, read back entry by entry, and written to again.
#include <gtest/gtest.h>

#include <charconv>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

#ifdef EDGESYNC_HAVE_POSTGRESQL

// Schema 2, as its code created it (its migrations 1 and 2 in one go).
constexpr char kSchema2Sql[] = R"sql(
CREATE TABLE es_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS es_origins (
  id bigserial PRIMARY KEY,
  gateway_id text NOT NULL,
  epoch text NOT NULL,
  high_water bigint NOT NULL DEFAULT 0,
  UNIQUE (gateway_id, epoch));
CREATE SEQUENCE IF NOT EXISTS es_feed_seq;
CREATE TABLE IF NOT EXISTS es_region_feed (
  seq bigint PRIMARY KEY DEFAULT nextval('es_feed_seq'),
  origin bigint NOT NULL,
  olsn bigint NOT NULL,
  kind smallint NOT NULL,
  device_id text NOT NULL,
  metric text NOT NULL,
  unit text NOT NULL,
  ts bigint NOT NULL,
  value double precision NOT NULL,
  quality integer NOT NULL,
  name text,
  location text,
  default_unit text,
  applied_ms bigint NOT NULL,
  UNIQUE (origin, olsn));
INSERT INTO es_meta VALUES ('epoch', replace(gen_random_uuid()::text, '-', '')), ('pruned_seq', '0')
ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS es_hubs (
  id text PRIMARY KEY,
  instance text NOT NULL,
  expires_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS es_shard_leases (
  shard integer PRIMARY KEY,
  owner text NOT NULL DEFAULT '',
  expires_at timestamptz NOT NULL DEFAULT '-infinity',
  version bigint NOT NULL DEFAULT 0);
INSERT INTO es_meta VALUES ('schema_version', '2');
)sql";

// What schema 3 added on top (its migration 3 and the data step's DDL).
constexpr char kSchema3AddedSql[] = R"sql(
ALTER TABLE es_origins ADD COLUMN IF NOT EXISTS shard smallint NOT NULL DEFAULT 0;
ALTER TABLE es_region_feed ADD COLUMN IF NOT EXISTS shard smallint NOT NULL DEFAULT 0;
ALTER TABLE es_region_feed ADD COLUMN IF NOT EXISTS shard_seq bigint;
CREATE TABLE IF NOT EXISTS es_feed_shards (
  shard integer PRIMARY KEY,
  seq bigint NOT NULL,
  pruned bigint NOT NULL);
ALTER TABLE es_region_feed ALTER COLUMN shard_seq SET NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS es_region_feed_shard_seq ON es_region_feed (shard, shard_seq);
UPDATE es_meta SET value = '3' WHERE key = 'schema_version';
)sql";

const std::string kEpoch = "0123456789abcdef0123456789abcdef";

std::string GatewayOfShard(int shard, const std::string& not_this) {
  for (int i = 0;; ++i) {
    std::string id = "gw-m" + std::to_string(i);
    if (RegionShardOf(id) == shard && id != not_this) return id;
  }
}

std::string DoubleText(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// SQL text literal.
std::string Lit(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

// One row of the old per-entry feed, and the entry it must read back as.
struct OldRow {
  int64_t seq = 0;        // apply order (es_feed_seq)
  int64_t origin_id = 0;  // es_origins.id
  int shard = 0;
  int64_t shard_seq = 0;  // schema 3 only; schema 2's is its seq
  RegionFeedEntry entry;
  int64_t applied_ms = 0;
};

class PgMigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pg_.Start()) << pg_.log();
    ASSERT_TRUE(pg_.CreateDatabase("hub"));
    gateways_ = {"gw-a", "", ""};
    gateways_[1] = GatewayOfShard((RegionShardOf("gw-a") + 5) % kRegionShards, "");
    gateways_[2] = GatewayOfShard(RegionShardOf("gw-a"), "gw-a");  // shares gw-a's shard
  }

  // Batches as the old hubs applied them: (origin index, first LSN, count),
  // each entry numbered in apply order; one batch of device records.
  std::vector<OldRow> MakeRows(bool per_shard_numbers) {
    struct B {
      int origin;
      uint64_t first, n;
      bool devices;
    };
    const B batches[] = {{0, 1, 10, false}, {1, 1, 5, false}, {2, 1, 2, true},  {0, 11, 10, false},
                         {2, 3, 4, false},  {1, 6, 3, false}, {0, 21, 1, false}};
    std::vector<OldRow> rows;
    int64_t seq = 0;
    int64_t shard_seq[kRegionShards] = {};
    int64_t applied = 1'700'000'000'000;
    for (const B& b : batches) {
      applied += 1000;
      for (uint64_t k = 0; k < b.n; ++k) {
        OldRow r;
        r.seq = ++seq;
        r.origin_id = b.origin + 1;
        r.shard = RegionShardOf(gateways_[b.origin]);
        r.shard_seq = per_shard_numbers ? ++shard_seq[r.shard] : r.seq;
        r.applied_ms = applied;
        RegionFeedEntry& e = r.entry;
        e.shard = r.shard;
        e.seq = static_cast<uint64_t>(r.shard_seq);
        e.remote.origin = Origin{gateways_[b.origin], kEpoch};
        e.remote.origin_lsn = b.first + k;
        ChangeEntry& c = e.remote.entry;
        c.lsn = e.remote.origin_lsn;
        if (b.devices) {
          c.kind = k == 0 ? ChangeEntry::Kind::kDeviceUpsert : ChangeEntry::Kind::kDeviceDelete;
          c.device = k == 0 ? DeviceRecord{"dev-9", "Boiler\nroom", "Basement \\ north", "C", false}
                            : DeviceRecord{"dev-8", "", "", "", true};
        } else {
          const std::string dev = "dev-" + std::to_string(b.origin) + "-" + std::to_string(k % 3);
          c.reading = Reading{dev, k % 2 ? "temp" : "hum", 1'700'000'000'000 + static_cast<int64_t>(c.lsn) * 1000,
                              k == 3 ? 0.1 : static_cast<double>(c.lsn) * -2.5e-7, k % 2 ? "C\\x" : "%",
                              static_cast<uint32_t>(k % 4 == 0 ? 2 : 0)};
        }
        rows.push_back(r);
      }
    }
    return rows;
  }

  // The feed rows as INSERT statements (schema 3 also fills shard numbers).
  std::string InsertSql(const std::vector<OldRow>& rows, bool schema3, const std::vector<uint64_t>& marks) {
    std::string sql;
    for (size_t i = 0; i < gateways_.size(); ++i) {
      sql += "INSERT INTO es_origins (id, gateway_id, epoch, high_water" + std::string(schema3 ? ", shard" : "") +
             ") VALUES (" + std::to_string(i + 1) + ", " + Lit(gateways_[i]) + ", " + Lit(kEpoch) + ", " +
             std::to_string(marks[i]) + (schema3 ? ", " + std::to_string(RegionShardOf(gateways_[i])) : "") + ");\n";
    }
    sql += "SELECT setval('es_origins_id_seq', " + std::to_string(gateways_.size()) + ");\n";
    for (const OldRow& r : rows) {
      const ChangeEntry& c = r.entry.remote.entry;
      const bool reading = c.kind == ChangeEntry::Kind::kReading;
      sql += "INSERT INTO es_region_feed (seq, origin, olsn, kind, device_id, metric, unit, ts, value, quality, "
             "name, location, default_unit, applied_ms" +
             std::string(schema3 ? ", shard, shard_seq" : "") + ") VALUES (" + std::to_string(r.seq) + ", " +
             std::to_string(r.origin_id) + ", " + std::to_string(c.lsn) + ", " +
             std::to_string(static_cast<int>(c.kind)) + ", " + Lit(c.device_id()) + ", " +
             (reading ? Lit(c.reading.metric) + ", " + Lit(c.reading.unit) + ", " + std::to_string(c.reading.ts_ms) +
                            ", " + DoubleText(c.reading.value) + ", " + std::to_string(c.reading.quality) +
                            ", NULL, NULL, NULL"
                      : "'', '', 0, 0, 0, " + Lit(c.device.name) + ", " + Lit(c.device.location) + ", " +
                            Lit(c.device.default_unit)) +
             ", " + std::to_string(r.applied_ms) +
             (schema3 ? ", " + std::to_string(r.shard) + ", " + std::to_string(r.shard_seq) : "") + ");\n";
    }
    sql += "SELECT setval('es_feed_seq', " + std::to_string(rows.back().seq) + ");\n";
    return sql;
  }

  std::unique_ptr<HubStore> Open() {
    HubStoreOptions o = HubStoreOptionsFor(pg_, "hub");
    o.feed_retention_ms = int64_t{100} * 365 * 86400 * 1000;  // the rows are from 2023: keep them
    std::unique_ptr<HubStore> hub;
    Status st = OpenPostgresHubStore(o, &hub);
    EXPECT_OK(st);
    return hub;
  }

  // Every entry from `after` on, in pages of `page_size` (so pages start
  // and end inside what one apply wrote).
  std::vector<RegionFeedEntry> ReadAllFrom(HubStore* hub, ShardPositions after, size_t page_size) {
    std::vector<RegionFeedEntry> all;
    FeedRead page;
    do {
      Status st = hub->ReadFeed(after, page_size, &page);
      EXPECT_OK(st);
      EXPECT_FALSE(page.reset);
      if (!st.ok() || page.reset) break;
      EXPECT_LE(page.entries.size(), page_size);
      all.insert(all.end(), page.entries.begin(), page.entries.end());
      after = page.next;
    } while (!page.entries.empty());
    return all;
  }

  // The feed reads back exactly the old rows in their apply order, from
  // every page size, and a write after the upgrade numbers on from the heads.
  void ExpectFeedServedAsBefore(const std::vector<OldRow>& served, const ShardPositions& pruned,
                                const ShardPositions& heads) {
    std::unique_ptr<HubStore> hub = Open();
    ASSERT_NE(hub, nullptr);
    EXPECT_EQ(hub->epoch(), epoch_);
    FeedBoundsInfo bounds;
    ASSERT_OK(hub->FeedBounds(&bounds));
    EXPECT_EQ(bounds.pruned, pruned);
    EXPECT_EQ(bounds.head, heads);
    EXPECT_GT(bounds.oldest, 0u);
    // A reader from before the pruned marks is reset, as before the upgrade.
    FeedRead page;
    if (pruned != ShardPositions{}) {
      ASSERT_OK(hub->ReadFeed(ShardPositions{}, 100, &page));
      EXPECT_TRUE(page.reset);
      EXPECT_EQ(page.next, pruned);
    }
    for (size_t page_size : {1u, 3u, 7u, 1000u}) {
      SCOPED_TRACE("pages of " + std::to_string(page_size));
      std::vector<RegionFeedEntry> got = ReadAllFrom(hub.get(), pruned, page_size);
      ASSERT_EQ(got.size(), served.size());
      for (size_t i = 0; i < got.size(); ++i) {
        SCOPED_TRACE("entry " + std::to_string(i));
        const RegionFeedEntry& want = served[i].entry;
        EXPECT_EQ(got[i].shard, want.shard);
        EXPECT_EQ(got[i].seq, want.seq);
        EXPECT_EQ(got[i].remote.origin, want.remote.origin);
        EXPECT_EQ(got[i].remote.origin_lsn, want.remote.origin_lsn);
        const ChangeEntry &g = got[i].remote.entry, &w = want.remote.entry;
        EXPECT_EQ(g.lsn, w.lsn);
        EXPECT_EQ(g.kind, w.kind);
        if (w.kind == ChangeEntry::Kind::kReading) {
          EXPECT_EQ(g.reading.device_id, w.reading.device_id);
          EXPECT_EQ(g.reading.metric, w.reading.metric);
          EXPECT_EQ(g.reading.unit, w.reading.unit);
          EXPECT_EQ(g.reading.ts_ms, w.reading.ts_ms);
          EXPECT_EQ(g.reading.value, w.reading.value);
          EXPECT_EQ(g.reading.quality, w.reading.quality);
        } else {
          EXPECT_EQ(g.device.device_id, w.device.device_id);
          EXPECT_EQ(g.device.name, w.device.name);
          EXPECT_EQ(g.device.location, w.device.location);
          EXPECT_EQ(g.device.default_unit, w.device.default_unit);
          EXPECT_EQ(g.device.deleted, w.device.deleted);
        }
      }
    }
    // A reader in the middle of the old feed resumes where it was.
    const size_t mid = served.size() / 2;
    ShardPositions at = pruned;
    for (size_t i = 0; i < mid; ++i) at[served[i].shard] = served[i].entry.seq;
    std::vector<RegionFeedEntry> rest = ReadAllFrom(hub.get(), at, 4);
    ASSERT_EQ(rest.size(), served.size() - mid);
    for (size_t i = 0; i < rest.size(); ++i) {
      EXPECT_EQ(rest[i].seq, served[mid + i].entry.seq);
      EXPECT_EQ(rest[i].remote.origin_lsn, served[mid + i].entry.remote.origin_lsn);
    }
    // The marks moved over; a resend is held, the next batch numbers on.
    const Origin a{gateways_[0], kEpoch};
    uint64_t hw = 0;
    ASSERT_OK(hub->HighWater(a, &hw));
    EXPECT_EQ(hw, 21u);
    std::vector<ChangeEntry> resend(1), next(2);
    resend[0] = served.back().entry.remote.entry;
    for (size_t k = 0; k < next.size(); ++k) {
      next[k].lsn = 22 + k;
      next[k].reading = Reading{"dev-0-0", "temp", 1'800'000'000'000, 1.5, "C", 0};
    }
    OriginBatch b;
    b.origin = a;
    b.entries = &resend;
    b.first_lsn = resend[0].lsn;
    ApplyResult r;
    ASSERT_OK(hub->Apply(b, &r));
    EXPECT_EQ(r.outcome, ApplyOutcome::kAlreadyHeld);
    b.entries = &next;
    b.first_lsn = 22;
    ASSERT_OK(hub->Apply(b, &r));
    EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
    const int shard = RegionShardOf(a.gateway_id);
    std::vector<RegionFeedEntry> after_write = ReadAllFrom(hub.get(), heads, 100);
    ASSERT_EQ(after_write.size(), 2u);
    EXPECT_EQ(after_write[0].shard, shard);
    EXPECT_EQ(after_write[0].seq, heads[shard] + 1);
    EXPECT_EQ(after_write[1].seq, heads[shard] + 2);
    EXPECT_EQ(after_write[1].remote.origin_lsn, 23u);
    // Opening again finds the schema current and the same feed.
    hub.reset();
    hub = Open();
    ASSERT_NE(hub, nullptr);
    EXPECT_EQ(ReadAllFrom(hub.get(), pruned, 1000).size(), served.size() + 2);
  }

  std::string ReadEpoch() {
    std::string out;
    EXPECT_TRUE(pg_.Query("hub", "SELECT value FROM es_meta WHERE key = 'epoch'", &out));
    return out.substr(0, out.find('\n'));
  }

  TempDir dir_;
  Postgres pg_{dir_.File("pg")};
  std::vector<std::string> gateways_;
  std::string epoch_;
};

TEST_F(PgMigrationTest, ASchema2DatabaseServesItsOldFeedAfterTheUpgrade) {
  std::vector<OldRow> rows = MakeRows(false);
  ASSERT_TRUE(pg_.Sql("hub", kSchema2Sql));
  ASSERT_TRUE(pg_.Sql("hub", InsertSql(rows, false, {21, 8, 6})));
  // Retention had pruned the first two entries (schema 2's one pruned mark).
  ASSERT_TRUE(pg_.Sql("hub", "DELETE FROM es_region_feed WHERE seq <= 2; "
                             "UPDATE es_meta SET value = '2' WHERE key = 'pruned_seq'"));
  epoch_ = ReadEpoch();
  ASSERT_EQ(epoch_.size(), 32u);
  rows.erase(rows.begin(), rows.begin() + 2);
  // Schema 3 kept each row's seq as its shard number and started every
  // shard's counter and pruned mark at the old ones.
  ShardPositions pruned{}, heads{};
  for (int s = 0; s < kRegionShards; ++s) pruned[s] = heads[s] = 2;
  for (const OldRow& r : rows) heads[r.shard] = std::max<uint64_t>(heads[r.shard], r.entry.seq);
  ExpectFeedServedAsBefore(rows, pruned, heads);
}

TEST_F(PgMigrationTest, ASchema3DatabaseServesItsOldFeedAfterTheUpgrade) {
  std::vector<OldRow> rows = MakeRows(true);
  ASSERT_TRUE(pg_.Sql("hub", kSchema2Sql));
  ASSERT_TRUE(pg_.Sql("hub", kSchema3AddedSql));
  ASSERT_TRUE(pg_.Sql("hub", InsertSql(rows, true, {21, 8, 6})));
  // gw-b's shard had its first two entries pruned; every other shard none.
  const int shard_b = RegionShardOf(gateways_[1]);
  ShardPositions pruned{}, heads{};
  pruned[shard_b] = 2;
  std::vector<OldRow> served;
  for (const OldRow& r : rows) {
    heads[r.shard] = std::max<uint64_t>(heads[r.shard], r.entry.seq);
    if (r.shard != shard_b || r.entry.seq > 2) served.push_back(r);
  }
  std::string shards_sql;
  for (int s = 0; s < kRegionShards; ++s) {
    shards_sql += "INSERT INTO es_feed_shards VALUES (" + std::to_string(s) + ", " + std::to_string(heads[s]) + ", " +
                  std::to_string(pruned[s]) + ");\n";
  }
  ASSERT_TRUE(pg_.Sql("hub", shards_sql + "DELETE FROM es_region_feed WHERE shard = " + std::to_string(shard_b) +
                                 " AND shard_seq <= 2"));
  epoch_ = ReadEpoch();
  ExpectFeedServedAsBefore(served, pruned, heads);
}

#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync::test
