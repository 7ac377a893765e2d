#include "ops_testing.h"

#include <cstring>
#include <stdexcept>

namespace batchd::testing {

daemon::RgbImage to_image(const U8Array& a) {
  if (a.ndim() != 3 || a.shape(2) != 3) throw std::invalid_argument("expected a uint8 array of shape [H, W, 3]");
  daemon::RgbImage image;
  image.height = static_cast<int>(a.shape(0));
  image.width = static_cast<int>(a.shape(1));
  image.pixels.assign(a.data(), a.data() + a.size());
  return image;
}

U8Array from_image(const daemon::RgbImage& image) {
  U8Array out({image.height, image.width, 3});
  std::memcpy(out.mutable_data(), image.pixels.data(), image.pixels.size());
  return out;
}

}  // namespace batchd::testing

PYBIND11_MODULE(batchd_ops_testing, m) {
  m.doc() = "batchd's image ops for the fidelity tests (tests/ops); not part of the product";
  batchd::testing::bind_resample(m);
  batchd::testing::bind_geometry(m);
  batchd::testing::bind_augment(m);
  batchd::testing::bind_color(m);
  batchd::testing::bind_tensor(m);
  batchd::testing::bind_batch(m);
  batchd::testing::bind_spec(m);
}
