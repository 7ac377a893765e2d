#include "config/config.h"

#include <grp.h>
#include <toml++/toml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "config/pipeline_config.h"
#include "config/toml_read.h"
#include "default_config.inc"  // kDefaultConfigToml, generated from default_config.toml by CMake

namespace batchd::daemon {

namespace {

Status parse_daemon(const toml::table& t, const std::string& source, Config* config) {
  BATCHD_RETURN_IF_ERROR(
      reject_unknown(t, {"socket", "socket_mode", "socket_group", "admin_group", "workers", "min_chunk_us",
                         "shm_strategy", "log_level", "task_timeout_min_s", "per_sample_timeout_ms", "cache_dir"},
                     "daemon.", source));
  BATCHD_RETURN_IF_ERROR(read_string(t, "socket_group", "daemon.", source, &config->socket_group));
  BATCHD_RETURN_IF_ERROR(read_string(t, "socket", "daemon.", source, &config->socket));
  BATCHD_RETURN_IF_ERROR(read_string(t, "admin_group", "daemon.", source, &config->admin_group));
  BATCHD_RETURN_IF_ERROR(read_string(t, "cache_dir", "daemon.", source, &config->cache_dir));
  if (!config->cache_dir.empty() && config->cache_dir.front() != '/') {
    return bad(source, *t.get("cache_dir"), "daemon.cache_dir",
               "'" + config->cache_dir + "' must be an absolute path (or \"\" for no index cache)");
  }
  if (!config->admin_group.empty() && ::getgrnam(config->admin_group.c_str()) == nullptr) {
    return bad(source, *t.get("admin_group"), "daemon.admin_group",
               "'" + config->admin_group + "' is not a group on this host (see getent group); create it "
               "(groupadd) or set \"\" for no admin group");
  }
  BATCHD_RETURN_IF_ERROR(read_int(t, "workers", "daemon.", source, 0, 1024, &config->workers));
  BATCHD_RETURN_IF_ERROR(read_int(t, "min_chunk_us", "daemon.", source, 0, 1000000, &config->min_chunk_us));
  BATCHD_RETURN_IF_ERROR(read_int(t, "task_timeout_min_s", "daemon.", source, 1, 86400, &config->task_timeout_min_s));
  BATCHD_RETURN_IF_ERROR(
      read_int(t, "per_sample_timeout_ms", "daemon.", source, 1, 3600000, &config->per_sample_timeout_ms));
  std::string mode, strategy, level;
  BATCHD_RETURN_IF_ERROR(read_string(t, "socket_mode", "daemon.", source, &mode));
  if (!mode.empty()) {
    char* end = nullptr;
    const unsigned long m = std::strtoul(mode.c_str(), &end, 8);
    if (*end != '\0' || m > 0777) return bad(source, *t.get("socket_mode"), "daemon.socket_mode",
                                             "'" + mode + "' is not an octal file mode such as \"0660\"");
    config->socket_mode = static_cast<uint32_t>(m);
  }
  BATCHD_RETURN_IF_ERROR(read_string(t, "shm_strategy", "daemon.", source, &strategy));
  if (!strategy.empty()) {
    auto s = parse_strategy(strategy);
    if (!s.ok()) return bad(source, *t.get("shm_strategy"), "daemon.shm_strategy", s.error().message());
    config->shm_strategy = *s;
  }
  BATCHD_RETURN_IF_ERROR(read_string(t, "log_level", "daemon.", source, &level));
  if (!level.empty()) {
    static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
    if (!levels.count(level)) {
      return bad(source, *t.get("log_level"), "daemon.log_level",
                 "'" + level + "' is not one of trace, debug, info, warn, error, critical, off");
    }
    config->log_level = level;
  }
  return ok_status();
}

Status parse_limits(const toml::table& t, const std::string& source, Limits* l) {
  BATCHD_RETURN_IF_ERROR(reject_unknown(t,
                                        {"max_frame_bytes", "max_batch_size", "default_depth", "max_depth",
                                         "max_streams_per_connection", "max_segment_bytes", "max_shm_bytes",
                                         "max_request_bytes", "frame_timeout_ms", "max_connections",
                                         "max_connections_per_uid", "max_streams_per_uid", "max_ops",
                                         "max_output_side", "max_kernel_size", "max_padding", "max_attached_workers",
                                         "max_sample_work"},
                                        "limits.", source));
  const std::string p = "limits.";
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_frame_bytes", p, source, 4096, 64 << 20, &l->max_frame_bytes));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_batch_size", p, source, 1, 1 << 24, &l->max_batch_size));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_depth", p, source, 1, 4096, &l->max_depth));
  BATCHD_RETURN_IF_ERROR(read_int(t, "default_depth", p, source, 1, 4096, &l->default_depth));
  BATCHD_RETURN_IF_ERROR(
      read_int(t, "max_streams_per_connection", p, source, 1, 1 << 20, &l->max_streams_per_connection));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_streams_per_uid", p, source, 1, 1 << 20, &l->max_streams_per_uid));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_attached_workers", p, source, 1, 4096, &l->max_attached_workers));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_segment_bytes", p, source, 1 << 16, int64_t{1} << 46,
                                  &l->max_segment_bytes));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_shm_bytes", p, source, 0, int64_t{1} << 50, &l->max_shm_bytes));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_request_bytes", p, source, 1024, 64 << 20, &l->max_request_bytes));
  BATCHD_RETURN_IF_ERROR(read_int(t, "frame_timeout_ms", p, source, 10, 3600000, &l->frame_timeout_ms));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_connections", p, source, 1, 1 << 20, &l->max_connections));
  BATCHD_RETURN_IF_ERROR(
      read_int(t, "max_connections_per_uid", p, source, 1, 1 << 20, &l->max_connections_per_uid));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_ops", p, source, 1, 1024, &l->max_ops));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_output_side", p, source, 8, 65536, &l->max_output_side));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_kernel_size", p, source, 1, 4097, &l->max_kernel_size));
  BATCHD_RETURN_IF_ERROR(read_int(t, "max_padding", p, source, 0, 65536, &l->max_padding));
  BATCHD_RETURN_IF_ERROR(
      read_int(t, "max_sample_work", p, source, 1'000'000, int64_t{1} << 50, &l->max_sample_work));
  if (l->default_depth > l->max_depth) {
    const toml::node* n = t.get("default_depth") ? t.get("default_depth") : t.get("max_depth");
    return bad(source, *n, "limits.default_depth",
               std::to_string(l->default_depth) + " exceeds limits.max_depth (" + std::to_string(l->max_depth) + ")");
  }
  return ok_status();
}

Status parse_dataset(const std::string& name, const toml::node& node, const std::string& source, Config* config) {
  const std::string p = "datasets." + name + ".";
  const toml::table* t = node.as_table();
  if (t == nullptr) return bad(source, node, "datasets." + name, "must be a table");
  DatasetConfig d;
  d.name = name;
  BATCHD_RETURN_IF_ERROR(read_string(*t, "format", p, source, &d.format));
  if (d.format == "idx") {
    BATCHD_RETURN_IF_ERROR(reject_unknown(*t, {"format", "images", "labels"}, p, source));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "images", p, source, &d.images));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "labels", p, source, &d.labels));
    if (d.images.empty() || d.labels.empty()) {
      return bad(source, node, p + (d.images.empty() ? "images" : "labels"),
                 "is required for format \"idx\" (path of the IDX file, raw or .gz)");
    }
  } else if (d.format == "imagefolder") {
    BATCHD_RETURN_IF_ERROR(reject_unknown(*t, {"format", "root"}, p, source));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "root", p, source, &d.root));
    if (d.root.empty()) {
      return bad(source, node, p + "root", "is required for format \"imagefolder\" (root/<class>/<image>.jpg)");
    }
  } else if (d.format == "webdataset") {
    BATCHD_RETURN_IF_ERROR(reject_unknown(*t, {"format", "shards", "image_field", "label_field", "endpoint_url",
                                               "region", "profile", "credentials_file"}, p, source));
    BATCHD_RETURN_IF_ERROR(read_string_list(*t, "shards", p, source, &d.shards));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "endpoint_url", p, source, &d.endpoint_url));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "region", p, source, &d.region));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "profile", p, source, &d.profile));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "credentials_file", p, source, &d.credentials_file));
    if (d.shards.empty()) {
      return bad(source, node, p + "shards",
                 "is required for format \"webdataset\" (\"/data/shard-{000000..000099}.tar\", a glob, or a list "
                 "of them)");
    }
    BATCHD_RETURN_IF_ERROR(read_string(*t, "image_field", p, source, &d.image_field));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "label_field", p, source, &d.label_field));
    for (const char* key : {"image_field", "label_field"}) {
      const std::string& v = key[0] == 'i' ? d.image_field : d.label_field;
      if (v.empty() || v.find_first_of("/.") != std::string::npos || v.front() == ';' || v.back() == ';' ||
          v.find(";;") != std::string::npos) {
        return bad(source, t->get(key) ? *t->get(key) : node, p + key,
                   "'" + v + "' must be member extensions without dots, separated by ';' (e.g. \"jpg;png\")");
      }
    }
    if (d.label_field.find(';') != std::string::npos) {
      return bad(source, *t->get("label_field"), p + "label_field", "must name one extension (e.g. \"cls\")");
    }
  } else if (d.format == "tokens") {
    BATCHD_RETURN_IF_ERROR(reject_unknown(*t, {"format", "path", "dtype", "seq_len"}, p, source));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "path", p, source, &d.path));
    if (d.path.empty()) {
      return bad(source, node, p + "path", "is required for format \"tokens\" (a raw uint16/uint32 token array, "
                                           "as nanoGPT's train.bin)");
    }
    BATCHD_RETURN_IF_ERROR(read_string(*t, "dtype", p, source, &d.dtype));
    if (d.dtype != "uint16" && d.dtype != "uint32") {
      return bad(source, *t->get("dtype"), p + "dtype", "'" + d.dtype + "' is not \"uint16\" or \"uint32\"");
    }
    if (t->get("seq_len") == nullptr) {
      return bad(source, node, p + "seq_len", "is required for format \"tokens\" (T: tokens per sample)");
    }
    BATCHD_RETURN_IF_ERROR(read_int(*t, "seq_len", p, source, 1, kMaxSeqLen, &d.seq_len));
  } else {
    return bad(source, t->get("format") ? *t->get("format") : node, p + "format",
               "'" + d.format + "' is not a supported dataset format (supported: idx, imagefolder, webdataset, "
                                "tokens)");
  }
  config->datasets.push_back(std::move(d));
  return ok_status();
}

Status parse_remote(const toml::table& t, const std::string& source, RemoteSettings* r) {
  const std::string p = "remote.";
  BATCHD_RETURN_IF_ERROR(reject_unknown(t,
                                        {"cache_max_bytes", "fetch_concurrency", "prefetch_shards",
                                         "connect_timeout_s", "stall_timeout_s", "request_timeout_s", "retries",
                                         "backoff_base_s", "backoff_max_s", "ca_file"},
                                        p, source));
  BATCHD_RETURN_IF_ERROR(read_int(t, "cache_max_bytes", p, source, 0, int64_t{1} << 56, &r->cache_max_bytes));
  BATCHD_RETURN_IF_ERROR(read_int(t, "fetch_concurrency", p, source, 1, 256, &r->fetch_concurrency));
  BATCHD_RETURN_IF_ERROR(read_int(t, "prefetch_shards", p, source, 0, 4096, &r->prefetch_shards));
  BATCHD_RETURN_IF_ERROR(read_number(t, "connect_timeout_s", p, source, 0.01, 3600, &r->connect_timeout_s));
  BATCHD_RETURN_IF_ERROR(read_number(t, "stall_timeout_s", p, source, 0.1, 3600, &r->stall_timeout_s));
  BATCHD_RETURN_IF_ERROR(read_number(t, "request_timeout_s", p, source, 0, 86400, &r->request_timeout_s));
  BATCHD_RETURN_IF_ERROR(read_int(t, "retries", p, source, 0, 100, &r->retries));
  BATCHD_RETURN_IF_ERROR(read_number(t, "backoff_base_s", p, source, 0, 60, &r->backoff_base_s));
  BATCHD_RETURN_IF_ERROR(read_number(t, "backoff_max_s", p, source, 0, 600, &r->backoff_max_s));
  BATCHD_RETURN_IF_ERROR(read_string(t, "ca_file", p, source, &r->ca_file));
  if (!r->ca_file.empty() && r->ca_file.front() != '/') {
    return bad(source, *t.get("ca_file"), p + "ca_file", "'" + r->ca_file + "' must be an absolute path");
  }
  return ok_status();
}

}  // namespace

std::string_view default_config_text() { return kDefaultConfigToml; }

Result<Config> parse_config(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Error(ErrorCode::kInvalidArgument, source + ":" + std::to_string(e.source().begin.line) + ":" +
                                                  std::to_string(e.source().begin.column) + ": " +
                                                  std::string(e.description()));
  }
  Config config;
  BATCHD_RETURN_IF_ERROR(reject_unknown(root, {"daemon", "limits", "shares", "cache", "datasets", "metrics",
                                               "pipelines", "remote"}, "", source));
  for (const char* section : {"daemon", "limits", "shares", "cache", "datasets", "metrics", "pipelines", "remote"}) {
    const toml::node* node = root.get(section);
    if (node != nullptr && !node->is_table()) return bad(source, *node, section, "must be a table ([" +
                                                                                  std::string(section) + "])");
  }
  if (const auto* t = root["daemon"].as_table()) BATCHD_RETURN_IF_ERROR(parse_daemon(*t, source, &config));
  if (const auto* t = root["limits"].as_table()) BATCHD_RETURN_IF_ERROR(parse_limits(*t, source, &config.limits));
  if (const auto* t = root["shares"].as_table()) {
    BATCHD_RETURN_IF_ERROR(reject_unknown(*t, {"max_lag", "max_subscribers", "stall_timeout_ms"}, "shares.", source));
    BATCHD_RETURN_IF_ERROR(read_int(*t, "stall_timeout_ms", "shares.", source, 10, 600000,
                                    &config.shares.stall_timeout_ms));
    BATCHD_RETURN_IF_ERROR(read_int(*t, "max_lag", "shares.", source, 1, 4096, &config.shares.max_lag));
    BATCHD_RETURN_IF_ERROR(
        read_int(*t, "max_subscribers", "shares.", source, 1, 4096, &config.shares.max_subscribers));
  }
  if (const auto* t = root["cache"].as_table()) {
    BATCHD_RETURN_IF_ERROR(reject_unknown(*t, {"max_bytes", "max_bytes_per_uid"}, "cache.", source));
    BATCHD_RETURN_IF_ERROR(read_int(*t, "max_bytes", "cache.", source, 0, int64_t{1} << 50, &config.cache.max_bytes));
    BATCHD_RETURN_IF_ERROR(read_int(*t, "max_bytes_per_uid", "cache.", source, 0, int64_t{1} << 50,
                                    &config.cache.max_bytes_per_uid));
  }
  if (const auto* t = root["remote"].as_table()) BATCHD_RETURN_IF_ERROR(parse_remote(*t, source, &config.remote));
  if (const auto* t = root["metrics"].as_table()) {
    BATCHD_RETURN_IF_ERROR(reject_unknown(*t, {"listen", "per_stream"}, "metrics.", source));
    BATCHD_RETURN_IF_ERROR(read_string(*t, "listen", "metrics.", source, &config.metrics_listen));
    BATCHD_RETURN_IF_ERROR(read_bool(*t, "per_stream", "metrics.", source, &config.metrics_per_stream));
  }
  if (const auto* t = root["datasets"].as_table()) {
    for (const auto& [k, v] : *t) BATCHD_RETURN_IF_ERROR(parse_dataset(std::string(k.str()), v, source, &config));
  }
  if (const auto* t = root["pipelines"].as_table()) BATCHD_RETURN_IF_ERROR(parse_pipelines(*t, source, &config));
  return config;
}

Result<Config> load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return posix_error("cannot read config file " + path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace batchd::daemon
