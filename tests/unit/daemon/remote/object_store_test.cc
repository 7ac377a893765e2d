// ObjectStore against a real HTTP server on 127.0.0.1 (tests/remote/fault_server.py): stat, paginated listing and
// fetch equal to the files, over one reused connection; listings refused for http(s) and past their bound.
// The faults: object_store_faults_test.cc.
#include "object_store_fixture.h"

namespace batchd::daemon::remote {
namespace {

TEST_F(RemoteObjectStore, StatListAndFetchEqualTheFilesOverOneConnection) {
  auto server = serve();
  HttpSettings h = fast();
  h.list_page_size = 2;
  ObjectStore store(h, s3(*server));
  auto listed = store.list("s3://bkt/train/", 100);
  ASSERT_TRUE(listed.ok()) << listed.error().message();
  ASSERT_EQ(listed->size(), 5u);
  std::vector<std::string> urls;
  for (const auto& o : *listed) urls.push_back(o.url);
  EXPECT_EQ(urls, (std::vector<std::string>{"s3://bkt/train/a b+é~.tar", "s3://bkt/train/shard-000000.tar",
                                            "s3://bkt/train/shard-000001.tar", "s3://bkt/train/shard-000002.tar",
                                            "s3://bkt/train/z/deep.tar"}));
  int pages = 0, continued = 0;
  for (const auto& r : server->requests()) {
    pages += r.target.find("list-type=2") != std::string::npos;
    continued += r.target.find("continuation-token=") != std::string::npos;
  }
  EXPECT_EQ(pages, 3) << "5 keys at max-keys=2";
  EXPECT_EQ(continued, 2);
  auto pattern = store.list("s3://bkt/train/shard-*.tar", 100);
  ASSERT_TRUE(pattern.ok());
  EXPECT_EQ(pattern->size(), 5u) << "a pattern lists its prefix; the caller matches";

  for (const auto& listed_object : *listed) {
    const std::string& want = files_.at(listed_object.url.substr(std::string("s3://bkt/").size()));
    auto st = store.stat(listed_object.url);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(st->size, want.size());
    EXPECT_EQ(st->etag, listed_object.etag);
    EXPECT_EQ(st->etag.front(), '"');
    std::string got;
    Status f = fetch(store, *st, &got);
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_TRUE(got == want) << listed_object.url << ": " << got.size() << " bytes, not " << want.size();
  }
  auto by_http = store.stat(server->url() + "/bkt/train/shard-000001.tar");
  ASSERT_TRUE(by_http.ok());
  std::string got;
  ASSERT_TRUE(fetch(store, *by_http, &got).ok());
  EXPECT_EQ(got, files_.at("train/shard-000001.tar"));
  EXPECT_EQ(store.counters().retries, 0u);
  EXPECT_EQ(store.counters().failures, 0u);
  EXPECT_GE(store.counters().bytes, uint64_t{3} << 20);
  EXPECT_EQ(store.counters().requests, server->requests().size());
  EXPECT_EQ(server->requests().front().header("If-Match"), "") << "no If-Match on a listing";
  EXPECT_NE(server->requests().back().header("If-Match"), "") << "a fetch carries If-Match";
}

TEST_F(RemoteObjectStore, ConnectionsAreReused) {
  auto server = serve();
  ObjectStore store(fast(), s3(*server));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store.stat("s3://bkt/val/v.tar").ok());
  std::string fetched;
  ASSERT_TRUE(fetch(store, {"s3://bkt/val/v.tar", 5, ""}, &fetched).ok());
  const auto requests = server->requests();
  ASSERT_EQ(requests.size(), 6u);
  for (const auto& r : requests) EXPECT_EQ(r.peer_port, requests.front().peer_port) << "one connection for all";
}

TEST_F(RemoteObjectStore, ListingRefusesHttpAndTooManyObjects) {
  auto server = serve();
  ObjectStore store(fast(), s3(*server));
  auto http = store.list(server->url() + "/bkt/", 10);
  ASSERT_FALSE(http.ok());
  EXPECT_EQ(http.error().code(), ErrorCode::kInvalidArgument);
  auto many = store.list("s3://bkt/", 3);
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(many.error().message().find("more than 3 objects"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon::remote
