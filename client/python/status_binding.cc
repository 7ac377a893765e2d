// status_binding.cc — what `python -m batchd` asks: the module's version, the default socket, and the daemon's
// status (batchd/admin.h's Admin::status(), one request on a connection of its own).
#include <pybind11/stl.h>

#include "batchd/admin.h"
#include "batchd/wire/convert.h"
#include "binding.h"

void batchd_py::bind_status(py::module_& m) {
  m.attr("__version__") = BATCHD_VERSION;  // CMakeLists.txt's project(batchd VERSION ...)
  m.def("default_socket_path", &batchd::wire::default_socket_path,
        "the socket used when none is given: $BATCHD_SOCKET if set, else /run/batchd/batchd.sock");
  m.def(
      "status",
      [](const std::string& socket) {
        batchd::Result<batchd::DaemonStatus> r = batchd::Error(batchd::ErrorCode::kInternal, "not asked");
        std::string path = socket;
        {
          py::gil_scoped_release release;  // a daemon that accepts but does not answer blocks only this thread
          auto admin = batchd::Admin::connect(socket);
          if (admin.ok()) {
            path = admin->socket_path();
            r = admin->status();
          } else {
            r = admin.error();
          }
        }
        const batchd::DaemonStatus s = unwrap(std::move(r));
        py::dict d;
        d["socket"] = path;
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
        return d;
      },
      py::arg("socket") = "",
      "the daemon's status as a dict (socket, daemon_pid, instance_id, version, uptime_seconds, datasets, workers, "
      "streams, connections, draining, admin); BatchdError if it cannot be reached (its message says why and what "
      "to do). Blocks until the daemon answers.");
}
