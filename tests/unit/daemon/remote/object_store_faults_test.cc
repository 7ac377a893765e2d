// ObjectStore's faults against a real HTTP(S) server on 127.0.0.1 (tests/remote/fault_server.py): each fault
// retried then served, or failing after the bound naming the URL and the status (never a secret); refused
// connections; 403/404 at once; a changed ETag refused; a stall bounded; https with and without the test CA; a body
// longer than expected and a failed write refused.
#include "object_store_fixture.h"

namespace batchd::daemon::remote {
namespace {

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

  auto ignoring = serve({"--fault", "ignore-if-match:0"});  // a server that ignores If-Match
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

}  // namespace
}  // namespace batchd::daemon::remote
