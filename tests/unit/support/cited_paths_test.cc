// Every project path a doc or a comment cites must exist: a renamed or
// deleted file otherwise leaves readers following a dead reference. Checks
// Markdown files whole and the comments of source, build and script files;
// #include lines are the compiler's to check (some name generated headers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace edgesync {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = EDGESYNC_SOURCE_DIR;

bool IsBuildOrVcs(const fs::path& rel) {
  std::string first = rel.begin()->string();
  return first == ".git" || first.rfind("build", 0) == 0;
}

enum class CommentStyle { kWholeFile, kSlashes, kHash, kNone };

CommentStyle StyleOf(const fs::path& p) {
  std::string ext = p.extension().string();
  std::string name = p.filename().string();
  if (ext == ".md") return CommentStyle::kWholeFile;
  if (ext == ".h" || ext == ".cc" || ext == ".fbs" || ext == ".html") return CommentStyle::kSlashes;
  if (ext == ".sh" || ext == ".mk" || ext == ".cmake" || ext == ".toml" || ext == ".conf" || ext == ".service" ||
      ext == ".acl" || name == "Makefile" || name == "CMakeLists.txt" || name == "run" ||
      name == "edgesync-region-auth" || name == "postinst" || name == "postrm" || name == "prerm") {
    return CommentStyle::kHash;
  }
  return CommentStyle::kNone;
}

// The commented part of each line, or the whole text of a doc.
std::string CitingText(const fs::path& file, CommentStyle style) {
  std::ifstream in(file);
  std::stringstream all;
  all << in.rdbuf();
  if (style == CommentStyle::kWholeFile) return all.str();
  std::string out, line;
  std::istringstream lines(all.str());
  while (std::getline(lines, line)) {
    if (line.rfind("#include", 0) == 0) continue;
    size_t at = style == CommentStyle::kSlashes ? line.find("//") : line.find('#');
    if (at != std::string::npos) out += line.substr(at) + "\n";
  }
  return out;
}

// A cited path exists as a file or folder; `sync/columns.{h,cc}` and
// `sync/uplink.*` cite every file of that stem.
bool Exists(const std::string& cited) {
  if (fs::exists(kRoot / cited)) return true;
  fs::path p = kRoot / cited;
  if (!fs::is_directory(p.parent_path())) return false;
  for (const auto& e : fs::directory_iterator(p.parent_path())) {
    if (e.path().stem() == p.filename()) return true;
  }
  return false;
}

TEST(CitedPathsTest, EveryPathADocOrCommentCitesExists) {
  // A path starts at a top-level folder of the project, not inside another
  // path (build/tests/..., /usr/lib/...) or a placeholder (<data_dir>/...).
  const std::regex cited(
      R"((^|[^A-Za-z0-9_./<>$-])((agent|sync|store|platform|firmware-config|tests|docs|cmake)/[A-Za-z0-9_./-]*[A-Za-z0-9_]))");
  std::set<std::string> missing;
  size_t files = 0, citations = 0;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator(); ++it) {
    fs::path rel = fs::relative(it->path(), kRoot);
    if (IsBuildOrVcs(rel) || rel.string().rfind("tests/fuzz/corpus", 0) == 0) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    CommentStyle style = StyleOf(rel);
    if (style == CommentStyle::kNone) continue;
    ++files;
    std::string text = CitingText(it->path(), style);
    for (std::sregex_iterator m(text.begin(), text.end(), cited), end; m != end; ++m) {
      ++citations;
      std::string path = (*m)[2].str();
      if (!Exists(path)) missing.insert(path + " (cited in " + rel.string() + ")");
    }
  }
  EXPECT_GT(files, 100u);
  EXPECT_GT(citations, 300u);
  for (const std::string& m : missing) ADD_FAILURE() << "no such path: " << m;
}

TEST(CitedPathsTest, TheCheckFindsAMissingPath) {
  EXPECT_TRUE(Exists("store/store.h"));
  EXPECT_TRUE(Exists("sync/uplink"));  // sync/uplink.*
  EXPECT_TRUE(Exists("docs"));
  EXPECT_FALSE(Exists("store/no_such_file.h"));
  EXPECT_FALSE(Exists("no_such_folder/x.h"));
}

}  // namespace
}  // namespace edgesync
