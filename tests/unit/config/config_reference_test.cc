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

// The example config lists only the options an operator decides; this page
// is where every other one is found, each in its section's table at its
// default.
TEST(ConfigReferenceTest, EveryOptionIsInTheDocsPage) {
  std::ifstream in(std::string(EDGESYNC_SOURCE_DIR) + "/docs/CONFIG.md");
  ASSERT_TRUE(in.good()) << "docs/CONFIG.md is missing";
  std::stringstream read;
  read << in.rdbuf();
  const std::string page = read.str();
  for (const auto& o : ListOptions()) {
    const std::string section = o.key.substr(0, o.key.find('.'));
    const std::string heading = section == "region" ? "\n## [[region]]\n" : "\n## [" + section + "]\n";
    size_t begin = page.find(heading);
    ASSERT_NE(begin, std::string::npos) << heading;
    size_t end = page.find("\n## ", begin + 1);
    std::string value;
    for (char c : o.default_toml) value += c == '|' ? std::string("\\|") : std::string(1, c);
    const std::string row = "\n| `" + o.key.substr(section.size() + 1) + "` | `" + value + "` |";
    size_t at = page.find(row, begin);
    EXPECT_TRUE(at != std::string::npos && at < end) << o.key << ": no row " << row;
  }
}

}  // namespace
}  // namespace edgesync
