// plan() tells the client an imagefolder dataset's classes (StreamOpened.num_classes, .classes): the class
// directories in torchvision's order (sorted by bytes, label i = classes[i]), the names left out past
// kMaxClassNamesBytes (the count still sent), and none for a dataset without class names (idx).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "batchd/wire/segment_layout.h"
#include "streams/plan.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon {
namespace {

namespace fs = std::filesystem;

class PlanClassesTest : public ::testing::Test {
 protected:
  // "pets": classes dog, Zebra, cat, émeu (one image each); "wide": kWide classes of 250-byte names, over the bound.
  static constexpr int kWide = 2100;  // 2100 * (250 + 4) = 533,400 > 524,288 bytes
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(::testing::TempDir()) / ("plan-classes-" + std::to_string(::getpid())));
    for (const char* c : {"dog", "Zebra", "cat", "\xc3\xa9meu"}) write(*dir_ / "pets" / c / "1.jpg");
    for (int i = 0; i < kWide; ++i) {
      const std::string n = std::to_string(i);
      write(*dir_ / "wide" / (std::string(250 - n.size(), 'c') + n) / "1.jpg");
    }
    std::vector<DatasetConfig> configs;
    for (const char* name : {"pets", "wide"}) {
      DatasetConfig c;
      c.name = name;
      c.format = "imagefolder";
      c.root = (*dir_ / name).string();
      configs.push_back(c);
    }
    DatasetConfig fmnist;
    fmnist.name = "fmnist";
    fmnist.format = "idx";
    fmnist.images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    fmnist.labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
    configs.push_back(fmnist);
    datasets_ = new DatasetRegistry(DatasetRegistry::open_all(configs));
  }
  static void TearDownTestSuite() {
    delete datasets_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static void write(const fs::path& file) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "bytes";  // plan() reads no image
  }
  static wire::StreamOpened opened(const std::string& dataset, const std::string& pipeline) {
    wire::OpenStream r;
    r.set_dataset(dataset);
    r.set_pipeline(pipeline);
    r.set_batch_size(1);
    r.set_dry_run(true);
    auto p = plan(r, PlanContext{}, *datasets_);
    EXPECT_TRUE(p.ok()) << p.error().message();
    return p.ok() ? p->opened : wire::StreamOpened();
  }

  static fs::path* dir_;
  static DatasetRegistry* datasets_;
};
fs::path* PlanClassesTest::dir_ = nullptr;
DatasetRegistry* PlanClassesTest::datasets_ = nullptr;

TEST_F(PlanClassesTest, AnImageFoldersClassesAreItsDirectoriesInTorchvisionsOrder) {
  const auto sut = opened("pets", "val224");
  EXPECT_EQ(sut.num_classes(), 4u);
  ASSERT_EQ(sut.classes_size(), 4);
  // sorted() of Python str: by code point, so upper case first and the UTF-8 name last.
  EXPECT_EQ(sut.classes(0), "Zebra");
  EXPECT_EQ(sut.classes(1), "cat");
  EXPECT_EQ(sut.classes(2), "dog");
  EXPECT_EQ(sut.classes(3), "\xc3\xa9meu");
}

TEST_F(PlanClassesTest, NamesPastTheBoundAreLeftOutAndTheirCountIsSent) {
  const auto sut = opened("wide", "val224");
  EXPECT_EQ(sut.num_classes(), static_cast<uint32_t>(kWide));
  EXPECT_EQ(sut.classes_size(), 0);
  EXPECT_LT(sut.ByteSizeLong(), kMaxClassNamesBytes) << "the reply stays small";
}

TEST_F(PlanClassesTest, ADatasetWithoutClassNamesSendsNone) {
  const auto sut = opened("fmnist", "fmnist");
  EXPECT_EQ(sut.num_classes(), 0u);
  EXPECT_EQ(sut.classes_size(), 0);
}

// Issue 43 (1): a one-hot label of num_classes = 2^62 float32 took 2^64 bytes per sample, which wrapped to 0; the
// plan laid the label out in no bytes and the worker's one-hot write ran past the slot into whatever it had mapped
// above (another user's segment). num_classes is bounded, and a size that overflows is never laid out.
TEST_F(PlanClassesTest, AHugeNumClassesIsRefusedAndNoPlannedSizeWraps) {
  auto request = [](double classes) {
    wire::OpenStream r;
    r.set_dataset("pets");
    r.set_batch_size(2);
    r.set_dry_run(true);
    wire::Op* crop = r.mutable_spec()->add_ops();
    crop->set_name("center_crop");
    auto* size = crop->add_params();
    size->set_key("size");
    size->mutable_value()->set_number(8);
    r.mutable_spec()->add_ops()->set_name("to_tensor");
    wire::Op* mix = r.mutable_spec()->add_batch_ops();
    mix->set_name("mixup");
    auto* p = mix->add_params();
    p->set_key("num_classes");
    p->mutable_value()->set_number(classes);
    return r;
  };
  for (double classes : {0x1p62, 0x1p63, 0x1p40, 1048577.0}) {
    auto p = plan(request(classes), PlanContext{}, *datasets_);
    ASSERT_FALSE(p.ok()) << classes;
    EXPECT_EQ(p.error().code(), ErrorCode::kInvalidArgument) << p.error().message();
    EXPECT_NE(p.error().message().find("num_classes"), std::string::npos) << p.error().message();
  }
  auto largest = plan(request(1 << 20), PlanContext{}, *datasets_);
  ASSERT_TRUE(largest.ok()) << largest.error().message();
  const auto& label = largest->opened.tensors(1);
  EXPECT_EQ(label.name(), "label");
  EXPECT_EQ(label.sample_bytes(), uint64_t{4} << 20);

  EXPECT_EQ((TensorDesc{"label", wire::FLOAT32, {int64_t{1} << 62}}.sample_bytes()), UINT64_MAX);
  EXPECT_EQ((TensorDesc{"t", wire::UINT8, {int64_t{1} << 32, int64_t{1} << 32}}.sample_bytes()), UINT64_MAX);
  EXPECT_EQ((TensorDesc{"t", wire::UINT8, {-1}}.sample_bytes()), UINT64_MAX);
  EXPECT_FALSE(wire::compute_layout({UINT64_MAX, 8}, 1, 1));
  EXPECT_FALSE(wire::fits_within(256, uint64_t{1} << 62, 4, UINT64_MAX)) << "the product wraps to 0";
  EXPECT_TRUE(wire::fits_within(256, 1000, 4, 4256));
  EXPECT_FALSE(wire::fits_within(256, 1000, 4, 4255));
}

}  // namespace
}  // namespace batchd::daemon
