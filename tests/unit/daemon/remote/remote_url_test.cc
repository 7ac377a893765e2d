// Remote shard URLs: what parse_remote_url accepts and refuses (naming the config key and the URL, never a query or
// userinfo), and what redact() shows.
#include "remote/remote_url.h"

#include <gtest/gtest.h>

namespace batchd::daemon::remote {
namespace {

const std::string kKey = "datasets.train.shards";

std::string refusal(const std::string& url) {
  auto r = parse_remote_url(url, kKey);
  EXPECT_FALSE(r.ok()) << url;
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message().rfind(kKey + ": ", 0), 0u) << r.error().message();
  return r.error().message();
}

TEST(RemoteUrl, IsRemoteByScheme) {
  EXPECT_TRUE(is_remote("s3://b/k"));
  EXPECT_TRUE(is_remote("http://h/x"));
  EXPECT_TRUE(is_remote("https://h/x"));
  EXPECT_FALSE(is_remote("/data/shard-000.tar"));
  EXPECT_FALSE(is_remote("S3://b/k")) << "case-sensitive, as aws-cli";
  EXPECT_FALSE(is_remote("ftp://h/x"));
  EXPECT_FALSE(is_remote("file:///x"));
}

TEST(RemoteUrl, S3BucketAndKey) {
  auto r = parse_remote_url("s3://my-bucket.1/train/shard-000001.tar", kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->scheme, Scheme::kS3);
  EXPECT_EQ(r->bucket, "my-bucket.1");
  EXPECT_EQ(r->key, "train/shard-000001.tar");
  EXPECT_EQ(r->url, "s3://my-bucket.1/train/shard-000001.tar");
  EXPECT_FALSE(r->is_pattern);

  auto whole = parse_remote_url("s3://bucket", kKey);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->key, "");
  auto spaces = parse_remote_url("s3://bucket/a b/é+ü=.tar", kKey);
  ASSERT_TRUE(spaces.ok()) << "S3 keys are any UTF-8";
  EXPECT_EQ(spaces->key, "a b/é+ü=.tar");
}

TEST(RemoteUrl, S3PatternOnlyInTheLastSegment) {
  auto r = parse_remote_url("s3://bucket/train/part-*.tar", kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->is_pattern);
  EXPECT_EQ(r->list_prefix, "train/");
  auto top = parse_remote_url("s3://bucket/*.tar", kKey);
  ASSERT_TRUE(top.ok());
  EXPECT_TRUE(top->is_pattern);
  EXPECT_EQ(top->list_prefix, "");
  EXPECT_NE(refusal("s3://bucket/tr*/x.tar").find("may only be in the key's last segment"), std::string::npos);
}

TEST(RemoteUrl, S3RefusesBadBucketsAndKeys) {
  EXPECT_NE(refusal("s3://ab/k").find("the bucket name must be 3 to 63"), std::string::npos);
  refusal("s3://Upper/k");
  refusal("s3://under_score/k");
  refusal("s3://-bucket/k");
  refusal("s3://" + std::string(64, 'a') + "/k");
  EXPECT_NE(refusal("s3://bucket/" + std::string(1025, 'k')).find("1024"), std::string::npos);
  EXPECT_TRUE(parse_remote_url("s3://bucket/" + std::string(1024, 'k'), kKey).ok());
  EXPECT_NE(refusal("s3://bucket/\xff\xfe").find("not UTF-8"), std::string::npos);
  EXPECT_NE(refusal("s3://bucket/a\nb").find("control character"), std::string::npos);
}

TEST(RemoteUrl, HttpAsGiven) {
  auto r = parse_remote_url("https://data.example.com:8443/shards/a-000.tar?X-Amz-Signature=abc", kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->scheme, Scheme::kHttps);
  EXPECT_EQ(r->url, "https://data.example.com:8443/shards/a-000.tar?X-Amz-Signature=abc");
  auto plain = parse_remote_url("http://127.0.0.1:9000/b/x.tar", kKey);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->scheme, Scheme::kHttp);
}

TEST(RemoteUrl, HttpRefusesUserinfoNamingNeitherUserNorPassword) {
  const std::string msg = refusal("https://alice:hunter2@host/x.tar");
  EXPECT_NE(msg.find("credentials in a URL"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("alice"), std::string::npos) << msg;
  refusal("http://bob@host/x.tar");
}

TEST(RemoteUrl, HttpRefusesFragmentsGlobsAndMalformedUrls) {
  EXPECT_NE(refusal("http://host/x.tar#frag").find("fragment"), std::string::npos);
  EXPECT_NE(refusal("http://host/shards/*.tar").find("HTTP has no listing"), std::string::npos);
  EXPECT_NE(refusal("http://host/a b.tar").find("not a URL libcurl accepts"), std::string::npos);
  refusal("http://");
  EXPECT_NE(refusal("gs://bucket/x").find("not a remote URL"), std::string::npos);
}

TEST(RemoteUrl, RedactHidesQueriesAndUserinfo) {
  EXPECT_EQ(redact("https://h/x.tar?X-Amz-Signature=secret&X-Amz-Credential=AKIA"), "https://h/x.tar?...");
  EXPECT_EQ(redact("https://user:pw@h:8/x.tar"), "https://...@h:8/x.tar");
  EXPECT_EQ(redact("http://h/x.tar#frag"), "http://h/x.tar");
  EXPECT_EQ(redact("http://h/x.tar"), "http://h/x.tar");
  EXPECT_EQ(redact("s3://bucket/what?.tar"), "s3://bucket/what?.tar") << "'?' in an s3 key is a pattern, not a query";
  const std::string msg = refusal("http://h/*.tar?sig=SECRETSIG");
  EXPECT_EQ(msg.find("SECRETSIG"), std::string::npos) << msg;
}

}  // namespace
}  // namespace batchd::daemon::remote
