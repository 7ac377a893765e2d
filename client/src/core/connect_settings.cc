#include "core/connect_settings.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "batchd/wire/convert.h"

namespace batchd::detail {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The passwd entry of `name` (or of `uid` when name is null): its uid and name; nullopt if there is none.
std::optional<passwd> lookup(const char* name, uid_t uid, std::vector<char>* buffer) {
  passwd entry{}, *found = nullptr;
  buffer->resize(16384);
  const int rc = name != nullptr ? ::getpwnam_r(name, &entry, buffer->data(), buffer->size(), &found)
                                 : ::getpwuid_r(uid, &entry, buffer->data(), buffer->size(), &found);
  if (rc != 0 || found == nullptr) return std::nullopt;
  return entry;
}

Result<uid_t> parse_owner(const std::string& spec, const std::string& source) {
  if (spec.find_first_not_of("0123456789") == std::string::npos && spec.size() <= 10) {
    const unsigned long long uid = std::stoull(spec);
    if (uid < static_cast<unsigned long long>(static_cast<uid_t>(-1))) return static_cast<uid_t>(uid);
  }
  std::vector<char> buffer;
  if (auto entry = lookup(spec.c_str(), 0, &buffer)) return entry->pw_uid;
  return Error(ErrorCode::kInvalidArgument, source + " = '" + spec +
                                                "' is neither a uid nor a user name known here (getent passwd " +
                                                spec + "); give the daemon's uid or user, e.g. 'batchd'");
}

Result<std::chrono::milliseconds> parse_seconds(const std::string& text, const std::string& source) {
  errno = 0;
  char* end = nullptr;
  const double s = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno != 0 || !std::isfinite(s) || s < 0 || s > 1e9) {
    return Error(ErrorCode::kInvalidArgument, source + " = '" + text +
                                                  "' is not a number of seconds >= 0 (e.g. 30 or 0.5; 0 = wait "
                                                  "forever)");
  }
  // Round up, so a tiny positive timeout is not 0 (= forever).
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(s * 1000)));
}

}  // namespace

std::string user_name(uid_t uid) {
  std::vector<char> buffer;
  auto entry = lookup(nullptr, uid, &buffer);
  return entry ? std::string(entry->pw_name) : std::string();
}

std::string describe_uid(uid_t uid) {
  const std::string name = user_name(uid);
  return "uid " + std::to_string(uid) + (name.empty() ? "" : " (" + name + ")");
}

Result<ConnectSettings> resolve(const ConnectOptions& options) {
  ConnectSettings s;
  s.path = options.socket_path.empty() ? wire::default_socket_path() : options.socket_path;
  s.warn = options.warn;
  if (options.request_timeout) {
    if (options.request_timeout->count() < 0) {
      return Error(ErrorCode::kInvalidArgument, "ConnectOptions::request_timeout is negative (0 = wait forever)");
    }
    s.request_timeout = *options.request_timeout;
  } else if (const char* t = env("BATCHD_TIMEOUT")) {
    auto parsed = parse_seconds(t, "$BATCHD_TIMEOUT");
    if (!parsed.ok()) return parsed.error();
    s.request_timeout = *parsed;
  }
  std::string owner = options.expected_owner;
  s.owner_source = "the client's expected owner";
  if (owner.empty() && env("BATCHD_EXPECT_OWNER") != nullptr) {
    owner = env("BATCHD_EXPECT_OWNER");
    s.owner_source = "$BATCHD_EXPECT_OWNER";
  }
  if (!owner.empty()) {
    auto uid = parse_owner(owner, s.owner_source);
    if (!uid.ok()) return uid.error();
    s.expected_owner = *uid;
  }
  return s;
}

}  // namespace batchd::detail
