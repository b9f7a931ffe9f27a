// Roles whose issues have not landed yet say so plainly (see README).
#include <cstdio>

#include "agent/roles.h"

namespace edgesync {
namespace {

int Pending(const char* what) {
  std::fprintf(stderr, "edgesync %s: not yet implemented in this version\n", what);
  return 3;
}

}  // namespace

int RunQuery(const Config&, const QueryOptions&) { return Pending("query"); }
int RunFeed(const Config&, const FeedOptions&) { return Pending("feed"); }

}  // namespace edgesync
