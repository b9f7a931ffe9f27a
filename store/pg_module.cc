#include "store/pg_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>

#include "platform/log.h"

namespace edgesync {
namespace {

// The folder of the running program (/proc/self/exe with links resolved),
// "" when it cannot be read.
std::string ProgramDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

#ifdef EDGESYNC_HAVE_POSTGRESQL
std::mutex g_mu;
const PgModuleApi* g_api = nullptr;  // guarded by g_mu; set once, never cleared
#endif

}  // namespace

std::vector<std::string> PgModuleCandidates() {
  const char* env = std::getenv("EDGESYNC_PG_MODULE");
  if (env != nullptr && *env != '\0') return {env};
  std::vector<std::string> paths;
  std::string dir = ProgramDir();
  if (!dir.empty()) paths.push_back(dir + "/" + kPgModuleFile);
#ifdef EDGESYNC_PG_MODULE_DIR
  std::string installed = std::string(EDGESYNC_PG_MODULE_DIR) + "/" + kPgModuleFile;
  if (std::find(paths.begin(), paths.end(), installed) == paths.end()) paths.push_back(installed);
#endif
  return paths;
}

Status LoadPgModule(const PgModuleApi** api) {
#ifndef EDGESYNC_HAVE_POSTGRESQL
  *api = nullptr;
  return Status::Unsupported(
      "this edgesync was built without PostgreSQL support (libpq was not found at build time); "
      "use the embedded SQLite store or a build with libpq-dev");
#else
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_api != nullptr) {
    *api = g_api;
    return Status::Ok();
  }
  *api = nullptr;
  std::string tried;
  for (const std::string& path : PgModuleCandidates()) {
    bool exists = ::access(path.c_str(), F_OK) == 0;
    // RTLD_NOW: a symbol the module needs and the program lacks is an error
    // here, with its name, not a crash at the first call. RTLD_LOCAL: its own
    // symbols stay out of the program's scope.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      // dlerror() names the file for most failures, not for all.
      std::string line = why != nullptr ? why : "dlopen failed";
      if (line.find(path) == std::string::npos) line = path + ": " + line;
      tried += (tried.empty() ? "" : "; ") + line;
      // A file that is there but does not load is the module meant (a
      // broken install or a stale build): say so rather than try another.
      if (exists) {
        ES_LOG(kError, "PostgreSQL module {} does not load: {}", path, line);
        return Status::IoError("the PostgreSQL hub store module does not load: " + line);
      }
      continue;
    }
    ::dlerror();
    auto* entry = reinterpret_cast<const PgModuleApi* (*)()>(::dlsym(handle, kPgModuleSymbol));
    const PgModuleApi* table = entry != nullptr ? entry() : nullptr;
    std::string problem;
    if (entry == nullptr) {
      const char* why = ::dlerror();
      problem = std::string("no entry point ") + kPgModuleSymbol + (why != nullptr ? std::string(" (") + why + ")" : "");
    } else if (table == nullptr || table->abi != kPgModuleAbi || table->open_hub_store == nullptr ||
               table->open_shard_leases == nullptr) {
      problem = "built for another edgesync (module ABI " + std::to_string(table != nullptr ? table->abi : 0) +
                ", this program's " + std::to_string(kPgModuleAbi) + ")";
    } else if (std::string(table->version) != EDGESYNC_VERSION) {
      problem = std::string("built as edgesync ") + table->version + ", this program is " + EDGESYNC_VERSION;
    }
    if (!problem.empty()) {
      // Not dlclosed: its static constructors ran, and closing buys nothing
      // for a process that is about to report the error and stop.
      ES_LOG(kError, "PostgreSQL module {}: {}", path, problem);
      return Status::IoError("the PostgreSQL hub store module " + path + " is unusable: " + problem);
    }
    ES_LOG(kInfo, "PostgreSQL hub store module {} (edgesync {})", path, table->version);
    g_api = table;
    *api = table;
    return Status::Ok();
  }
  ES_LOG(kError, "no PostgreSQL hub store module: {}", tried);
  return Status::Unsupported("this edgesync has no PostgreSQL hub store module (the package installs " +
                             std::string(kPgModuleFile) + "; EDGESYNC_PG_MODULE names another file): tried " +
                             (tried.empty() ? std::string("nothing") : tried));
#endif
}

}  // namespace edgesync
