// The dead letter table through its own API on a real SQLite file of the
// store's schema: only the newest `cap` letters are kept, every one ever
// added is counted, and a letter's topic, reason and payload head are
// bounded.
#include "store/dead_letter_table.h"

#include <sqlite3.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

TEST(DeadLetterTableTest, OnlyTheNewestAreKeptAndEveryOneIsCounted) {
  TempDir dir;
  Db db;
  ASSERT_OK(db.Open(dir.File("letters.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  ASSERT_OK(CreateSchema(&db, kSchemaVersion));
  std::vector<DeadLetter> letters;
  for (int i = 0; i < 5; ++i) {
    DeadLetter d;
    d.at_ms = 1000 + i;
    d.topic = "sensors/dev-" + std::to_string(i);
    d.head = std::string(300, static_cast<char>('a' + i));
    d.head[0] = '\0';  // payload bytes, not text
    d.reason = "not a reading";
    letters.push_back(d);
  }
  ASSERT_OK(dead_letter_table::Add(&db, letters, 3));
  ASSERT_OK(dead_letter_table::Add(&db, {letters[0]}, 3));
  std::vector<DeadLetter> kept;
  ASSERT_OK(dead_letter_table::List(&db, 10, &kept));
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].at_ms, 1000) << "newest first";
  EXPECT_EQ(kept[1].at_ms, 1004);
  EXPECT_EQ(kept[2].at_ms, 1003);
  EXPECT_EQ(kept[1].head.size(), 256u) << "the payload's head is bounded";
  EXPECT_EQ(kept[1].head[0], '\0');
  EXPECT_EQ(kept[1].topic, "sensors/dev-4");
  int64_t total = 0;
  ASSERT_OK(db.QueryInt("SELECT value FROM meta WHERE key='dead_letters'", &total));
  EXPECT_EQ(total, 6);
  ASSERT_OK(dead_letter_table::List(&db, 1, &kept));
  EXPECT_EQ(kept.size(), 1u);
}

TEST(DeadLetterTableTest, ATopicAndReasonAreCutAtOneKibAndNothingIsAddedForNoLetters) {
  TempDir dir;
  Db db;
  ASSERT_OK(db.Open(dir.File("letters.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  ASSERT_OK(CreateSchema(&db, kSchemaVersion));
  ASSERT_OK(dead_letter_table::Add(&db, {}, 10));
  int64_t total = -1;
  ASSERT_OK(db.QueryInt("SELECT count(*) FROM meta WHERE key='dead_letters'", &total));
  EXPECT_EQ(total, 0) << "no letters, no count";
  DeadLetter d;
  d.at_ms = 7;
  d.topic = std::string(5000, 't');
  d.reason = std::string(2000, 'r');
  d.head = "{\"v\":";
  ASSERT_OK(dead_letter_table::Add(&db, {d}, 10));
  std::vector<DeadLetter> kept;
  ASSERT_OK(dead_letter_table::List(&db, 10, &kept));
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].topic, std::string(1024, 't'));
  EXPECT_EQ(kept[0].reason, std::string(1024, 'r'));
  EXPECT_EQ(kept[0].head, d.head) << "a short head is kept whole";
  EXPECT_EQ(kept[0].at_ms, 7);
}

}  // namespace
}  // namespace edgesync::test
