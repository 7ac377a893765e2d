// server_settings.h — the settings the server layer reads: the [daemon] keys of its socket and admin group.
//
// Config (config/config.h) derives from ServerSettings, so Server reads the daemon's one Config through this
// narrower type; the stream layer's settings come with it (the status reports limits and the default strategy).
// Defaults are the documented ones (deploy/batchd.toml).
#pragma once

#include <cstdint>
#include <string>

#include "streams/stream_settings.h"

namespace batchd::daemon {

struct ServerSettings : StreamSettings {
  std::string socket = "/run/batchd/batchd.sock";
  uint32_t socket_mode = 0660;
  std::string socket_group;  // "" = the daemon's primary group
  std::string admin_group;   // members may drain/shutdown and see every stream; "" = root and the daemon's uid only
};

}  // namespace batchd::daemon
