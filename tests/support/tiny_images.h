// tiny_images.h — a Dataset of three small real PNGs (9 x 7 RGB, made by PIL), for tests and fuzz targets that run
// spec pipelines without files: every sample is the same image, its label its index. Never cached (no file stamp).
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace batchd::daemon::testing {

inline constexpr uint8_t kTinyPng[] = {
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 9, 0, 0, 0, 7, 8, 2, 0, 0, 0, 85, 249,
    240, 55, 0, 0, 0, 29, 73, 68, 65, 84, 120, 156, 99, 228, 58, 33, 199, 128, 3, 48, 225, 146, 32, 90, 238, 171,
    197, 35, 52, 57, 70, 26, 216, 7, 0, 216, 113, 3, 252, 242, 92, 59, 158, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66,
    96, 130};

class TinyImages final : public Dataset, public ImageSamples {
 public:
  const std::string& name() const override { return name_; }
  const char* format() const override { return "memory"; }
  uint64_t size() const override { return 3; }
  const ImageSamples* images() const override { return this; }
  Status read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const override {
    bytes->assign(std::begin(kTinyPng), std::end(kTinyPng));
    *label = static_cast<int64_t>(i);
    return ok_status();
  }
  void sample_name(uint64_t i, std::string* out) const override { *out = "tiny " + std::to_string(i); }
  using ImageSamples::sample_name;
  FileStamp stamp(uint64_t) const override { return {}; }  // no file: never cached

 private:
  std::string name_ = "tiny";
};

}  // namespace batchd::daemon::testing
