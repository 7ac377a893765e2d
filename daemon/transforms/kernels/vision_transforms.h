// vision_transforms.h — the geometry of torchvision's image transforms, and their per-sample random numbers.
//
// Random choices come from a generator seeded by (stream seed, epoch, sample index): a sample's crop and flip are
// the same whichever worker makes it, and a resumed stream reproduces them.
#pragma once

#include <cstdint>

namespace batchd::daemon {

// SplitMix64 seeded from (seed, epoch, index, copy); uniform doubles in [0, 1) and integers in [lo, hi].
// `copy` numbers the copies of one index in an epoch under repeated augmentation (streams/sampler.h): copy 0 is
// the stream of draws (seed, epoch, index) has always had, so streams without repeated_aug draw as before.
class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t epoch, int64_t index, uint32_t copy = 0);
  uint64_t next();
  double uniform(double lo, double hi);    // [lo, hi)
  int64_t randint(int64_t lo, int64_t hi);  // [lo, hi], like Python's random.randint / torch.randint(lo, hi + 1)

 private:
  uint64_t state_;
};

// A crop box in source pixels: top-left (left, top), size (width, height).
struct CropBox {
  int left = 0, top = 0, width = 0, height = 0;
};

// torchvision.transforms.RandomResizedCrop.get_params (torchvision 0.14): up to 10 tries of a random area in
// [scale_lo, scale_hi] of the image and a log-uniform aspect ratio in [ratio_lo, ratio_hi]; if none fits, the
// central crop clamped to the ratio range.
CropBox random_resized_crop_params(int width, int height, SampleRng& rng, double scale_lo = 0.08,
                                   double scale_hi = 1.0, double ratio_lo = 3.0 / 4.0, double ratio_hi = 4.0 / 3.0);

// torchvision Resize(size) with an int size: the shorter side becomes `size`, the longer int(size * long / short).
void resize_shorter_side(int width, int height, int size, int* out_width, int* out_height);

// torchvision CenterCrop offsets: int(round((in - crop) / 2.0)) with Python's round-half-to-even.
int center_crop_offset(int in, int crop);

}  // namespace batchd::daemon
