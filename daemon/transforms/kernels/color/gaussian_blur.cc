// F.gaussian_blur on a PIL image (color.h): torchvision 0.14 functional_tensor.gaussian_blur on the uint8 tensor
// made from it, i.e. a float32 convolution with the outer product of two 1-D Gaussian kernels over reflect padding,
// then torch.round (half to even) and the cast back to uint8.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "transforms/kernels/color/color.h"

namespace batchd::daemon {
namespace {

// functional_tensor._get_gaussian_kernel1d in float32 as torch computes it: x = linspace(-(k-1)/2, (k-1)/2, k)
// (exact half-integers), pdf = exp(-0.5 * (x / sigma)^2) (sigma cast to float by the scalar division), divided
// by the sum of pdf.
void gaussian_kernel(int size, double sigma, std::vector<float>* kernel) {
  kernel->resize(size);
  const float half = static_cast<float>(size - 1) * 0.5f;
  const auto s = static_cast<float>(sigma);
  if (!(s > 0.0f)) {  // a sigma > 0 too small for a float: the Gaussian's limit, one tap (torch: NaN weights)
    for (int i = 0; i < size; ++i) (*kernel)[i] = i == size / 2 ? 1.0f : 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int i = 0; i < size; ++i) {
    const float t = (static_cast<float>(i) - half) / s;
    const float pdf = std::exp(-0.5f * (t * t));
    (*kernel)[i] = pdf;
    sum += pdf;
  }
  for (float& w : *kernel) w /= sum;
}

// torch's "reflect" padding index (the edge not repeated: -1 -> 1, n -> n - 2), folded again for as long as it
// stays outside (torch refuses a padding >= n; see color.h).
int reflect(int i, int n) {
  if (n == 1) return 0;
  const int period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

void blur(const RgbImage& src, RgbImage& dst, int kx, int ky, double sx, double sy, BlurBuffers& s) {
  gaussian_kernel(kx, sx, &s.kx);
  gaussian_kernel(ky, sy, &s.ky);
  const int width = src.width, height = src.height;
  const int rx = kx / 2, ry = ky / 2;
  const size_t stride = static_cast<size_t>(width) * 3;
  s.x_index.resize(static_cast<size_t>(width) + 2 * rx);
  for (int x = 0; x < width + 2 * rx; ++x) s.x_index[x] = reflect(x - rx, width) * 3;
  s.row.resize(stride);
  dst.width = width;
  dst.height = height;
  dst.pixels.resize(src.pixels.size());
  double* rows = s.row.data();
  for (int y = 0; y < height; ++y) {
    // Vertical taps into one row of doubles.
    for (size_t i = 0; i < stride; ++i) rows[i] = 0.0;
    for (int t = 0; t < ky; ++t) {
      const double w = s.ky[t];
      const uint8_t* in = src.row(reflect(y - ry + t, height));
      for (size_t i = 0; i < stride; ++i) rows[i] += w * in[i];
    }
    // Horizontal taps, rounded half to even (torch.round) and clamped into uint8.
    uint8_t* out = dst.pixels.data() + static_cast<size_t>(y) * stride;
    for (int x = 0; x < width; ++x) {
      double acc0 = 0.0, acc1 = 0.0, acc2 = 0.0;
      for (int t = 0; t < kx; ++t) {
        const double w = s.kx[t];
        const double* px = rows + s.x_index[x + t];
        acc0 += w * px[0];
        acc1 += w * px[1];
        acc2 += w * px[2];
      }
      const double acc[3] = {acc0, acc1, acc2};
      for (int c = 0; c < 3; ++c) {
        const double r = std::nearbyint(acc[c]);
        out[x * 3 + c] = static_cast<uint8_t>(!(r > 0.0) ? 0 : r >= 255.0 ? 255 : r);
      }
    }
  }
}

}  // namespace

void gaussian_blur(RgbImage& img, int kx, int ky, double sx, double sy, RgbImage* scratch, BlurBuffers* buffers) {
  blur(img, *scratch, kx, ky, sx, sy, *buffers);
  std::swap(img, *scratch);
}

void gaussian_blur(RgbImage& img, int kx, int ky, double sx, double sy, RgbImage* scratch) {
  thread_local BlurBuffers buffers;
  gaussian_blur(img, kx, ky, sx, sy, scratch, &buffers);
}

}  // namespace batchd::daemon
