#include "store/hub_store_leases.h"

namespace edgesync {
namespace {

class SoleOwnerLeases : public ShardLeases {
 public:
  explicit SoleOwnerLeases(int shards) : shards_(shards) {}
  Status Join() override { return Status::Ok(); }
  Status Balance(std::vector<int>* owned, ShardLeaseStats* stats) override {
    owned->clear();
    for (int s = 0; s < shards_; ++s) owned->push_back(s);
    *stats = ShardLeaseStats{1, 0, 0};
    return Status::Ok();
  }
  Status Release() override { return Status::Ok(); }

 private:
  int shards_;
};

}  // namespace

std::unique_ptr<ShardLeases> NewSoleOwnerLeases(int shards) { return std::make_unique<SoleOwnerLeases>(shards); }

#ifndef EDGESYNC_HAVE_POSTGRESQL
Status OpenPostgresShardLeases(const HubStoreOptions&, const ShardLeaseOptions&, std::unique_ptr<ShardLeases>*) {
  return Status::Unsupported("this edgesync was built without PostgreSQL support (libpq was not found at build time)");
}
#endif

}  // namespace edgesync
