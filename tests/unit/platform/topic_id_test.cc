#include "platform/topic_id.h"

#include <gtest/gtest.h>

#include <string>

namespace edgesync {
namespace {

TEST(TopicIdTest, LettersDigitsUnderscoreAndDashUpToSixtyFour) {
  EXPECT_TRUE(IsTopicId("gw-07_eu"));
  EXPECT_TRUE(IsTopicId(std::string(kMaxTopicIdLength, 'a')));
  EXPECT_FALSE(IsTopicId(""));
  EXPECT_FALSE(IsTopicId(std::string(kMaxTopicIdLength + 1, 'a')));
}

TEST(TopicIdTest, RefusesWhatABrokerOrAnAclWouldReadAsSyntax) {
  for (const char* bad : {"a/b", "+", "#", "a b", "a.b", "%u", "é", "a\nb", "$SYS"}) {
    EXPECT_FALSE(IsTopicId(bad)) << bad;
  }
  EXPECT_FALSE(IsTopicId(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace edgesync
