// ObjectStore against a real HTTP(S) server on 127.0.0.1 (tests/remote/fault_server.py): stat, paginated listing and
// fetch equal to the files; each fault retried then served, or failing after the bound naming the URL and the
// status (never a secret); 403/404 at once; a changed ETag refused; a stall bounded; https with and without the CA;
// a body longer than expected and a failed write refused.
#include "remote/object_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "batchd/wire/unique_fd.h"
#include "fault_server_fixture.h"

namespace batchd::daemon::remote {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

const std::string kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const std::string kToken = "FwoGZXIvYXdzEJr//////////wEaDEXAMPLESESSIONTOKEN";

class RemoteObjectStore : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("object-store-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    files_ = {{"train/shard-000000.tar", random_bytes(3 << 20, 1)},  // several writes of the body
              {"train/shard-000001.tar", random_bytes(1000, 2)},
              {"train/shard-000002.tar", ""},  // an empty object
              {"train/a b+é~.tar", random_bytes(777, 3)},
              {"train/z/deep.tar", random_bytes(10, 4)},
              {"val/v.tar", random_bytes(5, 5)}};
    for (const auto& [key, bytes] : files_) write_file(root_ / "bkt" / key, bytes);
    out_ = root_.string() + "-out";
  }
  void TearDown() override {
    fs::remove_all(root_);
    fs::remove(out_);
    fs::remove(root_.string() + ".log.jsonl");
  }

  // A server over root_ with these extra flags.
  std::unique_ptr<FaultServer> serve(const std::vector<std::string>& extra = {}) {
    auto server = std::make_unique<FaultServer>(root_, extra);
    EXPECT_TRUE(server->ok()) << "fault_server.py did not start (python3 at " << kPython << ")";
    return server;
  }
  HttpSettings fast(uint32_t retries = 3) const {
    HttpSettings h;
    h.retries = retries;
    h.backoff_base_s = 0.01;
    h.backoff_max_s = 0.05;
    h.stall_timeout_s = 1;
    h.connect_timeout_s = 2;
    return h;
  }
  AwsSettings s3(const FaultServer& server, bool signed_requests = true) const {
    AwsSettings a;
    a.endpoint_url = server.url();
    if (signed_requests) a.credentials = {"AKIAIOSFODNN7EXAMPLE", kSecret, kToken};
    a.source = "credentials from the test (AKIA...MPLE)";
    return a;
  }
  // fetch into out_, returning its status; *bytes = what the file holds after.
  Status fetch(ObjectStore& store, const RemoteObject& object, std::string* bytes) {
    wire::UniqueFd fd(::open(out_.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600));
    EXPECT_TRUE(fd.valid());
    Status st = store.fetch(object, fd.get());
    *bytes = read_fd_file(out_);
    return st;
  }
  static void expect_no_secret(const std::string& text) {
    EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
    EXPECT_EQ(text.find(kToken), std::string::npos) << text;
    EXPECT_EQ(text.find("Signature="), std::string::npos) << text;
  }

  fs::path root_;
  std::string out_;
  std::map<std::string, std::string> files_;
};

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

TEST_F(RemoteObjectStore, EachFaultIsRetriedThenServed) {
  for (const std::string mode : {"503", "reset", "truncate", "stall"}) {
    SCOPED_TRACE(mode);
    auto server = serve({"--fault", mode + ":2:/bkt/train/shard-000001.tar"});
    ObjectStore store(fast(3), s3(*server));
    auto st = store.stat("s3://bkt/train/shard-000001.tar");  // HEAD: the 503 takes one; the others need a body
    ASSERT_TRUE(st.ok()) << st.error().message();
    std::string got;
    Status f = fetch(store, *st, &got);
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ(got, files_.at("train/shard-000001.tar"));
    EXPECT_EQ(store.counters().retries, 2u);
    EXPECT_EQ(server->requests().size(), 4u) << "stat + fetch, two of them faulted";
  }
}

TEST_F(RemoteObjectStore, AFaultPastTheBoundFailsNamingUrlAndStatusButNoSecret) {
  auto server = serve({"--fault", "503:0"});
  ObjectStore store(fast(2), s3(*server));
  auto st = store.stat("s3://bkt/train/shard-000001.tar");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kUnavailable);
  const std::string msg = st.error().message();
  EXPECT_NE(msg.find("HEAD s3://bkt/train/shard-000001.tar (endpoint " + server->url() + ")"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HTTP 503"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 attempts"), std::string::npos) << msg;
  expect_no_secret(msg);
  EXPECT_EQ(server->requests().size(), 3u);
  EXPECT_EQ(store.counters().failures, 1u);

  auto reset = serve({"--fault", "reset:0"});
  ObjectStore store2(fast(1), s3(*reset));
  std::string got;
  Status f = fetch(store2, {"s3://bkt/val/v.tar", 5, ""}, &got);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(f.error().message().find("curl error 56"), std::string::npos) << f.error().message();
  EXPECT_NE(f.error().message().find("GET s3://bkt/val/v.tar"), std::string::npos) << f.error().message();
  expect_no_secret(f.error().message());
}

TEST_F(RemoteObjectStore, RefusedConnectionsAreRetriedThenFail) {
  AwsSettings a;
  a.endpoint_url = "http://127.0.0.1:" + std::to_string(closed_port());
  ObjectStore store(fast(2), a);
  auto st = store.stat("s3://bkt/x.tar");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(st.error().message().find("curl error 7"), std::string::npos) << st.error().message();
  EXPECT_EQ(store.counters().requests, 3u);
}

TEST_F(RemoteObjectStore, ForbiddenAndMissingFailAtOnce) {
  auto server = serve({"--fault", "403:0:/bkt/train/shard-000001.tar"});
  ObjectStore store(fast(5), s3(*server));
  auto denied = store.stat("s3://bkt/train/shard-000001.tar");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(denied.error().message().find("s3://bkt/train/shard-000001.tar"), std::string::npos);
  EXPECT_NE(denied.error().message().find("check the credentials (credentials from the test"), std::string::npos)
      << denied.error().message();
  expect_no_secret(denied.error().message());
  std::string got;
  Status f = fetch(store, {"s3://bkt/train/shard-000001.tar", 1000, ""}, &got);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(f.error().message().find("AccessDenied"), std::string::npos) << "S3's Code from the body";
  auto missing = store.stat("s3://bkt/nope.tar");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("HTTP 404"), std::string::npos);
  EXPECT_EQ(store.counters().requests, 3u) << "no retry";
  EXPECT_EQ(store.counters().retries, 0u);
  auto no_bucket = store.list("s3://nobucket/", 10);
  ASSERT_FALSE(no_bucket.ok());
  EXPECT_EQ(no_bucket.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(no_bucket.error().message().find("NoSuchBucket"), std::string::npos) << no_bucket.error().message();
}

TEST_F(RemoteObjectStore, AChangedObjectIsADataErrorNotRetried) {
  auto server = serve();
  ObjectStore store(fast(5), s3(*server));
  auto st = store.stat("s3://bkt/train/shard-000001.tar");
  ASSERT_TRUE(st.ok());
  write_file(root_ / "bkt/train/shard-000001.tar", random_bytes(1000, 99));  // replaced: same size, new ETag
  std::string got;
  Status f = fetch(store, *st, &got);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kDataError);
  EXPECT_NE(f.error().message().find("HTTP 412"), std::string::npos) << f.error().message();
  EXPECT_NE(f.error().message().find("reload the dataset"), std::string::npos) << f.error().message();
  EXPECT_EQ(store.counters().retries, 0u);

  auto ignoring = serve({"--fault", "ignore-if-match:0"});  // as s3rver 3.7.1: If-Match ignored
  ObjectStore store2(fast(5), s3(*ignoring));
  f = fetch(store2, *st, &got);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kDataError);
  EXPECT_NE(f.error().message().find("changed on the server (ETag " + st->etag + ", now \""), std::string::npos)
      << f.error().message();
  EXPECT_LT(got.size(), 1000u) << "stopped at the first byte, not written whole";
  EXPECT_EQ(store2.counters().requests, 1u);
}

TEST_F(RemoteObjectStore, AStallTimesOutWithinTheStallTimeout) {
  auto server = serve({"--fault", "stall:0"});
  ObjectStore store(fast(0), s3(*server));
  const auto t0 = std::chrono::steady_clock::now();
  std::string got;
  Status f = fetch(store, {"s3://bkt/val/v.tar", 5, ""}, &got);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(f.error().message().find("curl error 28"), std::string::npos) << f.error().message();
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 2.5) << "stall_timeout_s = 1";
}

TEST_F(RemoteObjectStore, HttpsWithTheTestCaAndRefusedWithoutIt) {
  const fs::path ca = root_.string() + "-ca";
  bool made = false;
  run_command({"/bin/bash", remote_script("make_test_ca.sh"), ca.string()}, &made);
  ASSERT_TRUE(made) << "make_test_ca.sh failed (Debian: openssl)";
  auto server = serve({"--cert", (ca / "server.pem").string(), "--key", (ca / "server.key").string()});
  const std::string url = server->url("https") + "/bkt/train/shard-000001.tar";
  HttpSettings with_ca = fast();
  with_ca.ca_file = (ca / "ca.pem").string();
  ObjectStore store(with_ca, {});
  auto st = store.stat(url);
  ASSERT_TRUE(st.ok()) << st.error().message();
  std::string got;
  ASSERT_TRUE(fetch(store, *st, &got).ok());
  EXPECT_EQ(got, files_.at("train/shard-000001.tar"));

  ObjectStore without(fast(3), {});
  auto refused = without.stat(url);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message().find("TLS certificate is not trusted"), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("ca_file"), std::string::npos);
  EXPECT_EQ(without.counters().requests, 1u) << "not retried";
  fs::remove_all(ca);
}

TEST_F(RemoteObjectStore, MoreBytesThanExpectedAreRefused) {
  auto server = serve();
  ObjectStore store(fast(), s3(*server));
  std::string got;
  Status f = fetch(store, {"s3://bkt/train/shard-000001.tar", 990, ""}, &got);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kDataError);
  EXPECT_NE(f.error().message().find("more bytes than the object's size"), std::string::npos) << f.error().message();
  EXPECT_LE(got.size(), 990u);
  f = fetch(store, {"s3://bkt/train/shard-000001.tar", 1010, ""}, &got);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kDataError);
  EXPECT_NE(f.error().message().find("changed on the server (size 1010, now 1000)"), std::string::npos)
      << f.error().message();
}

TEST_F(RemoteObjectStore, AFailedWriteIsAnIoError) {
  auto server = serve();
  ObjectStore store(fast(), s3(*server));
  wire::UniqueFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(full.valid());
  Status f = store.fetch({"s3://bkt/train/shard-000001.tar", 1000, ""}, full.get());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kIo);
  EXPECT_NE(f.error().message().find("No space left on device"), std::string::npos) << f.error().message();
  EXPECT_EQ(store.counters().requests, 1u) << "not retried";
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
