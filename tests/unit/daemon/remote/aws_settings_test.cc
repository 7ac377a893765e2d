// AWS credentials, region and endpoint resolved as the AWS CLI does: the dataset's credentials file, then the
// environment, then the shared files (profiles); errors name the file and the profile, never a secret.
#include "remote/aws_settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "remote/aws_ini.h"

namespace batchd::daemon::remote {
namespace {

namespace fs = std::filesystem;

const char* const kVars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                             "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                             "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "HOME"};
const std::string kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const std::string kToken = "FwoGZXIvYXdzEXAMPLETOKEN";
const std::string kKey = "datasets.train";

class RemoteAwsSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      const char* old = std::getenv(v);
      saved_[v] = old == nullptr ? std::nullopt : std::optional<std::string>(old);
      ::unsetenv(v);
    }
    home_ = fs::path(::testing::TempDir()) / ("aws-settings-" + std::to_string(::getpid()));
    fs::remove_all(home_);
    fs::create_directories(home_ / ".aws");
    ::setenv("HOME", home_.c_str(), 1);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
    fs::remove_all(home_);
  }
  void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  // The error of a resolution that must fail; checks it holds no secret.
  std::string failure(const AwsOverrides& o = {}) {
    auto r = resolve_aws_settings(o, kKey);
    EXPECT_FALSE(r.ok());
    if (r.ok()) return "";
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().message();
    EXPECT_EQ(r.error().message().find(kSecret), std::string::npos) << r.error().message();
    EXPECT_EQ(r.error().message().find(kToken), std::string::npos) << r.error().message();
    return r.error().message();
  }
  std::map<std::string, std::optional<std::string>> saved_;
  fs::path home_;
};

TEST_F(RemoteAwsSettings, NothingSetIsAnonymousInUsEast1) {
  auto r = resolve_aws_settings({}, kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->credentials.empty());
  EXPECT_EQ(r->region, "us-east-1");
  EXPECT_EQ(r->endpoint_url, "https://s3.us-east-1.amazonaws.com");
  EXPECT_NE(r->describe().find("none (requests unsigned)"), std::string::npos) << r->describe();
}

TEST_F(RemoteAwsSettings, EnvironmentKeysRegionAndEndpoint) {
  ::setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecret.c_str(), 1);
  ::setenv("AWS_SESSION_TOKEN", kToken.c_str(), 1);
  ::setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
  ::setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
  auto r = resolve_aws_settings({}, kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->credentials.access_key_id, "AKIAIOSFODNN7EXAMPLE");
  EXPECT_EQ(r->credentials.secret_access_key, kSecret);
  EXPECT_EQ(r->credentials.session_token, kToken);
  EXPECT_EQ(r->region, "eu-west-1");
  EXPECT_EQ(r->endpoint_url, "http://127.0.0.1:9000") << "no trailing '/'";
  const std::string d = r->describe();
  EXPECT_NE(d.find("env AWS_ACCESS_KEY_ID (AKIA...MPLE, session token)"), std::string::npos) << d;
  EXPECT_NE(d.find("region eu-west-1 (AWS_DEFAULT_REGION)"), std::string::npos) << d;
  EXPECT_EQ(d.find(kSecret), std::string::npos);
  EXPECT_EQ(d.find(kToken), std::string::npos);
  EXPECT_EQ(d.find("AKIAIOSFODNN7EXAMPLE"), std::string::npos) << "the key id only masked";

  ::setenv("AWS_REGION", "ap-south-1", 1);
  ::setenv("AWS_ENDPOINT_URL_S3", "https://s3.internal:8443", 1);
  r = resolve_aws_settings({}, kKey);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->region, "ap-south-1") << "AWS_REGION before AWS_DEFAULT_REGION";
  EXPECT_EQ(r->endpoint_url, "https://s3.internal:8443") << "AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL";
  r = resolve_aws_settings({"", "", "http://minio:9000", "us-west-2"}, kKey);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->endpoint_url, "http://minio:9000") << "the dataset's endpoint_url first";
  EXPECT_EQ(r->region, "us-west-2");
}

TEST_F(RemoteAwsSettings, HalfTheEnvironmentKeysIsAnErrorNamingTheMissingOne) {
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecret.c_str(), 1);
  EXPECT_NE(failure().find("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"), std::string::npos);
}

TEST_F(RemoteAwsSettings, SharedFilesProfilesAsTheCliReadsThem) {
  write(home_ / ".aws" / "credentials",
        "# comment\n[default]\naws_access_key_id = AKIADEFAULT00000000\naws_secret_access_key = " + kSecret +
            "\n\n[dev]\nAWS_ACCESS_KEY_ID: AKIADEV0000000000000\naws_secret_access_key=" + kSecret +
            "\naws_session_token = " + kToken + "\n");
  write(home_ / ".aws" / "config",
        "[default]\nregion = eu-central-1\ns3 =\n  max_concurrent_requests = 20\n  addressing_style = path\n"
        "s3api =\n  addressing_style = path\n"
        "[profile dev]\nregion = us-west-1\nendpoint_url = http://localhost:4568\n"
        "[profile cfg-only]\naws_access_key_id = AKIACONFIG0000000000\naws_secret_access_key = " + kSecret + "\n");
  auto r = resolve_aws_settings({}, kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->credentials.access_key_id, "AKIADEFAULT00000000");
  EXPECT_EQ(r->region, "eu-central-1");
  EXPECT_NE(r->describe().find(".aws/credentials [default]"), std::string::npos) << r->describe();

  ::setenv("AWS_PROFILE", "dev", 1);
  r = resolve_aws_settings({}, kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->credentials.access_key_id, "AKIADEV0000000000000") << "names are case-insensitive, ':' delimits too";
  EXPECT_EQ(r->credentials.session_token, kToken);
  EXPECT_EQ(r->region, "us-west-1");
  EXPECT_EQ(r->endpoint_url, "http://localhost:4568");

  ::setenv("AWS_PROFILE", "cfg-only", 1);
  r = resolve_aws_settings({}, kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->credentials.access_key_id, "AKIACONFIG0000000000") << "keys in the config file's [profile X]";

  ::setenv("AWS_ACCESS_KEY_ID", "AKIAENV0000000000000", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecret.c_str(), 1);
  r = resolve_aws_settings({}, kKey);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->credentials.access_key_id, "AKIAENV0000000000000") << "env keys before AWS_PROFILE's (as the CLI)";
  r = resolve_aws_settings({"", "dev", "", ""}, kKey);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->credentials.access_key_id, "AKIADEV0000000000000") << "the dataset's profile is explicit: env skipped";
}

TEST_F(RemoteAwsSettings, AMissingProfileNamesFilesAndProfile) {
  write(home_ / ".aws" / "credentials", "[default]\naws_access_key_id = AKIA\naws_secret_access_key = " + kSecret);
  ::setenv("AWS_PROFILE", "prod", 1);
  const std::string msg = failure();
  EXPECT_NE(msg.find("the profile prod (from AWS_PROFILE) is in neither " + (home_ / ".aws" / "credentials").string() +
                     " nor " + (home_ / ".aws" / "config").string()),
            std::string::npos)
      << msg;
}

TEST_F(RemoteAwsSettings, TheDatasetsCredentialsFile) {
  const fs::path file = home_ / "team-creds";
  write(file, "[default]\naws_access_key_id = AKIATEAM000000000000\naws_secret_access_key = " + kSecret +
                  "\n[ro]\naws_secret_access_key = " + kSecret + "\n[assumed]\nrole_arn = arn:aws:iam::1:role/x\n");
  ::setenv("AWS_ACCESS_KEY_ID", "AKIAENV0000000000000", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecret.c_str(), 1);
  auto r = resolve_aws_settings({file.string(), "", "", ""}, kKey);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->credentials.access_key_id, "AKIATEAM000000000000") << "the dataset's file before the environment";

  std::string msg = failure({file.string(), "nope", "", ""});
  EXPECT_NE(msg.find(file.string() + " (datasets.train.credentials_file) has no profile [nope]"), std::string::npos)
      << msg;
  msg = failure({file.string(), "ro", "", ""});
  EXPECT_NE(msg.find("profile [ro] has aws_secret_access_key but no aws_access_key_id"), std::string::npos) << msg;
  msg = failure({file.string(), "assumed", "", ""});
  EXPECT_NE(msg.find("uses role_arn, which batchd does not run"), std::string::npos) << msg;
  auto missing = resolve_aws_settings({(home_ / "absent").string(), "", "", ""}, kKey);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("datasets.train.credentials_file: cannot open " + (home_ / "absent").string()),
            std::string::npos)
      << missing.error().message();
}

TEST_F(RemoteAwsSettings, MalformedFilesNameFileAndLineNeverTheText) {
  write(home_ / ".aws" / "credentials", "[default]\naws_access_key_id = AKIA\n" + kSecret + "\n");
  const std::string msg = failure();
  EXPECT_NE(msg.find(".aws/credentials:3: neither a [section] nor a name = value line"), std::string::npos) << msg;
  auto twice = parse_aws_ini("[a]\nx = 1\n[a]\n", "f");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("f:3: section [a] given twice"), std::string::npos);
  auto dup = parse_aws_ini("[a]\nx = 1\nX = 2\n", "f");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message().find("f:3: 'x' given twice"), std::string::npos);
}

TEST_F(RemoteAwsSettings, EndpointMustBeHttpWithoutCredentials) {
  ::setenv("AWS_ENDPOINT_URL", "http://user:pw@minio:9000", 1);
  std::string msg = failure();
  EXPECT_NE(msg.find("(from AWS_ENDPOINT_URL) is not http(s)://HOST"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("pw@"), std::string::npos) << msg;
  ::setenv("AWS_ENDPOINT_URL", "ftp://minio", 1);
  failure();
}

}  // namespace
}  // namespace batchd::daemon::remote
