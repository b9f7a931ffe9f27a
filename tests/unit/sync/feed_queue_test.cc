// FeedQueue, the region hub's queue of feed requests: one request per
// sender, the newest; senders served in turn; a bounded number of senders.
#include "sync/feed_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace edgesync {
namespace {

using Pushed = FeedQueue<int>::Pushed;

TEST(FeedQueueTest, ANewerRequestSupersedesTheQueuedOneOfItsSender) {
  FeedQueue<int> q(8);
  EXPECT_EQ(q.Push("gw-1", 1), Pushed::kQueued);
  EXPECT_EQ(q.Push("gw-1", 2), Pushed::kSuperseded);
  EXPECT_EQ(q.Push("gw-1", 3), Pushed::kSuperseded);
  EXPECT_EQ(q.size(), 1u);
  std::string key;
  int item = 0;
  ASSERT_TRUE(q.Take(&key, &item));
  EXPECT_EQ(key, "gw-1");
  EXPECT_EQ(item, 3) << "the newest request is the one answered";
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.Take(&key, &item));
  // Once taken, the sender's next request is queued anew, not superseding.
  EXPECT_EQ(q.Push("gw-1", 4), Pushed::kQueued);
}

TEST(FeedQueueTest, AFloodingSenderGetsOnePagePerRoundOfTheOthers) {
  FeedQueue<int> q(64);
  // The flooder asks before everybody else and keeps asking between pages.
  int flood = 0;
  q.Push("flood", flood++);
  for (int g = 0; g < 9; ++g) EXPECT_EQ(q.Push("gw-" + std::to_string(g), g), Pushed::kQueued);
  std::map<std::string, int> served;
  std::string key;
  int item = 0;
  for (int page = 0; page < 30; ++page) {
    for (int i = 0; i < 100; ++i) q.Push("flood", flood++);  // 100 requests per page built
    ASSERT_TRUE(q.Take(&key, &item));
    ++served[key];
    if (key == "flood") {
      EXPECT_EQ(item, flood - 1) << "a superseded request was answered";
    } else {
      EXPECT_EQ(q.Push(key, item), Pushed::kQueued);  // each reader asks again after its page
    }
  }
  // Ten senders in turn: each got three of the thirty pages.
  ASSERT_EQ(served.size(), 10u);
  for (const auto& [sender, pages] : served) EXPECT_EQ(pages, 3) << sender;
}

TEST(FeedQueueTest, AReaderAloneGetsItsPagesBackToBack) {
  FeedQueue<int> q(4);
  std::string key;
  int item = 0;
  for (int page = 0; page < 100; ++page) {
    ASSERT_EQ(q.Push("gw-1", page), Pushed::kQueued);
    ASSERT_TRUE(q.Take(&key, &item));
    EXPECT_EQ(item, page);
  }
}

TEST(FeedQueueTest, NewSendersAreRefusedWhenMaxKeysWaitButWaitingOnesMayStillAsk) {
  FeedQueue<std::string> q(2);
  EXPECT_EQ(q.Push("a", "a1"), FeedQueue<std::string>::Pushed::kQueued);
  EXPECT_EQ(q.Push("b", "b1"), FeedQueue<std::string>::Pushed::kQueued);
  EXPECT_EQ(q.Push("c", "c1"), FeedQueue<std::string>::Pushed::kRefused);
  EXPECT_EQ(q.Push("a", "a2"), FeedQueue<std::string>::Pushed::kSuperseded);
  EXPECT_EQ(q.size(), 2u);
  std::vector<std::string> order;
  std::string key, item;
  ASSERT_TRUE(q.Take(&key, &item));
  order.push_back(item);
  // Room again: c is queued behind b.
  EXPECT_EQ(q.Push("c", "c2"), FeedQueue<std::string>::Pushed::kQueued);
  while (q.Take(&key, &item)) order.push_back(item);
  // A superseding request keeps its sender's place in turn.
  EXPECT_EQ(order, (std::vector<std::string>{"a2", "b1", "c2"}));
}

}  // namespace
}  // namespace edgesync
