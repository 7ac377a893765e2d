// A ListObjectsV2 answer is attacker-sized: its nesting and its length are bounded before Boost.PropertyTree (whose
// RapidXML parser recurses once per level) sees it, so 50,000 nested elements are a clear error, not a SIGSEGV.
#include <gtest/gtest.h>

#include "object_store_fixture.h"
#include "remote/s3_xml.h"

namespace batchd::daemon::remote {
namespace {

std::string nested(size_t depth) {
  std::string xml = "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>false</IsTruncated>";
  for (size_t i = 0; i < depth; ++i) xml += "<a>";
  for (size_t i = 0; i < depth; ++i) xml += "</a>";
  return xml + "</ListBucketResult>";
}

TEST(RemoteS3XmlBounds, FiftyThousandNestedElementsAreAClearErrorNotACrash) {
  for (size_t depth : {size_t{50000}, size_t{500000}, size_t{10000}, size_t{100}}) {
    auto page = parse_list_page(nested(depth), "s3://bkt/train/");
    ASSERT_FALSE(page.ok()) << depth;
    EXPECT_EQ(page.error().code(), ErrorCode::kDataError);
    const std::string& m = page.error().message();
    EXPECT_NE(m.find("s3://bkt/train/"), std::string::npos) << m;
    EXPECT_NE(m.find("nested deeper than " + std::to_string(kMaxS3XmlDepth)), std::string::npos) << m;
    EXPECT_NE(m.find("is the endpoint an S3 server?"), std::string::npos) << m;
  }
}

TEST(RemoteS3XmlBounds, TheDepthScanSeesThroughCommentsCdataAndAttributes) {
  // Markup inside comments, CDATA and attribute values opens no element; self-closed elements do not nest.
  std::string xml = "<?xml version=\"1.0\"?><!-- <a><a><a> --><ListBucketResult x=\"<a>\" y='>'>"
                    "<IsTruncated>false</IsTruncated>";
  for (size_t i = 0; i < 100; ++i) xml += "<Owner/><!-- <b> --><Z a=\"/>\"/><![CDATA[<c><c>]]>";
  xml += "<Contents><Key>k.tar</Key><Size>3</Size><Owner><ID>x</ID></Owner></Contents></ListBucketResult>";
  auto page = parse_list_page(xml, "s3://bkt/");
  ASSERT_TRUE(page.ok()) << page.error().message();
  ASSERT_EQ(page->keys.size(), 1u);
  EXPECT_EQ(page->keys[0].key, "k.tar");
  // Just past the bound is refused, at the bound is read (ListBucketResult is level 1).
  auto at = parse_list_page(nested(kMaxS3XmlDepth - 1), "s3://bkt/");
  EXPECT_TRUE(at.ok()) << at.error().message();
  EXPECT_FALSE(parse_list_page(nested(kMaxS3XmlDepth), "s3://bkt/").ok());
  EXPECT_EQ(s3_error_summary("<Error><Code>X</Code>" + nested(50000) + "</Error>"), "");
}

TEST(RemoteS3XmlBounds, ALongerAnswerIsRefusedUnparsed) {
  std::string xml = "<ListBucketResult><IsTruncated>false</IsTruncated>";
  while (xml.size() <= kMaxS3XmlBytes) {
    xml += "<Contents><Key>" + std::string(900, 'k') + "</Key><Size>1</Size></Contents>";
  }
  xml += "</ListBucketResult>";
  auto page = parse_list_page(xml, "s3://bkt/");
  ASSERT_FALSE(page.ok());
  EXPECT_NE(page.error().message().find("longer than " + std::to_string(kMaxS3XmlBytes >> 20) + " MiB"),
            std::string::npos) << page.error().message();
}

// The same answer from a server, through ObjectStore::list: the daemon's path.
TEST_F(RemoteObjectStore, ADeeplyNestedListingFromTheServerIsAClearError) {
  write_file(root_ / ".listing.xml", nested(50000));
  auto server = serve({"--fault", "listing-file:0"});
  ObjectStore store(fast(), s3(*server));
  auto listed = store.list("s3://bkt/train/", 100);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().code(), ErrorCode::kDataError);
  EXPECT_NE(listed.error().message().find("nested deeper than"), std::string::npos) << listed.error().message();
  EXPECT_NE(listed.error().message().find("s3://bkt/train/"), std::string::npos) << listed.error().message();
}

}  // namespace
}  // namespace batchd::daemon::remote
