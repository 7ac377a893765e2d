// connect_binding.cc — how the Python side connects: ConnectOptions from Python arguments, and the daemon's
// credentials (SO_PEERCRED, batchd/client.h's DaemonCredentials) as a dict.
#include <cmath>

#include "binding.h"

batchd::ConnectOptions batchd_py::connect_options(const std::string& socket, const py::object& request_timeout,
                                                  const py::object& expected_owner) {
  batchd::ConnectOptions o;
  o.socket_path = socket;
  o.warn = false;  // the caller shows DaemonCredentials::warning itself (a Python warning, or python -m batchd)
  if (!request_timeout.is_none()) {
    const double s = request_timeout.cast<double>();
    if (!std::isfinite(s) || s < 0 || s > 1e9) {  // the bound of $BATCHD_TIMEOUT (connect_settings.cc)
      throw py::value_error("request_timeout must be a number of seconds >= 0 and at most 1e9 (0 = no deadline), not " +
                            std::string(py::str(request_timeout)));
    }
    o.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(s * 1000)));
  }
  if (!expected_owner.is_none()) o.expected_owner = std::string(py::str(expected_owner));  // a uid or a user name
  return o;
}

py::dict batchd_py::credentials_dict(const batchd::DaemonCredentials& d) {
  py::dict out;
  out["pid"] = d.pid;
  out["uid"] = d.uid;
  out["gid"] = d.gid;
  out["user"] = d.user;
  out["warning"] = d.warning;
  return out;
}
