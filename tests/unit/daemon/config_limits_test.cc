// The [metrics], [limits], admin_group and [remote] keys, and the shipped example config (split from config_test.cc).
#include "config/config.h"

#include <gtest/gtest.h>

#include "config_test_support.h"

namespace batchd::daemon {
namespace {

TEST(ConfigTest, ShippedExampleConfigParsesAndMatchesTheEmbeddedDefault) {
  auto example = load_config_file(BATCHD_SOURCE_DIR "/deploy/batchd.toml");
  ASSERT_TRUE(example.ok()) << example.error().message();
  auto embedded = parse_config(default_config_text(), "<embedded>");
  ASSERT_TRUE(embedded.ok());
  EXPECT_EQ(example->socket, embedded->socket);
  EXPECT_EQ(example->socket_mode, embedded->socket_mode);
  EXPECT_EQ(example->workers, embedded->workers);
  EXPECT_EQ(example->shm_strategy, embedded->shm_strategy);
  EXPECT_EQ(example->limits.max_frame_bytes, embedded->limits.max_frame_bytes);
  EXPECT_EQ(example->limits.max_segment_bytes, embedded->limits.max_segment_bytes);
  EXPECT_EQ(example->cache.max_bytes, embedded->cache.max_bytes);
  EXPECT_EQ(example->cache.max_bytes, -1) << "cache.max_bytes absent: a quarter of limits.max_shm_bytes";
  EXPECT_EQ(example->cache.max_bytes_per_uid, embedded->cache.max_bytes_per_uid);
  ASSERT_EQ(example->datasets.size(), embedded->datasets.size());
  for (size_t i = 0; i < example->datasets.size(); ++i) {
    EXPECT_EQ(example->datasets[i].name, embedded->datasets[i].name);
    EXPECT_EQ(example->datasets[i].images, embedded->datasets[i].images);
    EXPECT_EQ(example->datasets[i].labels, embedded->datasets[i].labels);
  }
}

}  // namespace
}  // namespace batchd::daemon

namespace batchd::daemon {
namespace {

TEST(ConfigTest, MetricsListenIsReadAndItsTableChecked) {
  auto sut = parse_config("[metrics]\nlisten = \"127.0.0.1:9464\"\n", "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->metrics_listen, "127.0.0.1:9464");
  EXPECT_NE(config_error_of("[metrics]\nport = 9464\n").find("metrics.port"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon

namespace batchd::daemon {
namespace {

TEST(ConfigTest, ClientLimitsAdminGroupAndPerStreamMetricsAreRead) {
  auto sut = parse_config(R"(
[daemon]
admin_group = "users"
[limits]
max_request_bytes = 8192
frame_timeout_ms = 250
max_connections = 10
max_connections_per_uid = 4
max_streams_per_uid = 9
[metrics]
per_stream = true
)", "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->admin_group, "users");
  EXPECT_EQ(sut->limits.max_request_bytes, 8192u);
  EXPECT_EQ(sut->limits.frame_timeout_ms, 250u);
  EXPECT_EQ(sut->limits.max_connections, 10u);
  EXPECT_EQ(sut->limits.max_connections_per_uid, 4u);
  EXPECT_EQ(sut->limits.max_streams_per_uid, 9u);
  EXPECT_TRUE(sut->metrics_per_stream);
  auto defaults = parse_config(default_config_text(), "<embedded>");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->admin_group, "");
  EXPECT_EQ(defaults->limits.max_request_bytes, 65536u);
  EXPECT_EQ(defaults->limits.frame_timeout_ms, 10000u);
  EXPECT_EQ(defaults->limits.max_connections, 1024u);
  EXPECT_EQ(defaults->limits.max_connections_per_uid, 256u);
  EXPECT_EQ(defaults->limits.max_streams_per_uid, 1024u);
  EXPECT_EQ(Limits{}.max_streams_per_uid, 1024u) << "the built-in default is the embedded config's";
  EXPECT_FALSE(defaults->metrics_per_stream);
}

TEST(ConfigTest, AdminGroupMustExistAndLimitsMustBeInRange) {
  auto msg = config_error_of("[daemon]\nadmin_group = \"no-such-group-batchd\"\n");
  EXPECT_NE(msg.find("test.toml:2: key 'daemon.admin_group'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a group on this host"), std::string::npos) << msg;
  EXPECT_NE(config_error_of("[limits]\nmax_request_bytes = 100\n").find("limits.max_request_bytes"), std::string::npos);
  EXPECT_NE(config_error_of("[limits]\nframe_timeout_ms = 0\n").find("limits.frame_timeout_ms"), std::string::npos);
  EXPECT_NE(config_error_of("[limits]\nmax_connections = 0\n").find("limits.max_connections"), std::string::npos);
  EXPECT_NE(config_error_of("[limits]\nmax_connections_per_uid = 0\n").find("limits.max_connections_per_uid"),
            std::string::npos);
  EXPECT_NE(config_error_of("[limits]\nmax_streams_per_uid = 0\n").find("limits.max_streams_per_uid"), std::string::npos);
  EXPECT_NE(config_error_of("[limits]\nmax_streams_per_uid = \"many\"\n").find("limits.max_streams_per_uid"),
            std::string::npos);
  EXPECT_NE(config_error_of("[metrics]\nper_stream = 1\n").find("metrics.per_stream"), std::string::npos);
}

TEST(ConfigTest, MaxAttachedWorkersIsReadDefaultsTo64AndIsRangeChecked) {
  auto sut = parse_config("[limits]\nmax_attached_workers = 8\n", "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->limits.max_attached_workers, 8u);
  auto embedded = parse_config(default_config_text(), "<embedded>");
  ASSERT_TRUE(embedded.ok());
  EXPECT_EQ(embedded->limits.max_attached_workers, 64u);
  EXPECT_EQ(Limits{}.max_attached_workers, 64u) << "the built-in default is the embedded config's";
  auto shipped = load_config_file(BATCHD_SOURCE_DIR "/deploy/batchd.toml");
  ASSERT_TRUE(shipped.ok()) << shipped.error().message();
  EXPECT_EQ(shipped->limits.max_attached_workers, 64u);
  EXPECT_EQ(parse_config("[limits]\nmax_attached_workers = 4096\n", "t.toml")->limits.max_attached_workers, 4096u);
  for (const char* bad : {"0", "4097", "-1", "\"many\""}) {
    const std::string msg = config_error_of(std::string("[limits]\nmax_attached_workers = ") + bad + "\n");
    EXPECT_NE(msg.find("limits.max_attached_workers"), std::string::npos) << bad << ": " << msg;
  }
}

}  // namespace
}  // namespace batchd::daemon

namespace batchd::daemon {
namespace {

TEST(ConfigTest, RemoteTableIsReadCheckedAndItsDefaultsAreTheShippedOnes) {
  auto sut = parse_config("[remote]\ncache_max_bytes = 1000000\nfetch_concurrency = 2\nprefetch_shards = 0\n"
                          "connect_timeout_s = 0.5\nstall_timeout_s = 2\nretries = 1\nbackoff_base_s = 0.01\n"
                          "backoff_max_s = 0.1\nca_file = \"/etc/ssl/ca.pem\"\n"
                          "[datasets.s3]\nformat = \"webdataset\"\nshards = \"s3://b/x-{0..1}.tar\"\n"
                          "endpoint_url = \"http://127.0.0.1:9000\"\nregion = \"eu-west-1\"\nprofile = \"p\"\n"
                          "credentials_file = \"/etc/batchd/creds\"\n",
                          "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->remote.cache_max_bytes, 1000000);
  EXPECT_EQ(sut->remote.fetch_concurrency, 2u);
  EXPECT_EQ(sut->remote.prefetch_shards, 0u);
  EXPECT_DOUBLE_EQ(sut->remote.connect_timeout_s, 0.5);
  EXPECT_DOUBLE_EQ(sut->remote.stall_timeout_s, 2);
  EXPECT_EQ(sut->remote.retries, 1u);
  EXPECT_EQ(sut->remote.ca_file, "/etc/ssl/ca.pem");
  ASSERT_EQ(sut->datasets.size(), 1u);
  EXPECT_EQ(sut->datasets[0].endpoint_url, "http://127.0.0.1:9000");
  EXPECT_EQ(sut->datasets[0].region, "eu-west-1");
  EXPECT_EQ(sut->datasets[0].profile, "p");
  EXPECT_EQ(sut->datasets[0].credentials_file, "/etc/batchd/creds");

  auto embedded = parse_config(default_config_text(), "<embedded>");
  auto shipped = load_config_file(BATCHD_SOURCE_DIR "/deploy/batchd.toml");
  ASSERT_TRUE(embedded.ok() && shipped.ok());
  const RemoteSettings defaults;
  for (const Config* c : {&*embedded, &*shipped}) {
    EXPECT_EQ(c->remote.cache_max_bytes, -1) << "absent: half the cache_dir's free space";
    EXPECT_EQ(c->remote.fetch_concurrency, defaults.fetch_concurrency);
    EXPECT_EQ(c->remote.prefetch_shards, defaults.prefetch_shards);
    EXPECT_EQ(c->remote.retries, defaults.retries);
    EXPECT_DOUBLE_EQ(c->remote.stall_timeout_s, defaults.stall_timeout_s);
    EXPECT_DOUBLE_EQ(c->remote.backoff_max_s, defaults.backoff_max_s);
  }
  for (const char* bad : {"fetch_concurrency = 0", "fetch_concurrency = 257", "retries = -1", "stall_timeout_s = 0",
                          "connect_timeout_s = \"10\"", "ca_file = \"relative.pem\"", "cache_max_bytes = -1",
                          "unknown = 1"}) {
    const std::string msg = config_error_of(std::string("[remote]\n") + bad + "\n");
    EXPECT_NE(msg.find("remote."), std::string::npos) << bad << ": " << msg;
  }
  EXPECT_NE(config_error_of("[datasets.w]\nformat = \"webdataset\"\nshards = \"s3://b/k.tar\"\n"
                            "aws_secret_access_key = \"x\"\n").find("aws_secret_access_key"),
            std::string::npos) << "no secret inline: an unknown key";
}

}  // namespace
}  // namespace batchd::daemon
