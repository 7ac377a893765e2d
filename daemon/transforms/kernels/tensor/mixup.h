// mixup.h — mixup and cutmix over a collated batch, with the semantics of pytorch/vision's
// references/classification/transforms.py (RandomMixup, RandomCutmix; v0.14, the file train.py's collate_fn uses).
//
// Both work in place on a BatchView (transforms/ops/op.h): images [B, C, H, W] (or [B, H, W, C]) of float32,
// float16 or bfloat16 in the slot, labels [B, num_classes] float32 one-hot as collate wrote them, label smoothing
// already applied (spec_pipeline.cc: y * (1 - e) + e / K).
// Per batch, drawn from the batch's rng (seeded by (seed, epoch, batch index)), in the references' order:
//   1. u ~ U[0, 1): if u >= p the batch is left as it is (torch.rand(1).item() >= self.p: return);
//   2. lambda ~ Beta(alpha, alpha) (float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0]), random_draws.h);
//   3. cutmix only: r_x = randint over [0, W), r_y over [0, H) (torch.randint(W, (1,)), torch.randint(H, (1,))).
// The batch is paired with itself rolled by one sample (batch.roll(1, 0): sample b with sample b - 1, sample 0 with
// sample B - 1).
// mixup: batch = lambda * batch + (1 - lambda) * rolled, in the batch dtype's torch arithmetic: each product
//   rounded to the dtype, then their sum (batch.mul_(lambda).add_(rolled.mul_(1.0 - lambda)); torch 1.13 first
//   rounds the Python scalar to the dtype for float16/bfloat16, then multiplies in float); labels the same in float32.
// cutmix: r = 0.5 * sqrt(1 - lambda), r_w_half = int(r * W), r_h_half = int(r * H); the box x1 = max(r_x - r_w_half,
//   0), x2 = min(r_x + r_w_half, W), likewise y; batch[:, :, y1:y2, x1:x2] = rolled[:, :, y1:y2, x1:x2]; lambda
//   becomes 1 - (x2 - x1) (y2 - y1) / (W H), and the labels mix with it as in mixup.
// Label smoothing: the references leave it to CrossEntropyLoss(label_smoothing=e), which smooths the mixed targets:
// mixed * (1 - e) + e / K. batchd mixes labels smoothed at collate instead; both maps are affine and the weights sum
// to 1, so the results agree up to float32 rounding (tests/ops/test_batch_ops.py measures it).
//
// Kernels allocate nothing per batch once their scratch (one sample, one label row) has grown.
#pragma once

#include <cstddef>
#include <vector>

#include "transforms/ops/op.h"
#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon {

struct MixParams {
  double alpha = 1.0;  // Beta(alpha, alpha); > 0
  double p = 0.5;      // probability the batch is mixed
};

// The region cutmix pastes, and the lambda the labels then mix with.
struct CutmixBox {
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // columns [x1, x2), rows [y1, y2)
  double lambda = 1.0;                 // 1 - box area / image area
};

// The references' cutmix box for lambda and the centre (r_x, r_y), on a width x height image.
CutmixBox cutmix_box(int width, int height, double lambda, int r_x, int r_y);

// The operations with their random parameters fixed. `scratch` holds one sample (or one label row): grown once.
void mixup_images(ops::BatchView& batch, double lambda, std::vector<std::byte>* scratch);
void cutmix_images(ops::BatchView& batch, const CutmixBox& box, std::vector<std::byte>* scratch);
void mix_labels(ops::BatchView& batch, double lambda, std::vector<float>* scratch);

// RandomMixup / RandomCutmix as one batch kernel (draws above). run() fails (kInvalidArgument) for an image dtype
// that is not float32, float16 or bfloat16 (the plan refuses those first).
class MixKernel final : public ops::BatchKernel {
 public:
  enum class Mode { kMixup, kCutmix };
  MixKernel(Mode mode, MixParams params) : mode_(mode), params_(params) {}
  Status run(ops::BatchView& batch, SampleRng& rng) override;

 private:
  Mode mode_;
  MixParams params_;
  std::vector<std::byte> image_scratch_;
  std::vector<float> label_scratch_;
};

}  // namespace batchd::daemon
