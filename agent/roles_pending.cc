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

int RunGateway(const Config&) { return Pending("gateway"); }
int RunRegionHub(const Config&) { return Pending("region"); }
int RunQuery(const Config&, const QueryOptions&) { return Pending("query"); }
int RunFeed(const Config&, const FeedOptions&) { return Pending("feed"); }
int RunStatus(const Config&) { return Pending("status"); }

}  // namespace edgesync
