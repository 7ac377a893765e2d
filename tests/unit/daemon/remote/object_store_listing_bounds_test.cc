// ObjectStore::list against a real server that never ends a listing, or sends a page too big to parse: each bound
// (pages, seconds, bytes of a page) ends the listing with an error naming the listing, the bound and the fix. A
// listing that does not end by itself within 30 s is cancelled and the test fails (it never hangs).
#include <future>

#include "object_store_fixture.h"

namespace batchd::daemon::remote {
namespace {

class RemoteListingBounds : public RemoteObjectStore {
 protected:
  // list() on a thread; cancelled (and a failure recorded) if it has not returned after 30 s.
  Result<std::vector<RemoteObject>> list_within_30s(ObjectStore& store, const std::string& url, double* took) {
    std::atomic<bool> cancel{false};
    store.set_cancel(&cancel);
    const auto start = std::chrono::steady_clock::now();
    auto f = std::async(std::launch::async, [&] { return store.list(url, 1000); });
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "the listing of " << url << " did not end by itself within 30 s: cancelled";
      cancel.store(true);
    }
    auto out = f.get();
    *took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }
};

TEST_F(RemoteListingBounds, AListingThatNeverEndsStopsAtThePageBound) {
  auto server = serve({"--fault", "endless:0"});
  HttpSettings h = fast();
  h.list_max_pages = 40;
  ObjectStore store(h, s3(*server));
  double took = 0;
  auto listed = list_within_30s(store, "s3://bkt/train/*.tar", &took);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code(), ErrorCode::kResourceExhausted);
  const std::string& m = listed.error().message();
  EXPECT_NE(m.find("s3://bkt/train/*.tar"), std::string::npos) << m;
  EXPECT_NE(m.find("more than 40 pages"), std::string::npos) << m;
  EXPECT_NE(m.find("narrow the prefix"), std::string::npos) << m;
  EXPECT_EQ(server->requests().size(), 40u);
}

TEST_F(RemoteListingBounds, AListingThatNeverEndsStopsAtTheTimeBound) {
  auto server = serve({"--fault", "endless:0", "--latency", "0.05"});
  HttpSettings h = fast();
  h.list_timeout_s = 2;
  ObjectStore store(h, s3(*server));
  double took = 0;
  auto listed = list_within_30s(store, "s3://bkt/train/", &took);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code(), ErrorCode::kResourceExhausted);
  const std::string& m = listed.error().message();
  EXPECT_NE(m.find("s3://bkt/train/"), std::string::npos) << m;
  EXPECT_NE(m.find("took more than 2 s"), std::string::npos) << m;
  EXPECT_LT(took, 4.0);
}

TEST_F(RemoteListingBounds, ASlowPageCountsAgainstTheTimeBound) {
  auto server = serve({"--fault", "stall:0"});  // headers, then nothing
  HttpSettings h = fast();
  h.stall_timeout_s = 20;  // the stall bound alone would wait 20 s per attempt
  h.list_timeout_s = 2;
  ObjectStore store(h, s3(*server));
  double took = 0;
  auto listed = list_within_30s(store, "s3://bkt/train/", &took);
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.error().message().find("took more than 2 s"), std::string::npos) << listed.error().message();
  EXPECT_LT(took, 4.0);
}

TEST_F(RemoteListingBounds, APageTooBigToParseIsRefusedWhileItArrives) {
  std::string xml = "<ListBucketResult><IsTruncated>false</IsTruncated>";
  for (int i = 0; xml.size() <= (size_t{9} << 20); ++i) {
    xml += "<Contents><Key>train/" + std::to_string(i) + std::string(1000, 'k') + "</Key><Size>1</Size></Contents>";
  }
  xml += "</ListBucketResult>";
  write_file(root_ / ".listing.xml", xml);
  auto server = serve({"--fault", "listing-file:0"});
  ObjectStore store(fast(), s3(*server));
  double took = 0;
  auto listed = list_within_30s(store, "s3://bkt/train/", &took);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code(), ErrorCode::kResourceExhausted);
  const std::string& m = listed.error().message();
  EXPECT_NE(m.find("s3://bkt/train/"), std::string::npos) << m;
  EXPECT_NE(m.find("a page of more than 8 MiB"), std::string::npos) << m;
  EXPECT_EQ(server->requests().size(), 1u) << "not retried: the same page would come again";
}

TEST_F(RemoteListingBounds, AnOrdinaryListingIsWithinEveryBound) {
  auto server = serve();
  HttpSettings h = fast();
  h.list_page_size = 1;
  h.list_max_pages = 5;  // the 5 keys under train/, one a page: 5 pages, the last not truncated
  ObjectStore store(h, s3(*server));
  auto listed = store.list("s3://bkt/train/", 100);
  ASSERT_TRUE(listed.ok()) << listed.error().message();
  EXPECT_EQ(listed->size(), 5u);
}

}  // namespace
}  // namespace batchd::daemon::remote
