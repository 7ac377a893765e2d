// What a server chose (a listed key, an S3 error's Code and Message, a Size) reaches errors, hence the daemon's log
// and batchctl's output, escaped (wire/printable.h): a key holding a newline or an ESC forges no log line and drives
// no terminal.
#include <gtest/gtest.h>

#include "object_store_fixture.h"
#include "remote/remote_listing.h"
#include "remote/s3_xml.h"

namespace batchd::daemon::remote {
namespace {

void expect_one_line(const std::string& text) {
  for (char c : text) {
    EXPECT_FALSE((c >= 0 && c < 0x20) || c == 0x7f) << "a raw control character " << int(c) << " in: " << text;
  }
}

TEST_F(RemoteObjectStore, AListedKeyWithANewlineIsRefusedAtLoadEscaped) {
  write_file(root_ / "bkt" / "evil" / "a\nINFO dataset x: forged\x1b[2J.tar", "abc");
  auto server = serve();
  ObjectStore store(fast(), s3(*server));
  auto expanded = expand_remote_shards({"s3://bkt/evil/*.tar"}, "datasets.x.shards", store, 100, nullptr);
  ASSERT_FALSE(expanded.ok()) << "a key that cannot be fetched is refused when the dataset loads, not mid-epoch";
  const std::string& m = expanded.error().message();
  expect_one_line(m);
  EXPECT_NE(m.find("s3://bkt/evil/a\\nINFO dataset x: forged\\x1b[2J.tar"), std::string::npos) << m;
  EXPECT_NE(m.find("control character"), std::string::npos) << m;
}

TEST_F(RemoteObjectStore, AFetchOfAKeyWithANewlineFailsEscaped) {
  auto server = serve();
  ObjectStore store(fast(), s3(*server));
  std::string bytes;
  Status st = fetch(store, {"s3://bkt/evil/a\nb\rc.tar", 3, "\"e\ntag\""}, &bytes);
  ASSERT_FALSE(st.ok());
  expect_one_line(st.error().message());
  EXPECT_NE(st.error().message().find("s3://bkt/evil/a\\nb\\rc.tar"), std::string::npos) << st.error().message();
}

TEST(RemoteText, AListPageAndAnErrorBodyReachMessagesEscaped) {
  auto page = parse_list_page("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a&#10;WARN b\x1b"
                              "</Key><Size>x&#10;y</Size></Contents></ListBucketResult>", "s3://bkt/");
  ASSERT_FALSE(page.ok());
  expect_one_line(page.error().message());
  EXPECT_NE(page.error().message().find("a\\nWARN b\\x1b"), std::string::npos) << page.error().message();

  const std::string summary = s3_error_summary("<Error><Code>SlowDown&#10;ERROR forged</Code>"
                                               "<Message>m\x1b[31m&#13;</Message></Error>");
  expect_one_line(summary);
  EXPECT_EQ(summary, "SlowDown\\nERROR forged: m\\x1b[31m\\r");
}

TEST(RemoteText, RedactEscapesEveryScheme) {
  EXPECT_EQ(redact("s3://bkt/a\nb"), "s3://bkt/a\\nb");
  EXPECT_EQ(redact("https://h/a\x1b.tar?X-Amz-Signature=s\n"), "https://h/a\\x1b.tar?...");
  EXPECT_EQ(redact("s3://bkt/train/é.tar"), "s3://bkt/train/é.tar");
}

}  // namespace
}  // namespace batchd::daemon::remote
