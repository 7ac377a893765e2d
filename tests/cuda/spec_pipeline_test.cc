// A pipeline given as data (a spec of ops, not a preset) through the CUDA path: the device batches of a spec with a
// fused random_choice crop, color_jitter and float16 output equal the host batches of the same stream, byte for
// byte, every image once. Skipped without a CUDA device (SKIP_WITHOUT_GPU).

#include <cstring>
#include <set>

#include "cuda_fixture.h"
#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

using cuda::DeviceStream;

StreamOptions spec_options() {
  StreamOptions o;
  o.dataset = "photos";
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 17;
  o.spec.ops = {Op("decode"),
                Op("random_choice").set("ops", {Op("random_resized_crop").set("size", 96),
                                                Op("random_resized_crop").set("size", 96).set("interpolation",
                                                                                               "bicubic")}),
                Op("horizontal_flip"),
                Op("color_jitter").set("brightness", 0.4).set("contrast", 0.4).set("saturation", 0.4),
                Op("pil_to_tensor"),
                Op("convert_image_dtype").set("dtype", "float16"),
                Op("normalize").set("mean", {0.485, 0.456, 0.406}).set("std", {0.229, 0.224, 0.225})};
  return o;
}

TEST(CudaSpecPipelineTest, DeviceBatchesOfAFloat16SpecEqualHostBatches) {
  SKIP_WITHOUT_GPU();
  SuiteDaemon suite("cudaspec",
                    "[datasets.photos]\nformat = \"imagefolder\"\nroot = \"" + kData + "/imagefolder\"\n", {}, {});
  Client host_client = suite.client(), device_client = suite.client();
  auto host = host_client.open_stream(spec_options());
  ASSERT_TRUE(host.ok()) << host.error().message();
  auto device_stream = device_client.open_stream(spec_options());
  ASSERT_TRUE(device_stream.ok()) << device_stream.error().message();
  auto dev = DeviceStream::open(std::move(device_stream).value());
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  std::set<int64_t> seen;
  uint64_t samples = 0;
  for (;;) {
    auto h = host->next();
    auto d = dev->next(s);
    ASSERT_TRUE(h.ok() && d.ok());
    ASSERT_EQ(h->has_value(), d->has_value());
    if (!*h) break;
    const Tensor* image = (*h)->find("image");
    ASSERT_NE(image, nullptr);
    EXPECT_EQ(image->dtype, DType::kFloat16);
    EXPECT_EQ(image->shape, (std::vector<int64_t>{static_cast<int64_t>((*h)->size()), 3, 96, 96}));
    for (const Tensor& t : (*h)->tensors()) {
      const cuda::DeviceTensor* dt = (*d)->find(t.name);
      ASSERT_NE(dt, nullptr) << t.name;
      const std::vector<uint8_t> back = to_host(*dt, s);
      ASSERT_EQ(back.size(), t.nbytes) << t.name;
      ASSERT_EQ(std::memcmp(back.data(), t.data, t.nbytes), 0) << t.name << " of batch " << (*h)->sequence();
    }
    const Tensor* idx = (*h)->find("index");
    seen.insert(idx->data_as<int64_t>(), idx->data_as<int64_t>() + (*h)->size());
    samples += (*h)->size();
  }
  EXPECT_EQ(seen.size(), samples) << "an image came twice";
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  ASSERT_TRUE(dev->close().ok());
}

}  // namespace
}  // namespace batchd::testing
