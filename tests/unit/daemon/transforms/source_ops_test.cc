// The presets as specs (issue 41, item 2): fmnist and fmnist_u8 are [idx_image, ...] and lm is [token_window]; the
// idx executor's bytes against torch's formula and against a client's own spec of the same ops; the layouts and
// dtypes an idx spec may end in; what may follow a source op; the datasets each source reads; a token_window spec
// the same as the lm preset; and the buffers a decode spec reserves before its first sample (op.h reserve_for).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "data/dataset_config.h"
#include "data/idx_dataset.h"
#include "transforms/kernels/dtype_cast.h"
#include "transforms/ops/op.h"
#include "transforms/ops/token_window.h"
#include "transforms/presets/presets.h"
#include "transforms/spec/compile_spec.h"
#include "transforms/spec/token_pipeline.h"
#include "../data/token_test_support.h"
#include "../streams/fake_workers.h"  // fmnist_registry
#include "../support/tiny_images.h"

namespace batchd::daemon {
namespace {

wire::Op op(const char* name, std::vector<std::pair<const char*, wire::OpValue>> params = {}) {
  wire::Op o;
  o.set_name(name);
  for (auto& [key, value] : params) {
    auto* p = o.add_params();
    p->set_key(key);
    *p->mutable_value() = std::move(value);
  }
  return o;
}

wire::PipelineSpec spec_of(std::vector<wire::Op> ops) {
  wire::PipelineSpec s;
  for (auto& o : ops) *s.add_ops() = std::move(o);
  return s;
}

// The bytes of `pipeline`'s first tensor for `indices`, and the labels.
std::vector<char> run(Pipeline& pipeline, const std::vector<int64_t>& indices, std::vector<int64_t>* labels = nullptr) {
  const uint64_t image = pipeline.tensors()[0].sample_bytes() * indices.size();
  const uint64_t label = pipeline.tensors()[1].sample_bytes() * indices.size();
  std::vector<char> slot(image + label);
  const std::vector<uint64_t> offsets = {0, image};
  const Status st = pipeline.run(indices, slot.data(), offsets, BatchContext{});
  EXPECT_TRUE(st.ok()) << st.error().message();
  if (labels != nullptr) {
    labels->resize(indices.size());
    std::memcpy(labels->data(), slot.data() + image, label);
  }
  slot.resize(image);
  return slot;
}

class SourceOpsTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Dataset> fmnist() { return *registry_.find("fmnist"); }
  DatasetRegistry registry_ = testing::fmnist_registry();
  const std::vector<int64_t> indices_ = {0, 1, 9999, 42};
};

TEST_F(SourceOpsTest, FmnistIsAnIdxSpecWhoseBytesAreTorchsFormula) {
  auto preset = preset_spec("fmnist", {});
  ASSERT_TRUE(preset.ok());
  ASSERT_EQ(preset->ops_size(), 3);
  EXPECT_EQ(preset->ops(0).name(), "idx_image");
  EXPECT_EQ(preset->ops(1).name(), "to_tensor");
  EXPECT_EQ(preset->ops(2).name(), "normalize");
  auto sut = make_pipeline("fmnist", fmnist());
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ((*sut)->tensors()[0].dtype, wire::FLOAT32);
  EXPECT_EQ((*sut)->tensors()[0].sample_shape, (std::vector<int64_t>{1, 28, 28}));
  std::vector<int64_t> labels;
  const auto bytes = run(**sut, indices_, &labels);
  const auto& idx = dynamic_cast<const IdxDataset&>(*fmnist());
  for (size_t i = 0; i < indices_.size(); ++i) {
    EXPECT_EQ(labels[i], idx.label(indices_[i]));
    const uint8_t* px = idx.image(indices_[i]);
    for (int p = 0; p < 28 * 28; ++p) {
      float got;
      std::memcpy(&got, bytes.data() + (i * 784 + p) * 4, 4);
      const float want = (static_cast<float>(px[p]) / 255.0f - 0.2860f) / 0.3530f;  // ToTensor, Normalize in float32
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << "sample " << indices_[i] << " pixel " << p;
    }
  }
  // A client's own spec of the same ops is the same pipeline, byte for byte.
  auto own = make_pipeline("mine", fmnist(), {}, spec_of({op("idx_image"), op("to_tensor"),
                                                          op("normalize", {{"mean", ops::numbers_value({0.2860})},
                                                                           {"std", ops::numbers_value({0.3530})}})}));
  ASSERT_TRUE(own.ok()) << own.error().message();
  EXPECT_EQ(run(**own, indices_), bytes);
}

TEST_F(SourceOpsTest, IdxSpecsEndInUint8Float16OrHwc) {
  auto u8 = make_pipeline("fmnist_u8", fmnist());
  ASSERT_TRUE(u8.ok()) << u8.error().message();
  const auto raw = run(**u8, indices_);
  const auto& idx = dynamic_cast<const IdxDataset&>(*fmnist());
  for (size_t i = 0; i < indices_.size(); ++i) {
    ASSERT_EQ(std::memcmp(raw.data() + i * 784, idx.image(indices_[i]), 784), 0) << "the raw pixels";
  }
  auto hwc = make_pipeline("hwc", fmnist(), {}, spec_of({op("idx_image"), op("pil_to_tensor"),
                                                         op("layout", {{"order", ops::text_value("HWC")}})}));
  ASSERT_TRUE(hwc.ok()) << hwc.error().message();
  EXPECT_EQ((*hwc)->tensors()[0].sample_shape, (std::vector<int64_t>{28, 28, 1}));
  EXPECT_EQ(run(**hwc, indices_), raw) << "one channel: HWC and CHW are the same bytes";
  auto half = make_pipeline("half", fmnist(), {}, spec_of({op("idx_image"), op("pil_to_tensor"),
                                                           op("convert_image_dtype",
                                                              {{"dtype", ops::text_value("float16")}})}));
  ASSERT_TRUE(half.ok()) << half.error().message();
  EXPECT_EQ((*half)->tensors()[0].dtype, wire::FLOAT16);
  const auto bits = run(**half, indices_);
  for (size_t k = 0; k < raw.size(); ++k) {
    uint16_t got;
    std::memcpy(&got, bits.data() + 2 * k, 2);
    const float want = static_cast<float>(static_cast<uint8_t>(raw[k])) / 255.0f;
    uint16_t want_bits;
    cast_float_to_half(&want, &want_bits, 1);
    ASSERT_EQ(got, want_bits) << "value " << k;
  }
}

TEST_F(SourceOpsTest, WhatMayFollowASourceOpAndWhichDatasetsEachReads) {
  const ops::OpLimits limits;
  auto refused = [&](const wire::PipelineSpec& spec, const Dataset& ds) {
    auto planned = plan_for_dataset("p", {}, spec, ds, limits);
    EXPECT_FALSE(planned.ok());
    return planned.ok() ? std::string() : planned.error().message();
  };
  const Dataset& idx = *fmnist();
  EXPECT_EQ(refused(spec_of({op("idx_image"), op("resize", {{"size", ops::number_value(8)}}), op("to_tensor")}), idx),
            "pipeline 'p': ops[1] (resize): after idx_image batchd runs only to_tensor, pil_to_tensor, "
            "convert_image_dtype, normalize and layout");
  EXPECT_EQ(refused(spec_of({op("idx_image"), op("to_tensor"),
                             op("normalize", {{"mean", ops::numbers_value({0.5, 0.5, 0.5})},
                                              {"std", ops::numbers_value({0.5, 0.5, 0.5})}})}), idx),
            "pipeline 'p': ops[2] (normalize): mean: has 3 numbers; expected 1 number (idx_image's grayscale image "
            "has one channel)");
  EXPECT_EQ(refused(spec_of({op("idx_image")}), idx),
            "pipeline 'p': the ops end with an image, not a tensor: end them with to_tensor or pil_to_tensor "
            "(torchvision's ToTensor / PILToTensor): collate stacks tensors");
  EXPECT_EQ(refused(spec_of({op("resize", {{"size", ops::number_value(8)}}), op("to_tensor")}), idx),
            "pipeline 'p' is a list of image ops: they need an image dataset (imagefolder or webdataset); dataset "
            "'fmnist' is idx");
  EXPECT_EQ(refused(spec_of({op("token_window")}), idx),
            "pipeline 'p' needs a token dataset (format = \"tokens\"); 'fmnist' is idx");
  testing::TinyImages images;
  EXPECT_EQ(refused(spec_of({op("idx_image"), op("to_tensor")}), images),
            "pipeline 'p' needs an idx dataset; '" + images.name() + "' is " + images.format());
  wire::PipelineSpec mixed = spec_of({op("idx_image"), op("to_tensor")});
  *mixed.add_batch_ops() = op("mixup");
  EXPECT_NE(refused(mixed, idx).find("batch_ops[0] (mixup): batch ops mix images and one-hot labels of an image "
                                     "dataset; a spec that starts with idx_image takes none"), std::string::npos);
  // The standard RGB check still holds: 2 numbers for an RGB image.
  EXPECT_EQ(refused(spec_of({op("to_tensor"), op("normalize", {{"mean", ops::numbers_value({0.5, 0.5})},
                                                                {"std", ops::numbers_value({0.5, 0.5, 0.5})}})}),
                    images).rfind("pipeline 'p': ops[1] (normalize): mean: has 2 numbers", 0), 0u);
}

class TokenSpecTest : public token_test::ScratchTest {};

TEST_F(TokenSpecTest, LmIsATokenWindowSpecAndAClientsOwnIsTheSame) {
  const std::string path = write_tokens<uint16_t>("train.bin", 1001, [](uint64_t k) { return k % 50000; });
  auto opened = open_dataset(token_test::tokens_config(path, "uint16", 16), OpenContext{});
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  std::shared_ptr<const Dataset> ds = *opened;
  auto planned = plan_for_dataset("lm", {}, {}, *ds, ops::OpLimits{});
  ASSERT_TRUE(planned.ok()) << planned.error().message();
  ASSERT_EQ(planned->canonical.ops_size(), 1);
  EXPECT_EQ(planned->canonical.ops(0).ShortDebugString(),
            token_window_op([] { wire::LmOptions o; o.set_seq_len(16); return o; }()).ShortDebugString())
      << "seq_len 0 resolved to the dataset's 16 in the canonical spec";
  wire::PipelineSpec own;
  *own.add_ops() = op("token_window", {{"seq_len", ops::number_value(16)}});
  auto a = make_pipeline("lm", ds);
  auto b = make_pipeline("mine", ds, {}, own);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<int64_t> indices = {0, 7, 61};
  std::vector<int64_t> slot_a(2 * 3 * 16), slot_b(2 * 3 * 16);
  const std::vector<uint64_t> offsets = {0, 3 * 16 * 8};
  ASSERT_TRUE((*a)->run(indices, reinterpret_cast<char*>(slot_a.data()), offsets, BatchContext{}).ok());
  ASSERT_TRUE((*b)->run(indices, reinterpret_cast<char*>(slot_b.data()), offsets, BatchContext{}).ok());
  EXPECT_EQ(slot_a, slot_b);
  EXPECT_EQ(slot_a[16 + 3], 7 * 16 + 3) << "sample 7's input_ids start at token 112";
  wire::PipelineSpec followed = own;
  *followed.add_ops() = op("to_tensor");
  auto refused = plan_for_dataset("mine", {}, followed, *ds, ops::OpLimits{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(), "pipeline 'mine': ops[1] (to_tensor): token_window makes the whole sample "
                                       "(input_ids, targets): nothing follows it");
}

TEST(ReserveTest, ADecodeSpecReservesItsFixedSizeBuffersBeforeItsFirstSample) {
  auto ds = std::make_shared<testing::TinyImages>();
  // resize to [16, 12], then a tensor op that runs as a kernel (random_erasing): the image and the tensor have
  // fixed sizes the plan knows.
  auto sut = make_spec_pipeline(spec_of({op("resize", {{"size", ops::numbers_value({16, 12})}}), op("to_tensor"),
                                         op("random_erasing", {{"p", ops::number_value(1)}})}), ds);
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  const uint64_t image = 16 * 12 * 3, tensor = 3 * 16 * 12 * sizeof(float);
  EXPECT_GE((*sut)->reserved_bytes(), 2 * image + tensor) << "image and spare, and the tensor, reserved at compile";
  EXPECT_LT((*sut)->reserved_bytes(), 2 * image + 2 * tensor) << "tensor_spare only for the layout op's output";
  auto hwc = make_spec_pipeline(spec_of({op("resize", {{"size", ops::numbers_value({16, 12})}}), op("to_tensor"),
                                         op("random_erasing", {{"p", ops::number_value(1)}}),
                                         op("layout", {{"order", ops::text_value("HWC")}})}), ds);
  ASSERT_TRUE(hwc.ok()) << hwc.error().message();
  EXPECT_GE((*hwc)->reserved_bytes(), 2 * image + 2 * tensor) << "layout HWC writes tensor_spare: reserved too";
  // A spec whose tail writes the slot holds no tensor buffers.
  auto u8 = make_spec_pipeline(spec_of({op("resize", {{"size", ops::numbers_value({16, 12})}}),
                                        op("pil_to_tensor")}), ds);
  ASSERT_TRUE(u8.ok()) << u8.error().message();
  EXPECT_GE((*u8)->reserved_bytes(), 2 * image);
  EXPECT_LT((*u8)->reserved_bytes(), 2 * image + tensor);
}

}  // namespace
}  // namespace batchd::daemon
