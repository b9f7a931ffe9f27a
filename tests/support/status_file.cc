#include "tests/support/status_file.h"

#include "platform/files.h"

namespace edgesync::test {

nlohmann::json ReadStatusFile(const std::string& path) {
  std::string text;
  if (!ReadFile(path, &text).ok()) return nlohmann::json::object();
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

namespace detail {

int64_t StatusNumber(const nlohmann::json& status, const std::string& section, const std::string& key) {
  const nlohmann::json* sec = &status;
  if (!section.empty()) {
    auto it = status.find(section);
    if (it == status.end() || !it->is_object()) return 0;
    sec = &*it;
  }
  auto v = sec->find(key);
  if (v == sec->end()) return 0;
  if (v->is_boolean()) return v->get<bool>() ? 1 : 0;
  return v->is_number() ? v->get<int64_t>() : 0;
}

}  // namespace detail

}  // namespace edgesync::test
