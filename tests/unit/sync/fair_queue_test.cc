// FairQueue, the region hub's receive queue: a key holds at most its share,
// the queue at most its capacity, and Take serves keys in turn, each key's
// items in their order.
#include "sync/fair_queue.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <map>
#include <string>
#include <vector>

namespace edgesync {
namespace {

TEST(FairQueueTest, OneKeyCannotFillTheQueueNorTakeMoreThanItsTurns) {
  FairQueue<std::string> q(1024, 128);
  // One sender floods: it gets its share, no more.
  int taken = 0;
  for (int i = 0; i < 5000; ++i) taken += q.Push("flood", "f" + std::to_string(i));
  EXPECT_EQ(taken, 128);
  EXPECT_EQ(q.held("flood"), 128u);
  // Nine others still find room, and each is served within one round.
  for (int g = 0; g < 9; ++g) {
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(q.Push("gw-" + std::to_string(g), std::to_string(i)));
  }
  std::vector<std::string> out;
  q.Take(10, &out);
  ASSERT_EQ(out.size(), 10u);
  std::map<std::string, int> firsts;
  for (const std::string& s : out) ++firsts[s.substr(0, 1)];
  EXPECT_EQ(firsts["f"], 1) << "the flooder took more than one turn in ten";
  // Each key's items in order; the flooder's turns continue after the others run dry.
  out.clear();
  q.Take(1000, &out);
  std::map<std::string, std::vector<std::string>> seen;
  int flood_before_others_done = 0, others_left = 9 * 3 - 9;
  for (const std::string& s : out) {
    if (s[0] == 'f') {
      if (others_left > 0) ++flood_before_others_done;
    } else {
      --others_left;
    }
  }
  EXPECT_LE(flood_before_others_done, 2) << "the flooder was served ahead of its turns";
  EXPECT_TRUE(q.empty());
}

TEST(FairQueueTest, CostlyItemsTakeTurnsWorthOfCredit) {
  // Batches cost 1, feed requests 16, a turn is worth 4 (the hub's figures).
  FairQueue<std::string> q(1024, 128, 4);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(q.Push("flood", "f", 16));
  for (int g = 0; g < 9; ++g) {
    for (int i = 0; i < 12; ++i) EXPECT_TRUE(q.Push("gw-" + std::to_string(g), std::to_string(i)));
  }
  std::vector<std::string> out;
  q.Take(64, &out);
  ASSERT_EQ(out.size(), 64u);
  for (const std::string& s : out) EXPECT_NE(s, "f") << "a feed request went before its credit allowed";
  q.Take(1000, &out);
  ASSERT_EQ(out.size(), 208u);
  // Every gateway's twelve batches went in three turns, before the flood's first request.
  size_t first_flood = std::find(out.begin(), out.end(), "f") - out.begin();
  EXPECT_EQ(first_flood, 108u);
  EXPECT_TRUE(q.empty());
}

TEST(FairQueueTest, CapacityBoundsTheWholeQueue) {
  FairQueue<int> q(10, 4);
  int accepted = 0;
  for (int k = 0; k < 5; ++k) {
    for (int i = 0; i < 4; ++i) accepted += q.Push("k" + std::to_string(k), i);
  }
  EXPECT_EQ(accepted, 10);
  EXPECT_EQ(q.size(), 10u);
  std::vector<int> out;
  q.Take(100, &out);
  EXPECT_EQ(out.size(), 10u);
  // A key's items come in the order they were pushed.
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[3], 1);
  EXPECT_TRUE(q.Push("k0", 7));
}

}  // namespace
}  // namespace edgesync
