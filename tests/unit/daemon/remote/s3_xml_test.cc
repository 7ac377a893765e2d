// S3's XML answers: a ListObjectsV2 page (keys decoded only when the page says EncodingType=url) and an error body
// (Code and Message only: a SignatureDoesNotMatch's CanonicalRequest would hold the session token).
#include "remote/s3_xml.h"

#include <gtest/gtest.h>

namespace batchd::daemon::remote {
namespace {

TEST(RemoteS3Xml, AListPageAnyNamespaceDecodedOnlyWhenUrlEncoded) {
  const std::string page =
      "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01/\">"
      "<IsTruncated>true</IsTruncated><NextContinuationToken>a+b/c=</NextContinuationToken>"
      "<EncodingType>url</EncodingType>"
      "<Contents><Key>train/a+b%2B%C3%A9.tar</Key><Size>12</Size><ETag>&quot;abc&quot;</ETag></Contents>"
      "<Contents><Key>train/z.tar</Key><Size>0</Size></Contents></ListBucketResult>";
  auto p = parse_list_page(page, "s3://b/train/");
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->keys.size(), 2u);
  EXPECT_EQ(p->keys[0].key, "train/a b+é.tar");
  EXPECT_EQ(p->keys[0].size, 12u);
  EXPECT_EQ(p->keys[0].etag, "\"abc\"");
  EXPECT_EQ(p->keys[1].etag, "");
  EXPECT_TRUE(p->truncated);
  EXPECT_EQ(p->next_token, "a+b/c=");

  const std::string raw = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                          "<Contents><Key>a+b%2B.tar</Key><Size>1</Size></Contents></ListBucketResult>";
  auto r = parse_list_page(raw, "s3://b/");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->keys[0].key, "a+b%2B.tar") << "no EncodingType: the key as sent (a server that ignores encoding-type)";
  EXPECT_FALSE(r->truncated);
}

TEST(RemoteS3Xml, WhatIsNotAListingIsADataErrorNamingTheUrl) {
  for (const std::string bad : {"<html>oops", "<Other/>",
                                "<ListBucketResult><Contents><Key>k</Key><Size>1x</Size></Contents></ListBucketResult>",
                                "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"}) {
    auto p = parse_list_page(bad, "s3://b/p/");
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code(), ErrorCode::kDataError);
    EXPECT_NE(p.error().message().find("the listing of s3://b/p/ is not S3's ListObjectsV2 answer"), std::string::npos)
        << p.error().message();
  }
}

TEST(RemoteS3Xml, ErrorSummaryIsCodeAndMessageOnly) {
  const std::string body =
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated "
      "does not match</Message><CanonicalRequest>GET\n/b/k\n\nx-amz-security-token:SECRETTOKEN</CanonicalRequest>"
      "<StringToSign>AWS4-HMAC-SHA256</StringToSign></Error>";
  EXPECT_EQ(s3_error_summary(body), "SignatureDoesNotMatch: The request signature we calculated does not match");
  EXPECT_EQ(s3_error_summary("<Error><Code>SlowDown</Code></Error>"), "SlowDown");
  EXPECT_EQ(s3_error_summary("Service Unavailable"), "");
  EXPECT_EQ(s3_error_summary(""), "");
}

}  // namespace
}  // namespace batchd::daemon::remote
