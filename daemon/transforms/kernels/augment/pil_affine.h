// pil_affine.h — Pillow 9.4's affine warps of an 8-bit RGB image, bit for bit: what torchvision 0.14's F.affine and
// F.rotate do to a PIL image (functional_pil.affine -> Image.transform(size, AFFINE, matrix, resample, fillcolor);
// functional_pil.rotate -> Image.rotate(angle, resample, expand=False, center=None, fillcolor)).
//
// The engine is Pillow's src/libImaging/Geometry.c (ImagingTransformAffine): `matrix` maps each output pixel centre
// (x + 0.5, y + 0.5) to a source position (a0*x + a1*y + a2, a3*x + a4*y + a5), inverse mapping as PIL wants it.
//   - nearest, a1 == a3 == 0 (translations): ImagingScaleAffine, double arithmetic, source = COORD(a2 + a0*0.5 +
//     k*a0) (COORD: -1 below 0, else truncation);
//   - nearest, otherwise (shear, rotation) when the four corners map inside +-32768: affine_fixed, 16.16 fixed point
//     (FIX(v) = floor(v * 65536 + 0.5), the source index is the integer part, an arithmetic shift); outside that range
//     the same walk in doubles;
//   - bilinear / bicubic: ImagingGenericTransform with bilinear_filter32RGB / bicubic_filter32RGB: a source position
//     outside [0, size) keeps the fill; inside, taps at floor(pos - 0.5) and neighbours clamped to the image,
//     interpolated in double and truncated to uint8 (bicubic: Pillow's BICUBIC polynomial on 4x4 taps, clamped to
//     0..255 first).
// Pixels whose source lies outside keep `fill` (Image.new(mode, size, fillcolor) before the warp: torchvision always
// passes a fillcolor, 0 when fill is None, see functional_pil._parse_fill).
//
// Exactness: the arithmetic is Pillow's, in the same order and precision, so results equal Pillow's exactly (the
// file is compiled with -ffp-contract=off, as Pillow's C is built without FMA). Not thread-safe per call (dst);
// dst must not alias src; dst keeps its capacity, so a warp allocates nothing once dst has grown.
#pragma once

#include <array>
#include <cstdint>

#include "transforms/kernels/resample.h"

namespace batchd::daemon::augment {

enum class PilFilter { kNearest, kBilinear, kBicubic };  // PIL's NEAREST (0), BILINEAR (2), BICUBIC (3)

struct FillColor {
  uint8_t rgb[3] = {0, 0, 0};
};

// Pillow's inverse affine coefficients (a0..a5), see above.
using AffineMatrix = std::array<double, 6>;

// Image.transform(src.size, Image.AFFINE, matrix, filter, fillcolor=fill) into `dst` (resized to src's size).
void pil_affine(const RgbImage& src, const AffineMatrix& matrix, PilFilter filter, FillColor fill, RgbImage* dst);

// Image.rotate(angle_degrees, filter, expand=False, center=None, fillcolor=fill) into `dst`: counter-clockwise about
// (w / 2, h / 2). As Pillow: the angle taken modulo 360 (Python's %), 0 a copy, 180 a flip of both axes, 90 / 270 a
// transpose when the image is square; otherwise the matrix of cos/sin rounded to 15 decimals (Python's round) and
// pil_affine.
void pil_rotate(const RgbImage& src, double angle_degrees, PilFilter filter, FillColor fill, RgbImage* dst);

// torchvision.transforms.functional._get_inverse_affine_matrix (0.14) with inverted=True: the PIL matrix of an
// affine transform (angle and shear in degrees, translate in pixels) about `center` (pixels from the top-left).
AffineMatrix torchvision_inverse_affine_matrix(double center_x, double center_y, double angle, double translate_x,
                                               double translate_y, double scale, double shear_x, double shear_y);

}  // namespace batchd::daemon::augment
