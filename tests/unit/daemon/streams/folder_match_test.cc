// match_folder() and plan() with OpenStream.folder: a trainer's ImageFolder is recognised by the daemon's own
// listing of a declared root (reached through a symlink, so only the realpath the daemon took itself matches), and
// every other reference is refused naming the cause and the fixes, by string comparison alone.
#include "streams/folder_match.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "batchd/wire/folder_digest.h"
#include "streams/plan.h"

namespace batchd::daemon {
namespace {

namespace fs = std::filesystem;

class FolderMatchTest : public ::testing::Test {
 protected:
  // root/a/{1.JPG, 2.png, notes.txt, sub/3.jpeg}, root/b/{.jpg, x.jpg}, declared as "pics" through link -> root.
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(::testing::TempDir()) / ("folder-match-" + std::to_string(::getpid())));
    const fs::path root = *dir_ / "root";
    for (const char* f : {"a/1.JPG", "a/2.png", "a/notes.txt", "a/sub/3.jpeg", "b/.jpg", "b/x.jpg"}) {
      fs::create_directories((root / f).parent_path());
      std::ofstream(root / f) << "bytes";
    }
    fs::create_directory_symlink(root, *dir_ / "link");
    DatasetConfig c;
    c.name = "pics";
    c.format = "imagefolder";
    c.root = (*dir_ / "link").string();
    datasets_ = new DatasetRegistry(DatasetRegistry::open_all({c}));
    real_root_ = new std::string(fs::canonical(root).string());
  }
  static void TearDownTestSuite() {
    delete datasets_;
    fs::remove_all(*dir_);
    delete dir_;
    delete real_root_;
  }

  // What the trainer's ImageFolder over the root sends: torchvision's order.
  static wire::FolderRef reference() {
    wire::FolderRef ref;
    ref.set_root(*real_root_);
    ref.add_classes("a");
    ref.add_classes("b");
    wire::FolderDigest digest;
    for (const char* f : {"a/1.JPG", "a/2.png", "a/sub/3.jpeg"}) digest.add(f, 0);
    for (const char* f : {"b/.jpg", "b/x.jpg"}) digest.add(f, 1);
    ref.set_num_samples(5);
    ref.add_class_sizes(3);
    ref.add_class_sizes(2);
    ref.set_digest(digest.hex());
    return ref;
  }
  static Error error_of(const wire::FolderRef& ref) {
    auto r = match_folder(ref, *datasets_);
    EXPECT_FALSE(r.ok()) << "matched " << (r.ok() ? *r : "");
    return r.ok() ? Error(ErrorCode::kInternal, "") : r.error();
  }
  static void expect_words(const Error& e, ErrorCode code, std::initializer_list<std::string> words) {
    EXPECT_EQ(e.code(), code) << e.message();
    for (const auto& w : words) EXPECT_NE(e.message().find(w), std::string::npos) << "'" << w << "' not in: " << e.message();
  }

  static fs::path* dir_;
  static DatasetRegistry* datasets_;
  static std::string* real_root_;
};
fs::path* FolderMatchTest::dir_ = nullptr;
DatasetRegistry* FolderMatchTest::datasets_ = nullptr;
std::string* FolderMatchTest::real_root_ = nullptr;

TEST_F(FolderMatchTest, TheImageFoldersListingMatchesTheDeclaredDatasetByItsRealRoot) {
  auto name = match_folder(reference(), *datasets_);
  ASSERT_TRUE(name.ok()) << name.error().message();
  EXPECT_EQ(*name, "pics");
  wire::OpenStream r;
  *r.mutable_folder() = reference();
  r.set_pipeline("val224");
  r.set_batch_size(2);
  auto p = plan(r, PlanContext{}, *datasets_);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.dataset(), "pics");
  EXPECT_EQ(p->dataset(), "pics");
  EXPECT_EQ(p->opened.dataset_size(), 5u) << "b/.jpg is an image, as torchvision lists it";
  r.set_dataset("pics");
  expect_words(plan(r, PlanContext{}, *datasets_).error(), ErrorCode::kInvalidArgument, {"name one"});
}

TEST_F(FolderMatchTest, ARootNoDatasetHasIsNotFoundNamingTheDaemonsRootsAndTheFixes) {
  for (const std::string& root : {std::string("/root"), *real_root_ + "/a", (*dir_ / "link").string(), std::string("/")}) {
    auto ref = reference();
    ref.set_root(root);
    expect_words(error_of(ref), ErrorCode::kNotFound,
                 {"'" + root + "'", "pics (" + *real_root_ + ")", "[datasets.NAME] format = \"imagefolder\"",
                  "private=True"});
  }
}

TEST_F(FolderMatchTest, AListingThatDiffersSaysHow) {
  auto ref = reference();
  ref.set_classes(1, "c");
  expect_words(error_of(ref), ErrorCode::kInvalidArgument,
               {"is dataset 'pics'", "class names differ", "class 1 is 'b' here and 'c' in yours"});
  ref = reference();
  ref.add_classes("c");
  ref.add_class_sizes(1);
  ref.set_num_samples(6);
  expect_words(error_of(ref), ErrorCode::kInvalidArgument, {"class 2 is none here and 'c' in yours"});
  ref = reference();
  ref.set_class_sizes(1, 3);
  ref.set_num_samples(6);
  expect_words(error_of(ref), ErrorCode::kInvalidArgument,
               {"6 samples in yours vs 5", "first class whose count differs is 'b': 2 samples here, 3 in yours",
                ".bmp", "SIGHUP"});
  ref = reference();
  ref.set_digest(std::string(32, 'f'));
  expect_words(error_of(ref), ErrorCode::kInvalidArgument, {"same count in every class, but other file names"});
}

TEST_F(FolderMatchTest, AMalformedReferenceIsRefusedBeforeAnyComparison) {
  auto ref = reference();
  for (const std::string& root : {std::string("relative/root"), std::string(""), "/" + std::string(5000, 'a'),
                                 std::string("/a\0b", 4)}) {
    ref.set_root(root);
    expect_words(error_of(ref), ErrorCode::kInvalidArgument, {"is not an absolute path"});
  }
  ref = reference();
  ref.set_digest("xyz");
  expect_words(error_of(ref), ErrorCode::kInvalidArgument, {"not 32 hex digits"});
  ref = reference();
  ref.add_class_sizes(1);
  expect_words(error_of(ref), ErrorCode::kInvalidArgument, {"one per class"});
  ref = reference();
  ref.set_num_samples(9);
  expect_words(error_of(ref), ErrorCode::kInvalidArgument, {"sum to 5"});
}

}  // namespace
}  // namespace batchd::daemon
