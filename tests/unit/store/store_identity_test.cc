// A store's gateway id after the first start: taken over while the store
// holds no reading of its own, given as a new origin by a re-identification
// (readings kept, the old origin's entries still this store's own), refused
// otherwise; every error names the store once.
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreIdentityTest : public StoreTest {
 protected:
  StoreOptions As(const std::string& id) {
    StoreOptions o = Options();
    o.gateway_id = id;
    return o;
  }
  Status TryOpen(const StoreOptions& o) {
    std::unique_ptr<Store> s;
    return Store::Open(o, &s);
  }
  int64_t CountRows(Store* s) {
    QueryRequest q;
    q.device_id = "dev0";
    q.to_ms = INT64_MAX;
    std::vector<QueryRow> rows;
    Status st = s->Query(q, &rows);
    EXPECT_OK(st);
    return static_cast<int64_t>(rows.size());
  }
};

TEST_F(StoreIdentityTest, EmptyStoreTakesTheConfiguredIdAndKeepsItsEpoch) {
  std::string epoch = OpenStore()->origin().epoch;  // gw1, no reading
  StoreOptions o = As("greenhouse-3");
  o.take_id_while_empty = true;
  auto s = OpenStore(o);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->origin().gateway_id, "greenhouse-3");
  EXPECT_EQ(s->origin().epoch, epoch);
  s.reset();
  EXPECT_EQ(OpenStore(As("greenhouse-3"))->origin().gateway_id, "greenhouse-3");  // bound now
}

TEST_F(StoreIdentityTest, WithoutTheOptionAnEmptyStoreStillRefusesAnotherId) {
  OpenStore();
  Status st = TryOpen(As("greenhouse-3"));  // e.g. a hub's store
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("belongs to gateway 'gw1'"), std::string::npos) << st.message();
}

TEST_F(StoreIdentityTest, StoreWithReadingsRefusesAnotherIdAndNamesTheWayOut) {
  {
    auto s = OpenStore();
    AppendResult r;
    ASSERT_OK(s->AppendReadings(Batch(10), &r));
  }
  StoreOptions o = As("greenhouse-3");
  o.take_id_while_empty = true;
  Status st = TryOpen(o);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("holds its readings"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("edgesync reidentify"), std::string::npos) << st.message();
  // The context is said once.
  const std::string prefix = "opening store " + o.path;
  EXPECT_EQ(st.message().find(prefix), 0u) << st.message();
  EXPECT_EQ(st.message().find(prefix, 1), std::string::npos) << st.message();
  EXPECT_EQ(OpenStore()->origin().gateway_id, "gw1");  // unchanged
}

TEST_F(StoreIdentityTest, ReidentifyMakesANewOriginAndKeepsEveryReading) {
  Origin old;
  {
    auto s = OpenStore();
    AppendResult r;
    ASSERT_OK(s->AppendReadings(Batch(10), &r));
    old = s->origin();
    EXPECT_EQ(CountRows(s.get()), 1);
  }
  StoreOptions o = As("greenhouse-3");
  o.reidentify = true;
  auto s = OpenStore(o);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->origin().gateway_id, "greenhouse-3");
  EXPECT_NE(s->origin().epoch, old.epoch);
  EXPECT_EQ(s->LastLsn(), 10u);  // the log and its LSNs stay
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(10, 10, 5000), &r));
  EXPECT_EQ(s->LastLsn(), 20u);
  EXPECT_EQ(CountRows(s.get()), 2);  // dev0 before and after, both local rows

  // A region feed serving the old origin's entries back: they are this
  // store's own rows already, not read-view rows beside them.
  ChangeEntry e;
  e.lsn = 1;
  e.reading = Batch(1)[0];
  int64_t applied = -1;
  ASSERT_OK(s->ApplyRemote({RemoteEntry{old, 1, e}}, &applied));
  EXPECT_EQ(applied, 0);
  EXPECT_EQ(CountRows(s.get()), 2);
  s.reset();

  // Reopened with the new id as configured: as it was left.
  auto again = OpenStore(As("greenhouse-3"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->origin().gateway_id, "greenhouse-3");
  ASSERT_OK(again->ApplyRemote({RemoteEntry{old, 1, e}}, &applied));
  EXPECT_EQ(applied, 0);
  EXPECT_EQ(CountRows(again.get()), 2);
}

TEST_F(StoreIdentityTest, ReidentifyRefusesWhileAnotherProcessWrites) {
  auto running = OpenStore();
  AppendResult r;
  ASSERT_OK(running->AppendReadings(Batch(10), &r));
  StoreOptions o = As("greenhouse-3");
  o.reidentify = true;
  Status st = TryOpen(o);
  EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  EXPECT_EQ(running->origin().gateway_id, "gw1");
  running.reset();
  EXPECT_EQ(OpenStore()->origin().gateway_id, "gw1");
}

}  // namespace
}  // namespace edgesync::test
