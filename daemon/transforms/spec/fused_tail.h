// fused_tail.h — the tail of a spec's executor (spec_pipeline.h): the flips right before to_tensor / pil_to_tensor,
// the conversion, and the pointwise ops after it (convert_image_dtype, normalize, a last layout) as one pass with a
// per-channel table of 256 values (tensor_ops.h PointwiseStep composed): into the slot when they end the spec, else
// into the sample's float tensor for the tensor ops that follow.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "transforms/ops/op.h"
#include "transforms/kernels/tail_simd.h"

namespace batchd::daemon {

// The flips before the tensor conversion, the conversion and the pointwise ops after it, as one pass.
struct FusedTail {
  struct Flip {
    bool horizontal;
    double p;
  };
  std::vector<Flip> flips;
  float lut[3][256];
  uint16_t bits[3][256];            // float16 / bfloat16 output: lut's values as that dtype's bits
  wire::DType dtype = wire::UINT8;  // after the chain
  bool vector_float = false;        // a float32 chain of to_tensor / normalize steps, none on float16 / bfloat16
                                    // values: write_float() vectorizes it
  FloatChain chain;
  bool hwc = false;
  bool to_slot = false;             // the chain ends the spec
  int first = 0, end = 0;           // ops[first, end) are the tail's

  // write() for float32 output: vectorized (tail_simd.h, the same values bit for bit) where the chain allows.
  void write_float(const RgbImage& image, bool flip_h, bool flip_v, float* dst) const {
    if (vector_float) {
      write_float_chain(image, flip_h, flip_v, chain, lut, hwc, dst);
    } else {
      write(image, flip_h, flip_v, dst);
    }
  }

  // Writes `image` through the table into dst: CHW (or HWC) values of type T (uint16_t: float16 / bfloat16 bits),
  // mirrored as drawn.
  template <typename T>
  void write(const RgbImage& image, bool flip_h, bool flip_v, T* dst) const {
    const auto value = [this](int c, uint8_t v) -> T {
      if constexpr (std::is_same_v<T, uint16_t>) {
        return bits[c][v];
      } else {
        return static_cast<T>(lut[c][v]);
      }
    };
    const int w = image.width, h = image.height;
    const size_t plane = static_cast<size_t>(w) * h;
    for (int y = 0; y < h; ++y) {
      const uint8_t* row = image.row(flip_v ? h - 1 - y : y);
      if (hwc) {
        T* out = dst + static_cast<size_t>(y) * w * 3;
        for (int x = 0; x < w; ++x) {
          const uint8_t* px = row + 3 * (flip_h ? w - 1 - x : x);
          out[3 * x] = value(0, px[0]);
          out[3 * x + 1] = value(1, px[1]);
          out[3 * x + 2] = value(2, px[2]);
        }
        continue;
      }
      T* r = dst + static_cast<size_t>(y) * w;
      T* g = r + plane;
      T* b = g + plane;
      if (flip_h) {  // the stores run forward (tail_simd.cc says why), the reads backwards
        for (int x = 0; x < w; ++x) {
          const uint8_t* px = row + 3 * (w - 1 - x);
          r[x] = value(0, px[0]);
          g[x] = value(1, px[1]);
          b[x] = value(2, px[2]);
        }
      } else {
        for (int x = 0; x < w; ++x) {
          r[x] = value(0, row[3 * x]);
          g[x] = value(1, row[3 * x + 1]);
          b[x] = value(2, row[3 * x + 2]);
        }
      }
    }
  }
};

// The tail of canonical ops `o`: the last to_tensor / pil_to_tensor at top level, the flips right before it, the
// pointwise ops (and a last layout) right after it. False when there is no conversion at top level (random_apply &
// co. hold it): every op then runs as a kernel.
bool find_tail(const google::protobuf::RepeatedPtrField<wire::Op>& o, FusedTail* tail);

// Writes Sample.tensor's values (float32 holding each value exactly: a uint8's, a float16's, a bfloat16's) at dst as
// `dtype` (the dtypes convert_image_dtype gives: UINT8, FLOAT32, FLOAT16, BFLOAT16).
void write_tensor(const std::vector<float>& values, wire::DType dtype, char* dst);

}  // namespace batchd::daemon
