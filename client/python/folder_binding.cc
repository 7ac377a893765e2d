// The folder reference and the sample subset of Client.open_stream / plan_stream (folder=, indices=), and
// _batchd.folder_digest, which batchd/_loader/folder.py uses to describe a torchvision ImageFolder's sample list.
#include <pybind11/stl.h>

#include "batchd/wire/folder_digest.h"
#include "binding.h"

namespace batchd_py {

batchd::FolderRef folder_from(const py::handle& v) {
  if (!py::isinstance<py::dict>(v)) {
    throw py::type_error("folder must be a dict with root, classes, num_samples, class_sizes and digest "
                         "(batchd._loader.folder.folder_options makes it from an ImageFolder)");
  }
  batchd::FolderRef f;
  for (auto item : v.cast<py::dict>()) {
    const std::string k = py::str(item.first);
    if (k == "root") f.root = item.second.cast<std::string>();
    else if (k == "classes") f.classes = item.second.cast<std::vector<std::string>>();
    else if (k == "num_samples") f.num_samples = item.second.cast<uint64_t>();
    else if (k == "class_sizes") f.class_sizes = item.second.cast<std::vector<uint64_t>>();
    else if (k == "digest") f.digest = item.second.cast<std::string>();
    else throw py::type_error("unknown folder key '" + k + "' (root, classes, num_samples, class_sizes, digest)");
  }
  if (f.root.empty()) throw py::value_error("folder['root'] is empty: give the realpath of the ImageFolder's root");
  return f;
}

std::vector<uint64_t> indices_from(const py::handle& v) {
  std::vector<uint64_t> out;
  if (py::hasattr(v, "__len__")) out.reserve(py::len(v));
  size_t position = 0;
  for (auto x : py::iter(v)) {
    const auto i = py::int_(py::reinterpret_borrow<py::object>(x)).cast<long long>();
    if (i < 0) {
      throw py::value_error("indices[" + std::to_string(position) + "] is " + std::to_string(i) +
                            ": a Subset's indices must be >= 0 (resolve negative ones against len(dataset))");
    }
    out.push_back(static_cast<uint64_t>(i));
    ++position;
  }
  return out;
}

void bind_folder(py::module_& m) {
  m.def(
      "folder_digest",
      [](const py::iterable& samples) {
        batchd::wire::FolderDigest digest;
        for (auto s : samples) {
          auto pair = s.cast<py::tuple>();
          if (pair.size() != 2) throw py::value_error("folder_digest takes (relative path, class index) pairs");
          const py::handle path = pair[0];
          const std::string bytes = py::isinstance<py::bytes>(path) ? path.cast<std::string>()
                                                                    : py::str(path).cast<std::string>();
          digest.add(bytes, pair[1].cast<uint64_t>());
        }
        return digest.hex();
      },
      "FolderRef.digest of (path relative to the root as bytes or str, class index) pairs, in dataset order: 32 "
      "hex digits (proto/batchd_client.proto, FolderRef)");
}

}  // namespace batchd_py
