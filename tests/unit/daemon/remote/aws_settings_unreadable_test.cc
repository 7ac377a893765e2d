// AWS files the daemon's user cannot read (EACCES): the default ~/.aws/config and ~/.aws/credentials are optional,
// so they are a warning naming the file; a file named by AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE stays an
// error for s3:// datasets; http(s):// datasets read no AWS setting at all. Run as nobody (root reads any file).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "remote/aws_settings.h"
#include "user_process.h"

namespace batchd::daemon::remote {
namespace {

namespace fs = std::filesystem;

class RemoteAwsUnreadable : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::path(::testing::TempDir()) / ("aws-unreadable-" + std::to_string(::getpid()));
    fs::remove_all(home_);
    fs::create_directories(home_ / ".aws");
    for (const char* name : {"config", "credentials"}) {
      std::ofstream(home_ / ".aws" / name) << "[default]\nregion = eu-west-1\n";
      ::chmod((home_ / ".aws" / name).c_str(), 0600);  // root's: nobody gets EACCES
    }
    ::chmod(home_.c_str(), 0755);
    ::chmod((home_ / ".aws").c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(home_); }

  // fn run as nobody with HOME = home_ and no AWS_* variable but `env`.
  std::string as_nobody(const std::vector<std::pair<const char*, std::string>>& env,
                        const std::function<std::string()>& fn) {
    return batchd::testing::run_as({}, [&]() -> std::string {
      for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                            "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                            "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}) {
        ::unsetenv(v);
      }
      ::setenv("HOME", home_.c_str(), 1);
      for (const auto& [name, value] : env) ::setenv(name, value.c_str(), 1);
      std::ifstream probe(home_ / ".aws" / "config");
      if (probe) return "the test cannot make ~/.aws/config unreadable for nobody";
      return fn();
    });
  }

  fs::path home_;
};

TEST_F(RemoteAwsUnreadable, UnreadableDefaultFilesAreAWarningNamingThem) {
  SKIP_UNLESS_ROOT();
  EXPECT_EQ(as_nobody({}, [&]() -> std::string {
              auto s = resolve_aws_settings_for({"s3://bkt/train/*.tar"}, {}, "datasets.t");
              if (!s.ok()) return "refused: " + s.error().message();
              for (const std::string& part : std::vector<std::string>{(home_ / ".aws" / "config").string(),
                                                                      (home_ / ".aws" / "credentials").string(),
                                                                      "Permission denied", "ignored"}) {
                if (s->warnings.find(part) == std::string::npos) return "no '" + part + "' in: " + s->warnings;
              }
              if (s->region != "us-east-1") return "region " + s->region;
              return "";
            }),
            "");
}

TEST_F(RemoteAwsUnreadable, HttpShardsReadNoAwsFileEvenAnExplicitOne) {
  SKIP_UNLESS_ROOT();
  const std::string config = (home_ / ".aws" / "config").string(), creds = (home_ / ".aws" / "credentials").string();
  EXPECT_EQ(as_nobody({{"AWS_CONFIG_FILE", config}, {"AWS_SHARED_CREDENTIALS_FILE", creds}, {"AWS_PROFILE", "dev"}},
                      [&]() -> std::string {
                        auto s = resolve_aws_settings_for({"https://h.example/a.tar", "http://h.example/b-{0..3}.tar"},
                                                          {}, "datasets.t");
                        if (!s.ok()) return "refused: " + s.error().message();
                        return s->warnings;
                      }),
            "");
}

TEST_F(RemoteAwsUnreadable, AnExplicitUnreadableFileStaysAnErrorForS3) {
  SKIP_UNLESS_ROOT();
  const std::string creds = (home_ / ".aws" / "credentials").string();
  EXPECT_EQ(as_nobody({{"AWS_SHARED_CREDENTIALS_FILE", creds}}, [&]() -> std::string {
              auto s = resolve_aws_settings_for({"http://h.example/a.tar", "s3://bkt/b.tar"}, {}, "datasets.t");
              if (s.ok()) return "accepted";
              const std::string& m = s.error().message();
              for (const std::string& part :
                   std::vector<std::string>{creds, "AWS_SHARED_CREDENTIALS_FILE", "Permission denied"}) {
                if (m.find(part) == std::string::npos) return "no '" + part + "' in: " + m;
              }
              return "";
            }),
            "");
}

}  // namespace
}  // namespace batchd::daemon::remote
