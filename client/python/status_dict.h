// status_dict.h — internal to the _batchd extension: a status type (batchd/daemon_status.h: DaemonStatus and its
// parts) as a Python dict, made from its table (batchd/status_fields.h) as batchctl --json is: the keys are the
// proto field names, nested types are dicts, vectors lists, a sharing strategy the proto enum's name
// ("FILE_DESCRIPTOR"), and the two optional nested messages are left out when the daemon would not send them
// (client/src/admin/status_table.h, field_on_wire). Integers stay ints (JSON writes 64-bit ones as strings).
#pragma once

#include <pybind11/pybind11.h>

#include <type_traits>

#include "admin/status_table.h"

namespace batchd_py {

namespace py = pybind11;

template <typename T>
py::object status_object(const T& v);

template <typename T>
py::dict status_dict(const T& s) {
  py::dict d;
  batchd::detail::StatusTable<T>::each(s, [&](const char* name, const auto& member) {
    using Member = std::decay_t<decltype(member)>;
    if constexpr (batchd::detail::kIsStatus<Member>) {
      if (!batchd::detail::field_on_wire(s, name)) return;
    }
    d[name] = status_object(member);
  });
  return d;
}

template <typename T>
py::object status_object(const T& v) {
  if constexpr (batchd::detail::kIsStatus<T>) {
    return status_dict(v);
  } else if constexpr (batchd::detail::IsVector<T>::value) {
    py::list out;
    for (const auto& e : v) out.append(status_object(e));
    return out;
  } else if constexpr (std::is_same_v<T, batchd::SharingStrategy>) {
    return py::str(batchd::wire::SharingStrategy_Name(batchd::detail::to_wire(v)));
  } else {
    return py::cast(v);
  }
}

}  // namespace batchd_py
