// docs/CONFIG.md is generated from the option table, the one place each
// default and bound is written; a change to the table without the page (or a
// hand edit of the page) fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "firmware-config/config.h"

namespace edgesync {
namespace {

TEST(ConfigReferenceTest, DocsConfigPageIsTheGeneratedReference) {
  std::ifstream in(std::string(EDGESYNC_SOURCE_DIR) + "/docs/CONFIG.md");
  ASSERT_TRUE(in.good()) << "docs/CONFIG.md is missing";
  std::stringstream page;
  page << in.rdbuf();
  EXPECT_EQ(page.str(), ConfigReference())
      << "docs/CONFIG.md differs from the option table: regenerate it with "
         "`build/edgesync config reference > docs/CONFIG.md`";
}

TEST(ConfigReferenceTest, EveryOptionAppearsWithItsDefaultAndBounds) {
  std::string ref = ConfigReference();
  EXPECT_NE(ref.find("## [store]"), std::string::npos);
  EXPECT_NE(ref.find("## [[region]]"), std::string::npos);
  EXPECT_NE(ref.find("| `initial_ranges` |"), std::string::npos);
  EXPECT_NE(ref.find("| full, commit, normal |"), std::string::npos);
}

}  // namespace
}  // namespace edgesync
