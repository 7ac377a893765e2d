// S3 request URLs in SigV4's canonical form (what curl 7.88 signs as it is sent): AWS's UriEncode, sorted queries.
// The signatures themselves are checked against botocore in sigv4_test.cc.
#include "remote/s3_request.h"

#include <gtest/gtest.h>

namespace batchd::daemon::remote {
namespace {

TEST(RemoteS3Request, UriEncodeKeepsOnlyUnreservedAndSlashInPaths) {
  EXPECT_EQ(aws_uri_encode("AZaz09-_.~", false), "AZaz09-_.~");
  EXPECT_EQ(aws_uri_encode("a b+c=d/é*", true), "a%20b%2Bc%3Dd/%C3%A9%2A");
  EXPECT_EQ(aws_uri_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(aws_uri_encode(std::string("\x00\xff", 2), false), "%00%FF") << "upper-case hex";
}

TEST(RemoteS3Request, QueriesSortedByEncodedNameThenValue) {
  EXPECT_EQ(canonical_query({{"prefix", "a/b c"}, {"list-type", "2"}, {"continuation-token", "x+y/z="}}),
            "continuation-token=x%2By%2Fz%3D&list-type=2&prefix=a%2Fb%20c");
  EXPECT_EQ(canonical_query({{"b", "2"}, {"b", "1"}, {"a", ""}}), "a=&b=1&b=2");
  EXPECT_EQ(canonical_query({}), "");
}

TEST(RemoteS3Request, PathStyleUrls) {
  AwsSettings s3;
  s3.endpoint_url = "http://127.0.0.1:9000";
  EXPECT_EQ(s3_object_url(s3, "bkt", "train/a b.tar"), "http://127.0.0.1:9000/bkt/train/a%20b.tar");
  EXPECT_EQ(s3_list_url(s3, "bkt", "train/", "", 1000),
            "http://127.0.0.1:9000/bkt?encoding-type=url&list-type=2&max-keys=1000&prefix=train%2F");
  EXPECT_EQ(s3_list_url(s3, "bkt", "", "t/=", 2),
            "http://127.0.0.1:9000/bkt?continuation-token=t%2F%3D&encoding-type=url&list-type=2&max-keys=2&prefix=");
}

}  // namespace
}  // namespace batchd::daemon::remote
