// color.h — torchvision 0.14's color functions on PIL images (torchvision/transforms/functional_pil.py), on 8-bit
// RGB images in place, with Pillow 9.4's arithmetic: same input, same output bytes (gaussian_blur: see below).
//
// Every function takes an RgbImage (transforms/kernels/resample.h: HWC uint8 RGB, pixels.size() == width * height * 3)
// and rewrites its pixels; the size never changes. None allocates once `img` and `scratch` have grown to the image's
// size (look-up tables are fixed-size arrays on the stack; adjust_hue's 1.3 MB of division tables are built once per
// process, on first use). Not thread-safe on one image; different images may be worked on from different threads
// (gaussian_blur's short form keeps its row buffer per thread).
//
// The Pillow sources of each formula (src/libImaging, Pillow 9.4.0):
//   - L (grayscale): Convert.c rgb2l, L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16 (ITU-R 601-2 in 16-bit
//     fixed point, rounded).
//   - ImageEnhance.*: Image.blend(degenerate, img, factor) = Blend.c ImagingBlend with alpha = (float)factor:
//     out = (uint8)(d + alpha * (v - d)) in float arithmetic, truncated; for alpha outside [0, 1] the float is
//     clipped to [0, 255] first. Degenerates: Brightness 0; Contrast int(mean(L) + 0.5) (ImageStat mean of the
//     L image); Color (saturation) L in each channel; Sharpness the SMOOTH filter (Filter.c ImagingFilter3x3,
//     kernel (1 1 1 / 1 5 1 / 1 1 1) / 13 in float, +0.5 and truncation; the border rows and columns are copied).
//   - adjust_hue: Convert.c rgb2hsv_row / hsv2rgb (float/double mix reproduced operand by operand), the H byte
//     shifted by np.uint8(hue_factor * 255) (truncation toward zero, then modulo 256) as functional_pil does.
//   - ImageOps.posterize / solarize / invert / autocontrast(cutoff=0) / equalize: ImageOps.py's look-up tables,
//     per channel (autocontrast and equalize from each channel's own histogram).
#pragma once

#include <vector>

#include "transforms/kernels/resample.h"

namespace batchd::daemon {

// ImageEnhance.Brightness(img).enhance(factor): factor 0 black, 1 unchanged; any factor >= 0.
void adjust_brightness(RgbImage& img, double factor);
// ImageEnhance.Contrast(img).enhance(factor): 0 is the mean gray of the image's L conversion, 1 unchanged.
void adjust_contrast(RgbImage& img, double factor);
// ImageEnhance.Color(img).enhance(factor): 0 is the image's L conversion, 1 unchanged.
void adjust_saturation(RgbImage& img, double factor);
// F.adjust_hue (PIL): hue_factor in [-0.5, 0.5] (the caller checks: torchvision raises outside). Even a factor
// whose shift rounds to 0 goes through HSV and back, which is lossy, as torchvision's does.
void adjust_hue(RgbImage& img, double hue_factor);
// ImageEnhance.Sharpness(img).enhance(factor): 0 is the SMOOTH-filtered image, 1 unchanged, 2 sharper.
// `scratch` holds the smoothed image (grown to img's size).
void adjust_sharpness(RgbImage& img, double factor, RgbImage* scratch);
// F.rgb_to_grayscale(img, num_output_channels=3) on PIL: img.convert("L"), then L in each channel.
void to_grayscale(RgbImage& img);
// ImageOps.posterize(img, bits): keeps the top `bits` bits of each channel, bits in [0, 8].
void posterize(RgbImage& img, int bits);
// ImageOps.solarize(img, threshold): v < threshold ? v : 255 - v (a fractional threshold works as in Python).
void solarize(RgbImage& img, double threshold);
// ImageOps.autocontrast(img) (cutoff 0, no ignore): each channel's [lo, hi] stretched to [0, 255] by
// int(v * 255.0 / (hi - lo) - lo * scale) clamped; a channel with hi <= lo is unchanged.
void autocontrast(RgbImage& img);
// ImageOps.equalize(img): each channel through its histogram's cumulative table (ImageOps.py's step arithmetic).
void equalize(RgbImage& img);
// ImageOps.invert(img): 255 - v.
void invert(RgbImage& img);

// F.gaussian_blur(img, [kx, ky], [sx, sy]) on a PIL image. torchvision converts to a float32 tensor, convolves
// with the outer product of two normalized 1-D Gaussians (torch.linspace(-(k-1)/2, (k-1)/2, k), exp(-x^2 / 2s^2),
// divided by the sum; functional_tensor._get_gaussian_kernel1d) over reflect padding (edge not repeated), rounds
// half to even and casts back to uint8. Here the 1-D kernels are computed in float32 as torch does, the convolution
// is separable in double (torch sums the 2-D product in float32, in its own order): an output can differ by 1 where
// the exact sum lies within float32 rounding of a half (measured in tests/ops/test_color.py).
// kx, ky odd and >= 1; sx, sy > 0 (the caller checks). Where torch cannot pad (a kernel half-width >= the image's
// side) torchvision raises; here reflection repeats (index folded back and forth across the image).
// A sigma that is 0 as a float (below 1e-45; torch then computes NaN weights) gives the one-tap kernel.
// `scratch` receives the blurred image, which is then swapped into `img` (the two buffers trade places);
// `buffers` holds the kernels and one row of vertically filtered values.
struct BlurBuffers {
  std::vector<double> row;     // width * 3
  std::vector<float> kx, ky;   // the 1-D kernels
  std::vector<int> x_index;    // the reflected column (times 3) of each padded column
};
void gaussian_blur(RgbImage& img, int kx, int ky, double sx, double sy, RgbImage* scratch, BlurBuffers* buffers);
// The same with `buffers` kept per thread (grown once per thread).
void gaussian_blur(RgbImage& img, int kx, int ky, double sx, double sy, RgbImage* scratch);

}  // namespace batchd::daemon
