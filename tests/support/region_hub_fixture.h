// tests/support/region_hub_fixture.h: the region hub the hub's unit tests
// talk to: hub "eu" over a SQLite hub store in a temporary directory, its
// link a FakeLink (tests/support/fake_link.h) that hands every message the
// hub publishes, decoded, to the test.
#ifndef EDGESYNC_TESTS_SUPPORT_REGION_HUB_FIXTURE_H_
#define EDGESYNC_TESTS_SUPPORT_REGION_HUB_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>

#include "store/hub_store.h"
#include "store/sqlite_hub_store.h"
#include "store/store.h"
#include "sync/region_hub.h"
#include "sync/wire.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/fake_link.h"

namespace edgesync {

// The hub's store: a SQLite hub store in `dir`.
inline void OpenHubStoreIn(const test::TempDir& dir, std::unique_ptr<HubStore>* hub_store) {
  StoreOptions so;
  so.path = dir.File("hub.db");
  so.gateway_id = "hub-eu";
  std::unique_ptr<SqliteHubStore> sqlite;
  ASSERT_OK(OpenSqliteHubStore(so, &sqlite));
  *hub_store = std::move(sqlite);
}

class RegionHubFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenHubStoreIn(dir_, &hub_store_));
    RegionHubOptions o;
    o.region = "eu";
    hub_ = std::make_unique<RegionHub>(hub_store_.get(), o, nullptr,
                                       [this](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
                                         auto l = std::make_unique<FakeLink>(
                                             [this](const std::string&, const std::string& payload, FakeLink*) {
                                               WireMessage m;
                                               if (!DecodeMessage(payload, DecodeLimits{}, &m, nullptr).ok()) return;
                                               std::lock_guard<std::mutex> lock(mu_);
                                               Published(m);
                                             });
                                         link_ = l.get();
                                         *link = std::move(l);
                                         return Status::Ok();
                                       });
    ASSERT_OK(hub_->Start());
  }
  // Stopped while the test's own members still take what it publishes.
  void TearDown() override {
    if (hub_) hub_->Stop();
  }

  // A message the hub published (an answer, a feed page, a notice), with
  // mu_ held.
  virtual void Published(const WireMessage& m) = 0;

  test::TempDir dir_;
  std::unique_ptr<HubStore> hub_store_;
  std::unique_ptr<RegionHub> hub_;
  FakeLink* link_ = nullptr;
  std::mutex mu_;
};

}  // namespace edgesync

#endif  // EDGESYNC_TESTS_SUPPORT_REGION_HUB_FIXTURE_H_
