// es_lease_holder: a feed consumer process that takes one range's lease and
// renews it until killed, run by the lease clock-step test under libfaketime
// (its wall clock stepped while it runs; its monotonic clock left alone, as
// an NTP step leaves it).
//
//   es_lease_holder STORE OWNER RANGE EXPIRY_MS
// Prints "held <version> <wall ms>" once it has the lease, then "renewed
// <version> <wall ms>" at every renewal (every EXPIRY_MS / 5), the wall time
// being what this process believes. Exits 3 if the lease is taken from it,
// 2 if the store cannot be opened.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "platform/clock.h"
#include "store/store.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: es_lease_holder STORE OWNER RANGE EXPIRY_MS\n");
    return 1;
  }
  edgesync::StoreOptions o;
  o.path = argv[1];
  o.create_if_missing = false;
  o.open_check = edgesync::StoreOptions::OpenCheck::kNone;
  o.lease_expiry_ms = std::atoll(argv[4]);
  const std::string owner = argv[2];
  const uint32_t range = static_cast<uint32_t>(std::atoi(argv[3]));
  std::unique_ptr<edgesync::Store> store;
  edgesync::Status st = edgesync::Store::Open(o, &store);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 2;
  }
  edgesync::Clock* clock = edgesync::SystemClock();
  edgesync::Lease lease;
  while (!(st = store->AcquireLease(range, owner, &lease)).ok()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("held %lld %lld\n", static_cast<long long>(lease.version), static_cast<long long>(clock->WallMillis()));
  std::fflush(stdout);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(o.lease_expiry_ms / 5));
    st = store->RenewLease(lease, &lease);
    if (st.code() == edgesync::Status::Code::kConflict) {
      std::printf("lost %s\n", st.ToString().c_str());
      return 3;
    }
    if (!st.ok()) continue;  // busy: the next renewal retries
    std::printf("renewed %lld %lld\n", static_cast<long long>(lease.version),
                static_cast<long long>(clock->WallMillis()));
    std::fflush(stdout);
  }
}
