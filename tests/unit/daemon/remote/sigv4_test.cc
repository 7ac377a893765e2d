// Our S3 requests' SigV4 signatures against botocore's (botocore of the project venv, tests/remote/sigv4_expected.py): for fixed
// credentials (with and without a session token) and region, the HEAD and GET of a key with spaces, UTF-8, '+', '='
// and '~', and ListObjectsV2 pages with a prefix and continuation tokens holding '+', '/' and '=', each request as
// fault_server.py logged it must carry botocore's Authorization and be spelled as botocore spells it (path and
// canonical query). The checker itself is shown to fail on a wrong secret, a changed date and an unsorted query.
#include <gtest/gtest.h>

#include <fcntl.h>

#include "batchd/wire/unique_fd.h"
#include "fault_server_fixture.h"
#include "remote/object_store.h"

namespace batchd::daemon::remote {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

const AwsCredentials kWithToken{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "IQoJb3JpZ2luX2Vj//+/==TOKEN"};
const AwsCredentials kWithoutToken{"AKIDEXAMPLE2", "another/secret+key", ""};
const std::string kRegion = "eu-west-3";
const std::string kKey = "data/a b/é+ü=~.tar";

// What differs between each request of the log and botocore's version of it ("" for none), one per request.
std::vector<std::string> differences(const std::string& log, const AwsCredentials& c) {
  const std::vector<LoggedRequest> sent = read_request_log(log);
  bool ok = false;
  const std::string out = run_command({kPython, remote_script("sigv4_expected.py"), "--log", log, "--key-id",
                                       c.access_key_id, "--secret", c.secret_access_key, "--token", c.session_token,
                                       "--region", kRegion},
                                      &ok);
  EXPECT_TRUE(ok) << "sigv4_expected.py failed (botocore: ./setup.sh --tests installs it into the venv)";
  std::istringstream lines(out);
  std::vector<std::string> diffs;
  for (const LoggedRequest& r : sent) {
    std::string line;
    std::getline(lines, line);
    boost::property_tree::ptree want;
    std::istringstream text(line);
    boost::property_tree::read_json(text, want);
    std::string d;
    if (r.target != want.get<std::string>("expected_target")) {
      d += "target " + r.target + " != botocore's " + want.get<std::string>("expected_target") + "; ";
    }
    if (r.header("Authorization") != want.get<std::string>("authorization")) {
      d += r.method + " " + r.target + ": Authorization " + r.header("Authorization") + " != botocore's " +
           want.get<std::string>("authorization");
    }
    diffs.push_back(d);
  }
  return diffs;
}

class RemoteSigV4 : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("sigv4-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    write_file(root_ / "bkt" / kKey, "payload");
    // Continuation tokens are base64 of the last key: "=" after train/a.tar, "+" after ~~~1, "/" after ÿÿ0.
    for (const char* k : {"train/a.tar", "train/~~~1.tar", "train/ÿÿ0.tar", "train/z.tar"}) {
      write_file(root_ / "bkt" / k, k);
    }
  }
  void TearDown() override {
    fs::remove_all(root_);
    fs::remove(root_.string() + ".log.jsonl");
    fs::remove(root_.string() + "-out");
  }
  // The requests the test makes, signed with `c`; the server's log of them.
  std::vector<LoggedRequest> make_requests(FaultServer& server, const AwsCredentials& c) {
    HttpSettings h;
    h.list_page_size = 1;
    AwsSettings s3;
    s3.credentials = c;
    s3.region = kRegion;
    s3.endpoint_url = server.url();
    ObjectStore store(h, s3);
    auto st = store.stat("s3://bkt/" + kKey);
    EXPECT_TRUE(st.ok()) << st.error().message();
    wire::UniqueFd fd(::open((root_.string() + "-out").c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600));
    EXPECT_TRUE(st.ok() && store.fetch(*st, fd.get()).ok());
    auto listed = store.list("s3://bkt/train/", 10);
    EXPECT_TRUE(listed.ok() && listed->size() == 4u);
    return server.requests();
  }
  fs::path root_;
};

TEST_F(RemoteSigV4, EveryRequestCarriesBotocoresSignature) {
  for (const AwsCredentials& c : {kWithToken, kWithoutToken}) {
    SCOPED_TRACE(c.access_key_id);
    FaultServer server(root_, {});
    ASSERT_TRUE(server.ok());
    const auto sent = make_requests(server, c);
    ASSERT_EQ(sent.size(), 6u) << "HEAD, GET, 4 listing pages";
    for (const std::string& d : differences(server.log_path(), c)) EXPECT_EQ(d, "");
    EXPECT_EQ(sent[0].method, "HEAD");
    EXPECT_EQ(sent[1].target, "/bkt/data/a%20b/%C3%A9%2B%C3%BC%3D~.tar");
    const std::string token_header = c.session_token.empty() ? "" : ";x-amz-security-token";
    EXPECT_NE(sent[1].header("Authorization").find("SignedHeaders=host;if-match;x-amz-content-sha256;x-amz-date" +
                                                   token_header + ", "),
              std::string::npos)
        << sent[1].header("Authorization");
    EXPECT_EQ(sent[1].header("x-amz-security-token"), c.session_token);
    std::string tokens;
    for (const auto& r : sent) tokens += r.target + "\n";
    for (const char* encoded : {"continuation-token=dHJhaW4vYS50YXI%3D", "%2B", "%2F"}) {
      EXPECT_NE(tokens.find(encoded), std::string::npos) << encoded << " in\n" << tokens;
    }
  }
}

TEST_F(RemoteSigV4, TheCheckFailsOnAnotherSecretDateOrQueryOrder) {
  FaultServer server(root_, {});
  ASSERT_TRUE(server.ok());
  ASSERT_EQ(make_requests(server, kWithToken).size(), 6u);
  AwsCredentials wrong = kWithToken;
  wrong.secret_access_key += "x";
  for (const std::string& d : differences(server.log_path(), wrong)) EXPECT_NE(d, "");

  // The same requests as a client would send them with x-amz-date one second later, or the query unsorted.
  const std::string tampered = root_.string() + ".tampered.jsonl";
  std::ifstream in(server.log_path());
  std::ofstream out(tampered);
  for (std::string line; std::getline(in, line);) {
    const size_t date = line.find("\"X-Amz-Date\", \"");
    if (line.find("HEAD") != std::string::npos && date != std::string::npos) {
      char& last = line[date + std::string("\"X-Amz-Date\", \"").size() + 14];  // YYYYMMDDTHHMMS[S]Z
      last = last == '9' ? '8' : static_cast<char>(last + 1);
    }
    const size_t list = line.find("?continuation-token=");
    if (list != std::string::npos) {  // "?a&b&c&d&e" -> "?b&c&d&e&a"
      const size_t amp = line.find('&', list);
      const size_t end = line.find('"', list);
      line = line.substr(0, list + 1) + line.substr(amp + 1, end - amp - 1) + "&" +
             line.substr(list + 1, amp - list - 1) + line.substr(end);
    }
    out << line << "\n";
  }
  out.close();
  const auto diffs = differences(tampered, kWithToken);
  ASSERT_EQ(diffs.size(), 6u);
  EXPECT_NE(diffs[0], "") << "the date changed";
  EXPECT_EQ(diffs[1], "") << "the GET untouched";
  int unsorted = 0;
  for (const auto& d : diffs) unsorted += d.find("target /bkt?") != std::string::npos;
  EXPECT_EQ(unsorted, 3) << "the three pages with a token";
  fs::remove(tampered);
}

}  // namespace
}  // namespace batchd::daemon::remote
