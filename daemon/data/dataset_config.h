// dataset_config.h — one dataset's settings ([datasets.<name>] of the daemon's TOML, config.h reads them) and the
// largest token window: the data layer's own settings type (docs/design.md, "Layers").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchd::daemon {

// One [datasets.<name>] table. Every key of every format is a field here, and two entries are the same dataset only
// if every field is equal (a reload compares them with ==, so a new key can never be missed).
struct DatasetConfig {
  std::string name;
  std::string format;  // "idx", "imagefolder", "webdataset" or "tokens"
  std::string images;  // idx: IDX3 image file, raw or .gz
  std::string labels;  // idx: IDX1 label file, raw or .gz
  std::string root;    // imagefolder: root/<class>/<image>
  // webdataset: shard patterns, each a path with brace ranges ("shard-{000000..000099}.tar") or a glob.
  std::vector<std::string> shards;
  std::string image_field = "jpg;jpeg;png";  // webdataset: extensions that may hold the image, ';'-separated
  std::string label_field = "cls";           // webdataset: extension of the label member (ASCII integer)
  std::string path;                          // tokens: the raw token array (nanoGPT's train.bin)
  std::string dtype = "uint16";              // tokens: "uint16" or "uint32", little-endian
  uint32_t seq_len = 0;                      // tokens: T, tokens per sample (a window holds T + 1)
  // webdataset with s3:// shards (remote/aws_settings.h): where credentials, endpoint and region come from when not
  // from the environment. Never a secret inline: credentials_file names an AWS shared-credentials file.
  std::string endpoint_url, region, profile, credentials_file;

  bool operator==(const DatasetConfig&) const = default;
};

// The largest T of a token dataset (datasets.NAME.seq_len) and of a stream (OpenStream.seq_len).
inline constexpr uint32_t kMaxSeqLen = 1u << 24;

}  // namespace batchd::daemon
