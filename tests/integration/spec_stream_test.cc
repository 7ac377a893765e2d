// Pipelines as data through a real daemon: a [pipelines.NAME] table of the config and a client's OpenStream.spec
// give the same canonical spec (dry run) as the preset they spell out, and the same bytes; a bad spec is refused
// naming the op and key; SIGHUP reloads [pipelines] (a bad file keeps the previous ones; running streams keep the
// ops they opened with).
#include <csignal>
#include <fstream>
#include <thread>

#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

// train224 spelled out, keys in another order than the canonical form, defaults partly written.
const std::string kTrainOps =
    "ops = [ { op = \"decode\" }, { size = 224, op = \"random_resized_crop\", scale = [0.08, 1] },\n"
    "        { op = \"horizontal_flip\", p = 0.5 }, { op = \"to_tensor\" },\n"
    "        { op = \"normalize\", std = [0.229, 0.224, 0.225], mean = [0.485, 0.456, 0.406] } ]\n";

std::string config_with(const std::string& pipelines) {
  return "[datasets.photos]\nformat = \"imagefolder\"\nroot = \"" + kData + "/imagefolder\"\n" + pipelines;
}

wire::Request open_request(const std::string& pipeline, bool dry_run) {
  wire::Request r;
  r.set_request_id(1);
  auto* o = r.mutable_open_stream();
  o->set_dataset("photos");
  o->set_pipeline(pipeline);
  o->set_batch_size(8);
  o->set_seed(24);
  o->set_dry_run(dry_run);
  return r;
}

wire::Reply ask(const std::string& socket, const wire::Request& r) {
  RawConnection raw(socket);
  raw.send_request(r);
  auto reply = raw.read_reply();
  EXPECT_TRUE(reply.has_value());
  return reply.value_or(wire::Reply());
}

StreamOptions stream_options(const std::string& pipeline) {
  StreamOptions o;
  o.dataset = "photos";
  o.pipeline = pipeline;
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 24;
  return o;
}

std::vector<std::string> images_of(Client& client, const std::string& pipeline, int batches) {
  std::vector<std::string> out;
  auto stream = client.open_stream(stream_options(pipeline));
  EXPECT_TRUE(stream.ok()) << pipeline << ": " << stream.error().message();
  if (!stream.ok()) return out;
  for (int b = 0; b < batches; ++b) {
    auto batch = stream->next();
    EXPECT_TRUE(batch.ok() && *batch);
    if (!batch.ok() || !*batch) break;
    const Tensor* image = (*batch)->find("image");
    out.emplace_back(static_cast<const char*>(image->data), image->nbytes);
  }
  return out;
}

TEST(SpecStreamTest, ConfigPipelineAndClientSpecEqualThePresetTheySpellOut) {
  SuiteDaemon suite("spec", config_with("[pipelines.my_train]\n" + kTrainOps), {}, {});
  const std::string socket = suite.daemon.socket_path();
  const wire::Reply preset = ask(socket, open_request("train224", true));
  ASSERT_TRUE(preset.has_stream_opened()) << preset.ShortDebugString();
  const wire::PipelineSpec& canonical = preset.stream_opened().spec();
  ASSERT_EQ(canonical.ops_size(), 5);
  EXPECT_EQ(canonical.ops(1).name(), "random_resized_crop");
  const wire::Reply configured = ask(socket, open_request("my_train", true));
  ASSERT_TRUE(configured.has_stream_opened()) << configured.ShortDebugString();
  EXPECT_EQ(configured.stream_opened().spec().SerializeAsString(), canonical.SerializeAsString());
  // The client's own spec: the canonical one with its params reversed and the decode left out.
  wire::Request mine = open_request("", true);
  auto* spec = mine.mutable_open_stream()->mutable_spec();
  for (int i = 1; i < canonical.ops_size(); ++i) {
    wire::Op* op = spec->add_ops();
    op->set_name(canonical.ops(i).name());
    for (int k = canonical.ops(i).params_size() - 1; k >= 0; --k) *op->add_params() = canonical.ops(i).params(k);
  }
  const wire::Reply sent = ask(socket, mine);
  ASSERT_TRUE(sent.has_stream_opened()) << sent.ShortDebugString();
  EXPECT_EQ(sent.stream_opened().spec().SerializeAsString(), canonical.SerializeAsString());
  EXPECT_EQ(sent.stream_opened().tensors(0).sample_shape_size(), 3);

  auto client = suite.client();
  const auto a = images_of(client, "train224", 3);
  const auto b = images_of(client, "my_train", 3);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a, b) << "the config's spelled-out train224 gives the preset's bytes";
}

TEST(SpecStreamTest, ABadSpecIsRefusedNamingTheOpAndKeyAndTheDaemonServesOn) {
  SuiteDaemon suite("badspec", config_with(""), {}, {});
  wire::Request r = open_request("", false);
  auto* op = r.mutable_open_stream()->mutable_spec()->add_ops();
  op->set_name("resize");
  auto* p = op->add_params();
  p->set_key("size");
  p->mutable_value()->set_number(100000);
  const wire::Reply reply = ask(suite.daemon.socket_path(), r);
  ASSERT_TRUE(reply.has_error()) << reply.ShortDebugString();
  EXPECT_EQ(reply.error().code(), wire::INVALID_ARGUMENT);
  EXPECT_NE(reply.error().message().find("ops[0] (resize): size: 100000 is over limits.max_output_side (4096)"),
            std::string::npos) << reply.error().message();
  wire::Request both = open_request("val224", false);
  both.mutable_open_stream()->mutable_spec()->add_ops()->set_name("to_tensor");
  const wire::Reply refused = ask(suite.daemon.socket_path(), both);
  ASSERT_TRUE(refused.has_error());
  EXPECT_NE(refused.error().message().find("names a pipeline of the daemon"), std::string::npos);
  auto client = suite.client();
  EXPECT_EQ(images_of(client, "val224_u8", 1).size(), 1u) << "val224_u8 serves, and the daemon serves on";
}

TEST(SpecStreamTest, SighupReloadsPipelinesABadFileKeepsThemAndRunningStreamsKeepTheirOps) {
  SuiteDaemon suite("reload", config_with("[pipelines.mine]\n" + kTrainOps), {}, {});
  const std::string path = suite.dir.path + "/batchd.toml";
  auto client = suite.client();
  auto running = client.open_stream(stream_options("mine"));
  ASSERT_TRUE(running.ok()) << running.error().message();
  auto side = [&](const wire::Reply& r) {
    return r.has_stream_opened() ? r.stream_opened().tensors(0).sample_shape(1) : int64_t{-1};
  };
  ASSERT_EQ(side(ask(suite.daemon.socket_path(), open_request("mine", true))), 224);

  std::string smaller = kTrainOps;
  smaller.replace(smaller.find("size = 224"), 10, "size = 64");
  std::ofstream(path) << config_with("[pipelines.mine]\n" + smaller);
  ASSERT_EQ(::kill(suite.daemon.pid(), SIGHUP), 0);
  EXPECT_TRUE(eventually([&] { return side(ask(suite.daemon.socket_path(), open_request("mine", true))) == 64; }))
      << "the reloaded pipeline serves new streams";
  for (int b = 0; b < 3; ++b) {  // the stream opened before reads on with the ops it opened with
    auto batch = running->next();
    ASSERT_TRUE(batch.ok() && *batch);
    EXPECT_EQ((*batch)->find("image")->shape, (std::vector<int64_t>{8, 3, 224, 224}));
  }

  std::ofstream(path) << config_with("[pipelines.mine]\nops = [ { op = \"resize\", size = 0 } ]\n");
  ASSERT_EQ(::kill(suite.daemon.pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(side(ask(suite.daemon.socket_path(), open_request("mine", true))), 64) << "a bad file changes nothing";
}

}  // namespace
}  // namespace batchd::testing
