#include "config/config.h"

#include <gtest/gtest.h>

#include "config_test_support.h"

namespace batchd::daemon {
namespace {

TEST(ConfigTest, EmbeddedDefaultDeclaresBothFashionMnistSplits) {
  auto sut = parse_config(default_config_text(), "<embedded>");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  ASSERT_EQ(sut->datasets.size(), 2u);
  EXPECT_EQ(sut->datasets[0].name, "fashion-mnist");
  EXPECT_EQ(sut->datasets[0].images, "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
  EXPECT_EQ(sut->datasets[1].name, "fashion-mnist-test");
  EXPECT_EQ(sut->shm_strategy, wire::FILE_DESCRIPTOR);
  EXPECT_EQ(sut->socket_mode, 0660u);
}

TEST(ConfigTest, ReadsEveryKey) {
  auto sut = parse_config(R"(
[daemon]
socket = "/tmp/x.sock"
socket_mode = "0600"
workers = 3
shm_strategy = "file_system"
log_level = "debug"
[limits]
max_frame_bytes = 65536
max_batch_size = 1024
default_depth = 2
max_depth = 8
max_streams_per_connection = 5
max_segment_bytes = 1048576
)", "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->socket, "/tmp/x.sock");
  EXPECT_EQ(sut->socket_mode, 0600u);
  EXPECT_EQ(sut->workers, 3u);
  EXPECT_EQ(sut->shm_strategy, wire::FILE_SYSTEM);
  EXPECT_EQ(sut->log_level, "debug");
  EXPECT_EQ(sut->limits.max_frame_bytes, 65536u);
  EXPECT_EQ(sut->limits.max_batch_size, 1024u);
  EXPECT_EQ(sut->limits.default_depth, 2u);
  EXPECT_EQ(sut->limits.max_depth, 8u);
  EXPECT_EQ(sut->limits.max_streams_per_connection, 5u);
  EXPECT_EQ(sut->limits.max_segment_bytes, 1048576u);
}

TEST(ConfigTest, UnknownKeyIsRefusedWithFileLineAndKey) {
  const auto msg = config_error_of("[daemon]\nworkers = 2\nworker = 3\n");
  EXPECT_NE(msg.find("test.toml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("daemon.worker"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key"), std::string::npos) << msg;
}

TEST(ConfigTest, UnknownSectionIsRefused) {
  EXPECT_NE(config_error_of("[deamon]\nworkers = 2\n").find("'deamon'"), std::string::npos);
}

TEST(ConfigTest, WrongTypesAndRangesAreRefused) {
  EXPECT_NE(config_error_of("[daemon]\nworkers = \"two\"\n").find("must be an integer"), std::string::npos);
  EXPECT_NE(config_error_of("[daemon]\nworkers = -1\n").find("out of range"), std::string::npos);
  EXPECT_NE(config_error_of("[daemon]\nsocket_mode = \"rw\"\n").find("octal"), std::string::npos);
  EXPECT_NE(config_error_of("[daemon]\nshm_strategy = \"shm\"\n").find("file_descriptor or file_system"),
            std::string::npos);
  EXPECT_NE(config_error_of("[daemon]\nlog_level = \"loud\"\n").find("log_level"), std::string::npos);
  EXPECT_NE(config_error_of("[limits]\ndefault_depth = 9\nmax_depth = 8\n").find("exceeds limits.max_depth"),
            std::string::npos);
  EXPECT_NE(config_error_of("daemon = 3\n").find("must be a table"), std::string::npos);
}

TEST(ConfigTest, SharesKeysAreReadAndRangeChecked) {
  auto defaults = parse_config("", "t.toml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->shares.max_lag, 8u);
  EXPECT_EQ(defaults->shares.max_subscribers, 32u);
  EXPECT_EQ(defaults->shares.stall_timeout_ms, 2000u);
  auto sut = parse_config("[shares]\nmax_lag = 3\nmax_subscribers = 5\nstall_timeout_ms = 250\n", "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->shares.max_lag, 3u);
  EXPECT_EQ(sut->shares.max_subscribers, 5u);
  EXPECT_EQ(sut->shares.stall_timeout_ms, 250u);
  EXPECT_NE(config_error_of("[shares]\nstall_timeout_ms = 5\n").find("shares.stall_timeout_ms"), std::string::npos);
  EXPECT_NE(config_error_of("[shares]\nmax_lag = 0\n").find("shares.max_lag"), std::string::npos);
  EXPECT_NE(config_error_of("[shares]\nmax_lagg = 2\n").find("max_lagg"), std::string::npos);
}

TEST(ConfigTest, WatchdogTimeoutsAreReadAndRangeChecked) {
  auto sut = parse_config("[daemon]\ntask_timeout_min_s = 5\nper_sample_timeout_ms = 250\n", "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->task_timeout_min_s, 5u);
  EXPECT_EQ(sut->per_sample_timeout_ms, 250u);
  auto defaults = parse_config(default_config_text(), "<embedded>");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->task_timeout_min_s, kDefaultTaskTimeoutMinS) << "default_config.toml and config.h agree";
  EXPECT_EQ(defaults->per_sample_timeout_ms, kDefaultPerSampleTimeoutMs);
  const auto zero = config_error_of("[daemon]\ntask_timeout_min_s = 0\n");
  EXPECT_NE(zero.find("test.toml:2: key 'daemon.task_timeout_min_s': 0 is out of range [1, 86400]"),
            std::string::npos)
      << zero;
  const auto big = config_error_of("[daemon]\nper_sample_timeout_ms = 3600001\n");
  EXPECT_NE(big.find("key 'daemon.per_sample_timeout_ms': 3600001 is out of range"), std::string::npos) << big;
  EXPECT_NE(config_error_of("[daemon]\nper_sample_timeout_ms = \"1s\"\n").find("must be an integer"), std::string::npos);
}

TEST(ConfigTest, DatasetsNeedAKnownFormatAndTheirFiles) {
  EXPECT_NE(config_error_of("[datasets.x]\nformat = \"tfrecord\"\n").find("not a supported dataset format"),
            std::string::npos);
  EXPECT_NE(config_error_of("[datasets.x]\nformat = \"idx\"\nimages = \"/a\"\n").find("datasets.x.labels"),
            std::string::npos);
  EXPECT_NE(config_error_of("[datasets.x]\nformat = \"idx\"\nimages = \"/a\"\nlabels = \"/b\"\nroot = \"/c\"\n")
                .find("datasets.x.root"),
            std::string::npos);
}

TEST(ConfigTest, TokensDatasetKeysAreReadWithTheirDefaultsAndValidated) {
  auto sut = parse_config("[datasets.owt]\nformat = \"tokens\"\npath = \"/data/train.bin\"\nseq_len = 1024\n"
                          "[datasets.big]\nformat = \"tokens\"\npath = \"/data/b.bin\"\ndtype = \"uint32\"\n"
                          "seq_len = 1\n",
                          "t.toml");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  ASSERT_EQ(sut->datasets.size(), 2u);
  const DatasetConfig& owt = sut->datasets[0].name == "owt" ? sut->datasets[0] : sut->datasets[1];
  const DatasetConfig& big = sut->datasets[0].name == "owt" ? sut->datasets[1] : sut->datasets[0];
  EXPECT_EQ(owt.format, "tokens");
  EXPECT_EQ(owt.path, "/data/train.bin");
  EXPECT_EQ(owt.dtype, "uint16") << "nanoGPT's train.bin is uint16: the default";
  EXPECT_EQ(owt.seq_len, 1024u);
  EXPECT_EQ(big.dtype, "uint32");
  EXPECT_EQ(big.seq_len, 1u);
  DatasetConfig longer = owt;
  longer.seq_len = 2048;
  EXPECT_FALSE(longer == owt) << "a reload must notice a changed seq_len";

  const std::string head = "[datasets.t]\nformat = \"tokens\"\n";
  const auto no_path = config_error_of(head + "seq_len = 8\n");
  EXPECT_NE(no_path.find("key 'datasets.t.path'"), std::string::npos) << no_path;
  const auto no_len = config_error_of(head + "path = \"/a.bin\"\n");
  EXPECT_NE(no_len.find("key 'datasets.t.seq_len'"), std::string::npos) << no_len;
  EXPECT_NE(no_len.find("is required"), std::string::npos) << no_len;
  const auto dtype = config_error_of(head + "path = \"/a.bin\"\nseq_len = 8\ndtype = \"int16\"\n");
  EXPECT_NE(dtype.find("key 'datasets.t.dtype': 'int16' is not \"uint16\" or \"uint32\""), std::string::npos) << dtype;
  for (const char* bad_len : {"0", "16777217", "-1"}) {
    const auto len = config_error_of(head + "path = \"/a.bin\"\nseq_len = " + bad_len + "\n");
    EXPECT_NE(len.find("key 'datasets.t.seq_len': " + std::string(bad_len) + " is out of range"), std::string::npos)
        << len;
  }
  EXPECT_NE(config_error_of(head + "path = \"/a.bin\"\nseq_len = \"1k\"\n").find("must be an integer"), std::string::npos);
  const auto other = config_error_of(head + "path = \"/a.bin\"\nseq_len = 8\nroot = \"/x\"\n");
  EXPECT_NE(other.find("datasets.t.root"), std::string::npos) << "keys of other formats are refused: " << other;
}

TEST(ConfigTest, SyntaxErrorsCarryLineAndColumn) {
  const auto msg = config_error_of("[daemon]\nworkers = = 2\n");
  EXPECT_NE(msg.find("test.toml:2:"), std::string::npos) << msg;
}

TEST(ConfigTest, MissingFileIsNamed) {
  auto sut = load_config_file("/nonexistent/batchd.toml");
  ASSERT_FALSE(sut.ok());
  EXPECT_NE(sut.error().message().find("/nonexistent/batchd.toml"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon
