#include "batchd/wire/convert.h"

#include <cstdlib>

namespace batchd::wire {

std::string default_socket_path() {
  const char* env = std::getenv("BATCHD_SOCKET");
  if (env != nullptr && *env != '\0') return env;
  return "/run/batchd/batchd.sock";
}

}  // namespace batchd::wire
