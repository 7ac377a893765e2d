// An image "file" that is not a regular file (a FIFO, a device) never hangs a worker: the dataset scan refuses it
// naming the path, and one swapped in after the scan fails its sample naming the path instead of blocking.
#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

namespace fs = std::filesystem;

// A real JPEG from the generated test data.
fs::path some_jpeg() {
  for (const auto& e : fs::recursive_directory_iterator(BATCHD_TESTDATA_DIR "/imagefolder")) {
    if (e.path().extension() == ".jpg") return e.path();
  }
  ADD_FAILURE() << "no JPEG under " BATCHD_TESTDATA_DIR "/imagefolder";
  return {};
}

// root/cls/a.jpg and root/cls/b.jpg, both real JPEGs, in a fresh temporary directory.
struct Tree {
  fs::path root;
  explicit Tree(const std::string& name) {
    root = fs::path(::testing::TempDir()) / (name + "-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "cls");
    fs::copy_file(some_jpeg(), root / "cls" / "a.jpg");
    fs::copy_file(some_jpeg(), root / "cls" / "b.jpg");
  }
  ~Tree() { fs::remove_all(root); }
  fs::path b() const { return root / "cls" / "b.jpg"; }
  void make_b_a_fifo() const {
    fs::remove(b());
    ASSERT_EQ(::mkfifo(b().c_str(), 0644), 0);
  }
};

std::string write_config(const std::string& name, const std::vector<std::pair<std::string, fs::path>>& roots) {
  const std::string path = ::testing::TempDir() + name + "-" + std::to_string(::getpid()) + ".toml";
  std::ofstream out(path);
  for (const auto& [dataset, root] : roots) {
    out << "[datasets." << dataset << "]\nformat = \"imagefolder\"\nroot = \"" << root.string() << "\"\n";
  }
  return path;
}

StreamOptions val224(const std::string& dataset) {
  StreamOptions o;
  o.dataset = dataset;
  o.pipeline = "val224";
  o.batch_size = 1;
  o.shuffle = false;
  return o;
}

TEST(SpecialFileTest, TheScanRefusesAFifoOrADeviceNamedLikeAnImageNamingIt) {
  Tree fifo("fifo-scan");
  fifo.make_b_a_fifo();
  Tree device("device-scan");
  fs::remove(device.b());
  fs::create_symlink("/dev/zero", device.b());  // followed, as torchvision follows it: a character device
  const std::string config = write_config("special-scan", {{"with-fifo", fifo.root}, {"with-device", device.root}});
  auto daemon = start_daemon("", 1, {"--config", config});
  auto client = Client::connect(daemon.socket_path());
  for (const auto& [dataset, path, kind] : {std::tuple{"with-fifo", fifo.b(), "is a FIFO, not a regular file"},
                                            std::tuple{"with-device", device.b(), "is a character device"}}) {
    auto stream = client->open_stream(val224(dataset));
    ASSERT_FALSE(stream.ok()) << dataset << " was opened: the scan let " << path << " in";
    EXPECT_EQ(stream.error().code(), ErrorCode::kUnavailable) << stream.error().message();
    EXPECT_NE(stream.error().message().find(path.string() + " " + kind), std::string::npos)
        << stream.error().message();
  }
  std::remove(config.c_str());
}

TEST(SpecialFileTest, AnImageSwappedForAFifoAfterTheScanFailsItsSampleInsteadOfHanging) {
  Tree tree("fifo-swap");
  const std::string config = write_config("special-swap", {{"photos", tree.root}});
  auto daemon = start_daemon("", 1, {"--config", config});
  tree.make_b_a_fifo();  // after the scan
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(val224("photos"));
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  const StreamOutcome out = within(
      std::chrono::milliseconds(20000), "the failure of the sample read from a FIFO",
      [&] { return read_to_end(*stream); },
      [&] {  // a worker blocked opening the FIFO is released by a writer that comes and goes
        for (int i = 0; i < 100; ++i) {
          const int fd = ::open(tree.b().c_str(), O_WRONLY | O_NONBLOCK);
          if (fd >= 0) return (void)::close(fd);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      });
  EXPECT_EQ(out.delivered, 1u) << "a.jpg is delivered";
  ASSERT_TRUE(out.error) << "the stream ended without failing";
  EXPECT_EQ(out.error->code(), ErrorCode::kDataError);
  EXPECT_NE(out.error->message().find(tree.b().string() + " is a FIFO, not a regular file"), std::string::npos)
      << out.error->message();
  std::remove(config.c_str());
}

}  // namespace
}  // namespace batchd::testing
