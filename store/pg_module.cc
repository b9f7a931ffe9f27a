#include "store/pg_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string_view>

#include "platform/log.h"
#include "platform/mutex.h"

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
// The program's side of the host table (PgModuleHost): its logger. The
// level crosses as an int; one the program does not know is not written.
bool HostLogEnabled(int level) {
  return level >= static_cast<int>(LogLevel::kTrace) && level < static_cast<int>(LogLevel::kOff) &&
         LogEnabled(static_cast<LogLevel>(level));
}

void HostLog(int level, const char* text, size_t size) {
  if (!HostLogEnabled(level) || text == nullptr) return;
  LogLine(static_cast<LogLevel>(level), std::string_view(text, size));
}

const PgModuleHost& Host() {
  static const PgModuleHost host = [] {
    PgModuleHost h;
    h.abi = kPgModuleAbi;
    h.version = EDGESYNC_VERSION;
    h.log_enabled = &HostLogEnabled;
    h.log = &HostLog;
    return h;
  }();
  return host;
}

// The ABI of a module without this program's entry point, judged by the
// entry point it has (ABI 1: kPgModuleSymbolV1, later ones
// edgesync_pg_module_v<N>); 0 when it has none of them.
int OtherAbi(void* handle) {
  if (::dlsym(handle, kPgModuleSymbolV1) != nullptr) return 1;
  for (uint32_t abi = 2; abi <= 64; ++abi) {
    if (abi == kPgModuleAbi) continue;
    std::string name = "edgesync_pg_module_v" + std::to_string(abi);
    if (::dlsym(handle, name.c_str()) != nullptr) return static_cast<int>(abi);
  }
  ::dlerror();
  return 0;
}

Mutex g_mu;
const PgModuleApi* g_api GUARDED_BY(g_mu) = nullptr;  // set once, never cleared
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
  MutexLock lock(&g_mu);
  if (g_api != nullptr) {
    *api = g_api;
    return Status::Ok();
  }
  *api = nullptr;
  std::string tried;
  for (const std::string& path : PgModuleCandidates()) {
    bool exists = ::access(path.c_str(), F_OK) == 0;
    // RTLD_NOW: a symbol the module needs and finds nowhere is an error
    // here, with its name, not a crash at the first call. RTLD_LOCAL: its
    // entry point stays out of the program's scope.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      // dlerror() names the file for most failures, not for all.
      std::string line = why != nullptr ? why : "dlopen failed";
      if (line.find(path) == std::string::npos) line = path + ": " + line;
      // An ABI 1 module takes its store code from the program, which no
      // longer exports any: it fails here, on the first such symbol.
      if (line.find("undefined symbol: _Z") != std::string::npos && line.find("8edgesync") != std::string::npos) {
        line += " (a module of ABI 1, entry point " + std::string(kPgModuleSymbolV1) +
                ", which takes its store code from the program; this program's module ABI is " +
                std::to_string(kPgModuleAbi) + ", edgesync " + EDGESYNC_VERSION + ")";
      }
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
    auto* entry = reinterpret_cast<const PgModuleApi* (*)(const PgModuleHost*)>(::dlsym(handle, kPgModuleSymbol));
    const PgModuleApi* table = entry != nullptr ? entry(&Host()) : nullptr;
    std::string problem;
    if (entry == nullptr) {
      problem = std::string("no entry point ") + kPgModuleSymbol + " (this program's module ABI " +
                std::to_string(kPgModuleAbi) + ")";
      int other = OtherAbi(handle);
      if (other == 1) {
        problem += ": it is a module of ABI 1 (entry point " + std::string(kPgModuleSymbolV1) +
                   "), which took its store code from the program; install the module of this edgesync " +
                   EDGESYNC_VERSION;
      } else if (other > 0) {
        problem += ": it is a module of ABI " + std::to_string(other);
      }
    } else if (table == nullptr || table->abi != kPgModuleAbi) {
      problem = "built for another edgesync (module ABI " + std::to_string(table != nullptr ? table->abi : 0) +
                ", this program's " + std::to_string(kPgModuleAbi) + ")";
    } else if (std::string(table->version) != EDGESYNC_VERSION) {
      problem = std::string("built as edgesync ") + table->version + ", this program is " + EDGESYNC_VERSION;
    } else if (table->open_hub_store == nullptr || table->open_shard_leases == nullptr) {
      problem = "it refused this program's host table (module ABI " + std::to_string(table->abi) + ", edgesync " +
                table->version + ")";
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
