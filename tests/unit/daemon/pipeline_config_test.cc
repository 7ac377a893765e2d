// [pipelines.NAME] in the daemon's config (pipeline_config.h): read into wire specs, planned when read, refused
// with the file, line, table and op position named; limits.max_* bound them.
#include "config/pipeline_config.h"

#include <gtest/gtest.h>

#include "config_test_support.h"

#include "config/config.h"
#include "transforms/ops/op.h"
#include "transforms/ops/spec_plan.h"

namespace batchd::daemon {
namespace {

constexpr const char* kRecipe = R"(
[pipelines.ref_train]
ops = [ { op = "random_resized_crop", size = 176 },
        { op = "horizontal_flip" },
        { op = "random_apply", p = 0.8, ops = [ { op = "vertical_flip", p = 1.0 } ] },
        { op = "to_tensor" },
        { op = "normalize", mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225] } ]

[pipelines.eval]
ops = [ { op = "decode", exact_decode = true }, { op = "resize", size = 232 }, { op = "center_crop", size = 224 },
        { op = "pil_to_tensor" } ]
)";

TEST(PipelineConfigTest, TablesBecomeSpecsWithTheirOpsAndValues) {
  auto config = parse_config(kRecipe, "test.toml");
  ASSERT_TRUE(config.ok()) << config.error().message();
  ASSERT_EQ(config->pipelines.size(), 2u);
  const wire::PipelineSpec& train = config->pipelines.at("ref_train");
  ASSERT_EQ(train.ops_size(), 5);
  EXPECT_EQ(train.ops(0).name(), "random_resized_crop");
  EXPECT_EQ(ops::number(train.ops(0), "size"), 176);
  EXPECT_EQ(ops::param(train.ops(2), "ops")->ops().ops(0).name(), "vertical_flip");
  EXPECT_EQ(ops::numbers(train.ops(4), "std")[2], 0.225);
  const wire::PipelineSpec& eval = config->pipelines.at("eval");
  EXPECT_TRUE(ops::flag(eval.ops(0), "exact_decode"));
  // The same recipe written with keys in another order and defaults spelled out plans to the same canonical spec.
  auto again = parse_config(R"(
[pipelines.eval2]
ops = [ { exact_decode = true, op = "decode", max_side = 0 }, { size = 232.0, op = "resize" },
        { op = "center_crop", size = [224] }, { op = "pil_to_tensor" } ]
)", "test.toml");
  ASSERT_TRUE(again.ok()) << again.error().message();
  const ops::OpLimits limits;
  auto a = ops::plan_spec(eval, {&limits, 0});
  auto b = ops::plan_spec(again->pipelines.at("eval2"), {&limits, 0});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->canonical.SerializeAsString(), b->canonical.SerializeAsString());
}

TEST(PipelineConfigTest, ABadPipelineRefusesTheConfigNamingFileLineTableOpAndKey) {
  EXPECT_EQ(config_error_of("[pipelines.x]\nops = [ { op = \"resize\", size = 10 }, { op = \"blur\" } ]\n")
                .rfind("test.toml:1: key 'pipelines.x': ops[1] (blur): unknown op (known: decode, resize, ", 0),
            0u);
  EXPECT_EQ(config_error_of("\n[pipelines.x]\nops = [ { op = \"center_crop\", size = -3 }, { op = \"to_tensor\" } ]\n"),
            "test.toml:2: key 'pipelines.x': ops[0] (center_crop): size: -3 is out of range [1, inf]");
  EXPECT_NE(config_error_of("[pipelines.x]\nops = [ { op = \"center_crop\", size = 8 } ]\n")
                .find("test.toml:1: key 'pipelines.x': the ops end with an image, not a tensor"),
            std::string::npos);
  EXPECT_NE(config_error_of("[pipelines.x]\nops = [ { size = 8 } ]\n").find("key 'pipelines.x.ops[0].op': must name the op"),
            std::string::npos);
  EXPECT_NE(config_error_of("[pipelines.x]\nops = [ 3 ]\n").find("key 'pipelines.x.ops[0]': must be a table"),
            std::string::npos);
  EXPECT_NE(config_error_of("[pipelines.x]\nbatch_ops = []\n").find("key 'pipelines.x.ops': is required"),
            std::string::npos);
  EXPECT_NE(config_error_of("[pipelines.x]\nops = []\nsteps = 1\n").find("key 'pipelines.x.steps': unknown key"),
            std::string::npos);
  EXPECT_NE(config_error_of("[pipelines.val224]\nops = [ { op = \"to_tensor\" } ]\n")
                .find("'val224' is a built-in pipeline's name"),
            std::string::npos);
  EXPECT_NE(config_error_of("[pipelines.\"a b\"]\nops = []\n").find("1 to 64 characters"), std::string::npos);
  EXPECT_NE(config_error_of("[pipelines.x]\nops = [ { op = \"resize\", size = { a = 1 } } ]\n")
                .find("key 'pipelines.x.ops[0].size': must be a number, a string"),
            std::string::npos);
}

TEST(PipelineConfigTest, SpecLimitsAreReadAndBoundTheConfigsPipelinesToo) {
  auto config = parse_config("[limits]\nmax_ops = 3\nmax_output_side = 300\nmax_kernel_size = 9\nmax_padding = 4\n",
                             "test.toml");
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->limits.max_ops, 3u);
  EXPECT_EQ(config->limits.max_output_side, 300u);
  EXPECT_EQ(config->limits.max_kernel_size, 9u);
  EXPECT_EQ(config->limits.max_padding, 4u);
  const ops::OpLimits bounds = op_limits(config->limits);
  EXPECT_EQ(bounds.max_ops, 3u);
  EXPECT_EQ(bounds.max_padding, 4u);
  EXPECT_NE(config_error_of("[limits]\nmax_output_side = 300\n[pipelines.x]\nops = [ { op = \"center_crop\", size = 301 }, "
                     "{ op = \"to_tensor\" } ]\n")
                .find("size: 301 is over limits.max_output_side (300)"),
            std::string::npos);
  EXPECT_NE(config_error_of("[limits]\nmax_ops = 2\n[pipelines.x]\nops = [ { op = \"center_crop\", size = 8 }, "
                     "{ op = \"to_tensor\" } ]\n")
                .find("more than 2 ops, nested ones included (limits.max_ops)"),
            std::string::npos);
  EXPECT_NE(config_error_of("[limits]\nmax_ops = 0\n").find("limits.max_ops': 0 is out of range [1, 1024]"),
            std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon
