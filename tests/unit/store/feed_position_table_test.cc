// feed_position_table through its own API on a real SQLite file holding
// the two tables it writes (meta, checkpoints): a position round trip, the
// rule that no shard moves back within an epoch, and a store from before
// shards.
#include "store/feed_position_table.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/checkpoint_names.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const char kEpochA[] = "0123456789abcdef0123456789abcdef";
const char kEpochB[] = "fedcba9876543210fedcba9876543210";

class FeedPositionTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("positions.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db_.Exec("CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID"));
    ASSERT_OK(db_.Exec("CREATE TABLE checkpoints(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID"));
  }
  static FeedPosition At(const char* epoch, uint64_t first, uint64_t rest) {
    FeedPosition p;
    p.epoch = epoch;
    p.shards.fill(rest);
    p.shards[0] = first;
    return p;
  }
  int64_t Checkpoint(const std::string& region) {
    int64_t v = -1;
    EXPECT_OK(db_.QueryInt("SELECT value FROM checkpoints WHERE name='" + checkpoint::FeedOf(region) + "'", &v));
    return v;
  }
  TempDir dir_;
  Db db_;
};

TEST_F(FeedPositionTableTest, APositionReadsBackAsWrittenWithTheHighestShardAsTheCheckpoint) {
  FeedPosition none;
  ASSERT_OK(feed_position_table::Read(&db_, "eu", &none));
  EXPECT_EQ(none.epoch, "");
  EXPECT_EQ(none.single_seq, 0u);
  for (uint64_t s : none.shards) EXPECT_EQ(s, 0u);

  ASSERT_OK(feed_position_table::Write(&db_, "eu", At(kEpochA, 70, 12), false));
  ASSERT_OK(feed_position_table::Write(&db_, "us", At(kEpochB, 3, 5), false));
  FeedPosition eu, us;
  ASSERT_OK(feed_position_table::Read(&db_, "eu", &eu));
  ASSERT_OK(feed_position_table::Read(&db_, "us", &us));
  EXPECT_EQ(eu.epoch, kEpochA);
  EXPECT_EQ(eu.shards, At(kEpochA, 70, 12).shards);
  EXPECT_EQ(us.epoch, kEpochB);
  EXPECT_EQ(us.shards, At(kEpochB, 3, 5).shards);
  EXPECT_EQ(Checkpoint("eu"), 70);
  EXPECT_EQ(Checkpoint("us"), 5);
}

TEST_F(FeedPositionTableTest, NoShardMovesBackWithinAnEpochUnlessTheHubSaidReset) {
  ASSERT_OK(feed_position_table::Write(&db_, "eu", At(kEpochA, 70, 12), false));
  Status back = feed_position_table::Write(&db_, "eu", At(kEpochA, 69, 12), false);
  EXPECT_EQ(back.code(), Status::Code::kInvalidArgument) << back.ToString();
  FeedPosition held;
  ASSERT_OK(feed_position_table::Read(&db_, "eu", &held));
  EXPECT_EQ(held.shards[0], 70u) << "a refused move writes nothing";
  // A reset, or another epoch (a new hub store), may start lower.
  ASSERT_OK(feed_position_table::Write(&db_, "eu", At(kEpochA, 10, 0), true));
  ASSERT_OK(feed_position_table::Read(&db_, "eu", &held));
  EXPECT_EQ(held.shards[0], 10u);
  ASSERT_OK(feed_position_table::Write(&db_, "eu", At(kEpochB, 1, 0), false));
  ASSERT_OK(feed_position_table::Read(&db_, "eu", &held));
  EXPECT_EQ(held.epoch, kEpochB);
  EXPECT_EQ(held.shards[0], 1u);
  EXPECT_EQ(Checkpoint("eu"), 1);
}

TEST_F(FeedPositionTableTest, AStoreFromBeforeShardsStartsOverAndSaysSo) {
  ASSERT_OK(db_.Exec("INSERT INTO checkpoints(name, value) VALUES('" + checkpoint::FeedOf("eu") + "', 4242)"));
  FeedPosition p;
  ASSERT_OK(feed_position_table::Read(&db_, "eu", &p));
  EXPECT_EQ(p.single_seq, 4242u);
  EXPECT_EQ(p.epoch, "");
  for (uint64_t s : p.shards) EXPECT_EQ(s, 0u);
}

TEST_F(FeedPositionTableTest, BadInputIsRefusedAndDamageIsNamed) {
  EXPECT_TRUE(feed_position_table::Write(&db_, "", At(kEpochA, 1, 1), false).code() == Status::Code::kInvalidArgument);
  EXPECT_TRUE(feed_position_table::Write(&db_, std::string(65, 'r'), At(kEpochA, 1, 1), false).code() == Status::Code::kInvalidArgument);
  EXPECT_TRUE(feed_position_table::Write(&db_, "eu", At("not-an-epoch", 1, 1), false).code() == Status::Code::kInvalidArgument);
  EXPECT_TRUE(
      feed_position_table::Write(&db_, "eu", At(kEpochA, uint64_t{1} << 63, 1), false).code() == Status::Code::kInvalidArgument);
  ASSERT_OK(db_.Exec("INSERT INTO meta(key, value) VALUES('feed_shards:eu', 'zz')"));
  FeedPosition p;
  Status st = feed_position_table::Read(&db_, "eu", &p);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.ToString().find("eu"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace edgesync::test
