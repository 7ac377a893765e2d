// connect_settings.h — internal: ConnectOptions (batchd/client.h) resolved against the environment, once per
// connect: the socket path ($BATCHD_SOCKET), the request timeout ($BATCHD_TIMEOUT) and the required owner
// ($BATCHD_EXPECT_OWNER). An option set in ConnectOptions wins over its variable. Plain values; resolve() reads the
// environment and the passwd database and is thread-safe as far as getenv is.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "batchd/client.h"

namespace batchd::detail {

inline constexpr std::chrono::milliseconds kDefaultRequestTimeout{30000};

struct ConnectSettings {
  std::string path;
  std::chrono::milliseconds request_timeout{kDefaultRequestTimeout};  // zero = wait forever
  std::optional<uid_t> expected_owner;     // nullopt = any
  std::string owner_source;                // "the client's expected owner" or "$BATCHD_EXPECT_OWNER"
  bool warn = true;
};

// Errors: kInvalidArgument naming the variable or option: a timeout that is not a finite number of seconds >= 0, an
// owner that is neither a uid nor a user name in the passwd database.
Result<ConnectSettings> resolve(const ConnectOptions& options);

// "uid 998 (batchd)", or "uid 998" for a uid without a name.
std::string describe_uid(uid_t uid);
// The uid's name in the passwd database, "" if it has none.
std::string user_name(uid_t uid);

}  // namespace batchd::detail
