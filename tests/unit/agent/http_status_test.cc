// The status page's server started and stopped at once, many times: a stop
// that comes before the listening thread has marked the server running
// must still end it (it used to leave the thread listening forever, and a
// role told to stop right after it started hung). And the page answers
// between a start and a stop.
#include "agent/http_status.h"

#include "gtest/gtest.h"
#include "tests/support/http_get.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

TEST(HttpStatusServerTest, AStopRightAfterTheStartEndsTheServer) {
  StatusBoard board("", 10000);
  for (int i = 0; i < 200; ++i) {
    HttpStatusServer http(&board);
    ASSERT_OK(http.Start("127.0.0.1:0"));
    ASSERT_GT(http.port(), 0);
    http.Stop();  // would hang in join() when the race is lost
  }
}

TEST(HttpStatusServerTest, ThePageAnswersUntilStopped) {
  StatusBoard board("", 10000);
  HttpStatusServer http(&board);
  ASSERT_OK(http.Start("127.0.0.1:0"));
  const int port = http.port();
  int status = 0;
  std::string body = HttpGet(port, "/status.json", &status);
  EXPECT_EQ(status, 200) << body;
  http.Stop();
  HttpGet(port, "/status.json", &status);
  EXPECT_EQ(status, -1) << "nothing listens after Stop";
}

}  // namespace
}  // namespace edgesync::test
