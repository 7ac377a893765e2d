// object_store_fixture.h — RemoteObjectStore: a bucket of files under a temporary root, served by fault_server.py
// (fault_server_fixture.h), ObjectStore settings with short retries and timeouts, a fetch into a temporary file.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "batchd/wire/unique_fd.h"
#include "fault_server_fixture.h"
#include "remote/object_store.h"

namespace batchd::daemon::remote {

using namespace testing;  // NOLINT: fault_server_fixture.h's helpers (batchd::daemon::remote::testing)

class RemoteObjectStore : public ::testing::Test {
 protected:
  static inline const std::string kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  static inline const std::string kToken = "FwoGZXIvYXdzEJr//////////wEaDEXAMPLESESSIONTOKEN";

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

}  // namespace batchd::daemon::remote
