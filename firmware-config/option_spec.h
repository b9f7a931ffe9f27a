// firmware-config/option_spec.h: how one config option is read, checked and
// shown (internal to firmware-config/config.cc, which declares every option
// once in its table). Kept apart so the table reads as a table.
//
// Thread safety: values and pure functions.
#ifndef EDGESYNC_FIRMWARE_CONFIG_OPTION_SPEC_H_
#define EDGESYNC_FIRMWARE_CONFIG_OPTION_SPEC_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <toml.hpp>
#include <vector>

#include "firmware-config/config.h"

namespace edgesync {
namespace config_internal {

// How one option is read, checked and shown. Accessors instead of member
// pointers because some options live in nested structs (TLS, regions).
template <typename Target>
struct OptionSpec {
  std::string section;  // "" for array-of-table items (regions)
  std::string key;
  std::string doc;
  std::string accepts;  // what values are valid, as docs/CONFIG.md shows it ("" = any of its type)
  // An option an operator decides for a deployment (identity, links, trust,
  // retention, the power-cut loss window, limits): the shipped example lists
  // these; the rest are tuning whose defaults fit, listed in docs/CONFIG.md.
  bool operator_decides = false;
  std::function<std::string(const Target&)> show;  // value as TOML text
  // Reads v into target; returns an error message or "".
  std::function<std::string(Target&, const toml::value&)> read;
};

// A TOML basic string; control characters escaped, so what `config check`
// prints always parses again.
inline std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Marks a table row as one the example config lists (operator_decides).
template <typename Target>
OptionSpec<Target> Operator(OptionSpec<Target> o) {
  o.operator_decides = true;
  return o;
}

inline std::string ShowDouble(double d) {
  std::ostringstream ss;
  ss << d;
  std::string s = ss.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

template <typename Target>
OptionSpec<Target> Str(std::string section, std::string key, std::function<std::string&(Target&)> at,
                       std::string doc, std::vector<std::string> choices = {}) {
  OptionSpec<Target> o;
  o.section = std::move(section);
  o.key = std::move(key);
  o.doc = std::move(doc);
  for (const auto& c : choices) o.accepts += (o.accepts.empty() ? "" : ", ") + c;
  o.show = [at](const Target& t) { return Quote(at(const_cast<Target&>(t))); };
  o.read = [at, choices](Target& t, const toml::value& v) -> std::string {
    if (!v.is_string()) return "expected a string, found " + toml::stringize(v.type());
    std::string s = v.as_string().str;
    if (!choices.empty()) {
      bool found = false;
      std::string all;
      for (const auto& c : choices) {
        found = found || c == s;
        all += (all.empty() ? "" : ", ") + c;
      }
      if (!found) return "\"" + s + "\" is not one of: " + all;
    }
    at(t) = s;
    return "";
  };
  return o;
}

template <typename Target>
OptionSpec<Target> Bool(std::string section, std::string key, std::function<bool&(Target&)> at, std::string doc) {
  OptionSpec<Target> o;
  o.section = std::move(section);
  o.key = std::move(key);
  o.doc = std::move(doc);
  o.show = [at](const Target& t) { return std::string(at(const_cast<Target&>(t)) ? "true" : "false"); };
  o.read = [at](Target& t, const toml::value& v) -> std::string {
    if (!v.is_boolean()) return "expected true or false, found " + toml::stringize(v.type());
    at(t) = v.as_boolean();
    return "";
  };
  return o;
}

template <typename Target>
OptionSpec<Target> Int(std::string section, std::string key, std::function<int64_t&(Target&)> at, int64_t min,
                       int64_t max, std::string doc) {
  OptionSpec<Target> o;
  o.section = std::move(section);
  o.key = std::move(key);
  o.doc = std::move(doc);
  // The table's "no real limit" (2^50) reads as an open range.
  o.accepts = max >= (int64_t{1} << 50) ? ">= " + std::to_string(min) : std::to_string(min) + " .. " + std::to_string(max);
  o.show = [at](const Target& t) { return std::to_string(at(const_cast<Target&>(t))); };
  o.read = [at, min, max](Target& t, const toml::value& v) -> std::string {
    if (!v.is_integer()) return "expected an integer, found " + toml::stringize(v.type());
    int64_t i = v.as_integer();
    if (i < min || i > max) {
      return std::to_string(i) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    }
    at(t) = i;
    return "";
  };
  return o;
}

template <typename Target>
OptionSpec<Target> Real(std::string section, std::string key, std::function<double&(Target&)> at, double min,
                        double max, std::string doc) {
  OptionSpec<Target> o;
  o.section = std::move(section);
  o.key = std::move(key);
  o.doc = std::move(doc);
  o.accepts = max >= 1e15 ? ">= " + ShowDouble(min) : ShowDouble(min) + " .. " + ShowDouble(max);
  o.show = [at](const Target& t) { return ShowDouble(at(const_cast<Target&>(t))); };
  o.read = [at, min, max](Target& t, const toml::value& v) -> std::string {
    double d;
    if (v.is_floating()) {
      d = v.as_floating();
    } else if (v.is_integer()) {
      d = static_cast<double>(v.as_integer());
    } else {
      return "expected a number, found " + toml::stringize(v.type());
    }
    if (!std::isfinite(d) || d < min || d > max) {
      return ShowDouble(d) + " is out of range [" + ShowDouble(min) + ", " + ShowDouble(max) + "]";
    }
    at(t) = d;
    return "";
  };
  return o;
}

template <typename Target>
OptionSpec<Target> StrList(std::string section, std::string key,
                           std::function<std::vector<SubscriptionConfig>&(Target&)> at, std::string doc) {
  OptionSpec<Target> o;
  o.section = std::move(section);
  o.key = std::move(key);
  o.doc = std::move(doc);
  o.show = [at](const Target& t) {
    std::string s = "[";
    for (const auto& sub : at(const_cast<Target&>(t))) s += (s.size() > 1 ? ", " : "") + Quote(sub.pattern);
    return s + "]";
  };
  o.read = [at](Target& t, const toml::value& v) -> std::string {
    if (!v.is_array()) return "expected an array of strings, found " + toml::stringize(v.type());
    std::vector<SubscriptionConfig> subs;
    for (const auto& item : v.as_array()) {
      if (!item.is_string()) return "expected an array of strings";
      std::string p = item.as_string().str;
      // The one rule a user meets first; the rest of the pattern grammar is
      // TopicPattern's (agent/ingest), applied by `config check` and at start.
      // Without placeholders the device comes from the payload (SenML bn).
      if (p.find("{metric}") != std::string::npos && p.find("{deviceId}") == std::string::npos) {
        return "pattern \"" + p + "\": {metric} needs {deviceId} too";
      }
      subs.push_back({p});
    }
    if (subs.empty()) return "at least one subscription is needed";
    at(t) = subs;
    return "";
  };
  return o;
}

}  // namespace config_internal
}  // namespace edgesync

#endif  // EDGESYNC_FIRMWARE_CONFIG_OPTION_SPEC_H_
