// resample_passes.h — the two one-axis passes of resample() (resample.h) for 8-bit RGB, vectorized with Highway
// (libhwy, dynamic dispatch: the best of SSE4 / AVX2 / AVX-512 the CPU has, a portable fallback otherwise).
//
// Both compute, per output value, Pillow's fixed-point sum (src/libImaging/Resample.c, ImagingResampleHorizontal_8bpc
// and ImagingResampleVertical_8bpc): acc = 2^(P-1) + sum_t in[t] * k[t] in int32 with P = 22 fractional bits, then
// clip8(acc) = clamp(acc >> P, 0, 255). Integer arithmetic, so the lanes' order of addition does not matter: the
// output is bit for bit the scalar passes' (and so Pillow's for the same input and taps).
//
// Taps come from resample_coeffs() (ResampleCoeffs: per output index, bounds = (first input index, tap count) and
// ksize taps, those past the count 0). Not thread-safe only in that the horizontal pass keeps its per-call plan in
// thread_local buffers (no allocation once grown); callers may run it from several threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace batchd::daemon {

// The taps of one axis, as ResampleCoeffs holds them (resample.h).
struct PassTaps {
  const int* bounds;     // 2 per output index: first input index, tap count (<= ksize)
  const int32_t* taps;   // ksize per output index
  int ksize;
};

// Vertical pass: out row j (row stride `width_bytes`) = taps of j over rows bounds[2j] - y_shift + t of `in` (row
// stride in_stride), each `width_bytes` bytes wide. Reads only those bytes.
void vertical_pass(const uint8_t* in, size_t in_stride, size_t width_bytes, const PassTaps& cy, int y_shift,
                   int out_rows, uint8_t* out);

// Horizontal pass: `rows` rows of `in` (row r at in + r * in_stride; input pixel x of a row at byte 3 * (x - x_shift))
// -> `out` (rows x out_w RGB pixels, contiguous). The vector code reads a whole 16-byte window from the first input
// pixel of each output pixel (and per 5 taps more): up to about (ksize + 5) * 3 bytes past the last pixel a tap
// reaches. `in` must be readable up to `in_end`; a row whose windows would pass it is computed one tap at a time,
// reading only the taps' bytes. Writes only out[0, rows * out_w * 3).
void horizontal_pass(const uint8_t* in, size_t in_stride, const uint8_t* in_end, int rows, const PassTaps& cx,
                     int x_shift, int out_w, uint8_t* out);

}  // namespace batchd::daemon
