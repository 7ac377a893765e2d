// status_binding.cc — what `python -m batchd` asks: the module's version, the default socket, and the daemon's
// status (batchd/admin.h's Admin::status(), one request on a connection of its own) with who serves the socket.
#include <pybind11/stl.h>

#include "batchd/admin.h"
#include "batchd/wire/convert.h"
#include "binding.h"
#include "status_dict.h"

void batchd_py::bind_status(py::module_& m) {
  m.attr("__version__") = BATCHD_VERSION;  // CMakeLists.txt's project(batchd VERSION ...)
  m.def("default_socket_path", &batchd::wire::default_socket_path,
        "the socket used when none is given: $BATCHD_SOCKET if set, else /run/batchd/batchd.sock");
  m.def(
      "status",
      [](const std::string& socket, const py::object& timeout, const py::object& expected_owner) {
        const auto options = batchd_py::connect_options(socket, timeout, expected_owner);
        batchd::Result<batchd::DaemonStatus> r = batchd::Error(batchd::ErrorCode::kInternal, "not asked");
        std::string path = socket;
        batchd::DaemonCredentials daemon;
        {
          py::gil_scoped_release release;  // a daemon that answers slowly blocks only this thread
          auto admin = batchd::Admin::connect(options);
          if (admin.ok()) {
            path = admin->socket_path();
            daemon = admin->daemon_credentials();
            r = admin->status();
          } else {
            r = admin.error();
          }
        }
        const batchd::DaemonStatus s = unwrap(std::move(r));
        py::dict d;
        d["socket"] = path;
        d["daemon"] = batchd_py::credentials_dict(daemon);  // SO_PEERCRED: pid, uid, gid, user, warning
        d["daemon_pid"] = s.daemon_pid;
        d["instance_id"] = s.instance_id;
        d["version"] = s.version;
        d["uptime_seconds"] = s.uptime_seconds;
        d["datasets"] = s.datasets;  // "name" or "name (detail)": indexing progress, or "unavailable: why"
        d["workers"] = s.workers.size();
        d["streams"] = s.streams.size() + s.streams_of_others;
        d["connections"] = s.connections;
        d["draining"] = s.draining;
        d["admin"] = s.admin;
        d["full"] = batchd_py::status_dict(s);  // every field, keyed as batchctl status --json
        return d;
      },
      py::arg("socket") = "", py::arg("timeout") = py::none(), py::arg("expected_owner") = py::none(),
      "the daemon's status as a dict (socket, daemon: its credentials as Client.daemon, daemon_pid, instance_id, "
      "version, uptime_seconds, datasets, workers, streams, connections, draining, admin; full: the whole status, "
      "every field keyed as `batchctl status --json` keys it); BatchdError if it cannot "
      "be reached, does not answer within `timeout` seconds (None = $BATCHD_TIMEOUT, else 30; 0 = no deadline) or "
      "is not `expected_owner`'s (None = $BATCHD_EXPECT_OWNER): its message says why and what to do.");
}
