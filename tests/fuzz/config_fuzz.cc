// Fuzz target: config files come from operators and from packaging scripts;
// whatever the text, ParseConfig must return errors (file, line, key), never
// crash or hang. A file it accepts must survive `config check`'s round trip:
// the effective configuration it prints parses again to the same options.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "firmware-config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<edgesync::ConfigError> errors;
  for (edgesync::ConfigRole role :
       {edgesync::ConfigRole::kAny, edgesync::ConfigRole::kGateway, edgesync::ConfigRole::kRegion}) {
    edgesync::Config config;
    if (!edgesync::ParseConfig(text, "fuzz.toml", role, &config, &errors).ok()) continue;
    std::string dumped = edgesync::DumpConfig(config);
    edgesync::Config again;
    if (!edgesync::ParseConfig(dumped, "fuzz.toml", role, &again, &errors).ok()) std::abort();
    if (edgesync::DumpConfig(again) != dumped) std::abort();
  }
  return 0;
}
