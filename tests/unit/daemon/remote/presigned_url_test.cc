// A presigned http(s) URL (https://host/bucket/shard.tar?X-Amz-Signature=...) names one shard: its query is not a
// glob, it is sent to the server byte for byte, and it never reaches an error (shown as "?...").
#include "object_store_fixture.h"
#include "remote/remote_listing.h"

namespace batchd::daemon::remote {
namespace {

const std::string kQuery = "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101%2Fus-east-1"
                           "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=0123abcdef*[?]";

TEST_F(RemoteObjectStore, APresignedUrlIsOneShardItsQuerySentAsIs) {
  auto server = serve();
  ObjectStore store(fast(), AwsSettings{});
  const std::string url = server->url() + "/bkt/train/shard-000001.tar" + kQuery;
  auto expanded = expand_remote_shards({url}, "datasets.p.shards", store, 100, nullptr);
  ASSERT_TRUE(expanded.ok()) << expanded.error().message();
  ASSERT_EQ(expanded->size(), 1u);
  EXPECT_EQ((*expanded)[0].url, url);
  EXPECT_EQ((*expanded)[0].size, 1000u);
  std::string bytes;
  ASSERT_TRUE(fetch(store, (*expanded)[0], &bytes).ok());
  EXPECT_EQ(bytes, files_.at("train/shard-000001.tar"));
  auto requests = server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "HEAD");
  EXPECT_EQ(requests[0].target, "/bkt/train/shard-000001.tar" + kQuery);
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].target, "/bkt/train/shard-000001.tar" + kQuery);
}

TEST_F(RemoteObjectStore, APresignedUrlsQueryNeverReachesAnError) {
  auto server = serve();
  ObjectStore store(fast(), AwsSettings{});
  auto missing = expand_remote_shards({server->url() + "/bkt/train/none.tar" + kQuery}, "datasets.p.shards", store,
                                      100, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("/bkt/train/none.tar?..."), std::string::npos) << missing.error().message();
  EXPECT_EQ(missing.error().message().find("X-Amz"), std::string::npos) << missing.error().message();
  // A glob in the path is still refused (HTTP has no listing), the query hidden there too.
  auto glob = expand_remote_shards({server->url() + "/bkt/train/*.tar" + kQuery}, "datasets.p.shards", store, 100,
                                   nullptr);
  ASSERT_FALSE(glob.ok());
  EXPECT_NE(glob.error().message().find("holds a glob"), std::string::npos) << glob.error().message();
  EXPECT_EQ(glob.error().message().find("X-Amz"), std::string::npos) << glob.error().message();
}

TEST_F(RemoteObjectStore, AnIpv6HostsBracketsAreNoGlob) {
  ObjectStore store(fast(0), AwsSettings{});
  auto expanded = expand_remote_shards({"http://[::1]:" + std::to_string(closed_port()) + "/bkt/a.tar"},
                                       "datasets.p.shards", store, 100, nullptr);
  ASSERT_FALSE(expanded.ok());
  EXPECT_EQ(expanded.error().code(), ErrorCode::kUnavailable) << expanded.error().message();
}

}  // namespace
}  // namespace batchd::daemon::remote
