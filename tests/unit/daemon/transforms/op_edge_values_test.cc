// Every numeric parameter of every op, at the edges of a double (issue 45, 1): 0, -0, NaN, +-inf, +-1e300,
// +-1e-300, and float32's extremes. For each op, each such parameter and each value, the op is planned in every place
// it may take (on the decoded image, on a float or a uint8 tensor, among the batch ops); when the plan accepts it,
// the pipeline is compiled and run over small real PNGs in a child process, which must finish within kTimeLimit and
// exit 0. A crash (undefined arithmetic: an int made from inf) or a spin (random_erasing with ratio [1e-300, 1e300]
// once looped about 2^64 times over rows of width 0) fails the test, naming op, parameter and value. Refusals are
// what the plan is for; they pass.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "../support/tiny_images.h"
#include "transforms/ops/geometry_kernels.h"
#include "transforms/ops/op_registry.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/spec/compile_spec.h"

namespace batchd::daemon {
namespace {

constexpr unsigned kTimeLimit = 20;  // seconds per run; a normal run takes milliseconds

const double kEdges[] = {0.0,     -0.0,     std::nan(""), HUGE_VAL, -HUGE_VAL, 1e300, -1e300, 1e-300, -1e-300,
                         3.4e38, 1.2e-38, 2147483648.0, -2147483649.0};

wire::Op op(const std::string& name) {
  wire::Op o;
  o.set_name(name);
  return o;
}

void set(wire::Op* o, const std::string& key, const wire::OpValue& v) {
  for (auto& p : *o->mutable_params()) {
    if (p.key() == key) {
      *p.mutable_value() = v;
      return;
    }
  }
  auto* p = o->add_params();
  p->set_key(key);
  *p->mutable_value() = v;
}

wire::OpValue number(double v) { return ops::number_value(v); }
wire::OpValue numbers(std::vector<double> v) { return ops::numbers_value(std::move(v)); }

// Values for parameters an op cannot do without (required, or needed with a dataset of no classes), so that the
// parameter under test is the only unusual one. A new required parameter must be added here (the test says so).
std::map<std::string, wire::OpValue> base_values(bool batch) {
  wire::OpValue flip;
  *flip.mutable_ops()->add_ops() = op(batch ? "mixup" : "horizontal_flip");
  if (batch) set(flip.mutable_ops()->mutable_ops(0), "num_classes", number(4));
  return {{"size", number(8)},           {"kernel_size", number(3)},
          {"mean", numbers({0.5, 0.5, 0.5})}, {"std", numbers({0.25, 0.25, 0.25})},
          {"ops", flip},                 {"num_classes", number(4)},
          {"p", number(1)}};  // random ops always apply, so that their draws and kernels run
}

// The spec with `o` in one place: 0 on the decoded image, 1 on a float tensor, 2 on a uint8 tensor, 3 a batch op.
wire::PipelineSpec spec_with(const wire::Op& o, int place) {
  wire::PipelineSpec s;
  wire::Op crop = op("center_crop");
  set(&crop, "size", number(8));
  if (place == 0) *s.add_ops() = o;
  *s.add_ops() = crop;  // a fixed size to collate, whatever the op made
  *s.add_ops() = op(place == 2 ? "pil_to_tensor" : "to_tensor");
  if (place == 1 || place == 2) *s.add_ops() = o;  // the tensor ops keep the size
  if (place == 3) *s.add_batch_ops() = o;
  return s;
}

// Runs the planned spec over 4 samples and 2 batches in a child; "" when it exits 0 in time, else what happened.
std::string run_in_child(const wire::PipelineSpec& canonical) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(kTimeLimit);
    auto pipeline = make_spec_pipeline(canonical, std::make_shared<testing::TinyImages>());
    if (!pipeline.ok()) ::_exit(0);  // a compile error is a refusal too
    std::vector<uint64_t> offsets;
    uint64_t total = 0;
    for (const auto& t : (*pipeline)->tensors()) {
      offsets.push_back(total);
      total += t.sample_bytes() * 4;
    }
    std::vector<char> slot(total);
    const int64_t indices[] = {0, 1, 2, 0};
    for (uint64_t batch = 0; batch < 2; ++batch) {
      const BatchContext context{7, 1, {}, batch};
      if ((*pipeline)->run(indices, slot.data(), offsets, context).ok()) {
        (void)(*pipeline)->finish_batch(slot.data(), offsets, 4, context);
      }
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) return "ran past " + std::to_string(kTimeLimit) + " s";
  return WIFSIGNALED(status) ? std::string("killed by ") + strsignal(WTERMSIG(status))
                             : "exit " + std::to_string(WEXITSTATUS(status));
}

TEST(OpEdgeValuesTest, EveryNumberOfEveryOpIsRefusedOrRunsSafely) {
  const ops::OpLimits limits;  // the daemon's defaults: what a client may ask for
  int planned = 0, refused = 0;
  for (const ops::OpDef& def : ops::all_ops()) {
    if (def.name == "cache") continue;  // needs the host's cache; it has no numbers
    for (const ops::ParamDef& tested : def.params) {
      const bool list = tested.type == ops::ParamType::kNumbers || tested.type == ops::ParamType::kNumberOrList;
      if (!list && tested.type != ops::ParamType::kNumber && tested.type != ops::ParamType::kInteger) continue;
      for (int place = 0; place < 4; ++place) {
        if ((place == 3) != def.batch_op && def.name != "random_choice") continue;
        const auto base = base_values(place == 3);
        wire::Op o = op(def.name);
        for (const ops::ParamDef& p : def.params) {
          auto b = base.find(p.key);
          if (b != base.end() && p.key != tested.key) set(&o, p.key, b->second);
        }
        // The lists: every element at the edge, then each element alone (the others at their default).
        std::vector<std::vector<double>> lists;
        std::vector<double> start;
        const auto base_list = base.find(tested.key);
        if (tested.default_value.kind_case() == wire::OpValue::kNumbers) {
          start.assign(tested.default_value.numbers().values().begin(), tested.default_value.numbers().values().end());
        } else if (base_list != base.end() && base_list->second.kind_case() == wire::OpValue::kNumbers) {
          start.assign(base_list->second.numbers().values_size(), 1.0);  // a list as long as the op needs (normalize: 3)
        } else {
          start.assign(std::max<size_t>(tested.min_len, 1), 1.0);
        }
        for (double edge : kEdges) {
          std::vector<wire::OpValue> values{number(edge)};
          if (tested.type == ops::ParamType::kNumbers || (list && tested.max_len > 1)) {
            values.push_back(numbers(std::vector<double>(start.size(), edge)));
            for (size_t i = 0; i < start.size(); ++i) {
              auto one = start;
              one[i] = edge;
              values.push_back(numbers(one));
            }
          }
          for (const auto& value : values) {
            wire::Op trial = o;
            set(&trial, tested.key, value);
            auto plan = ops::plan_spec(spec_with(trial, place), {&limits, 0});
            if (!plan.ok()) {
              ++refused;
              EXPECT_EQ(plan.error().message().find("is required"), std::string::npos)
                  << def.name << ": give '" << plan.error().message() << "' a value in base_values()";
              continue;
            }
            ++planned;
            const std::string failure = run_in_child(plan->canonical);
            EXPECT_EQ(failure, "") << def.name << "." << tested.key << " = " << value.ShortDebugString()
                                   << " (place " << place << ") was planned, then " << failure;
          }
        }
      }
    }
  }
  EXPECT_GT(planned, 100) << "too few combinations planned for the test to mean much (" << refused << " refused)";
}

// Issue 43 (5): every size parameter within limits.max_output_side, yet resize [S, 1] then resize S made an S x S^2
// intermediate (3.2 GiB in one worker at S = 1024). The plan bounds every intermediate it can size, naming the op;
// a resize whose size depends on the image (an int size) is bounded at run time, per sample.
TEST(OpEdgeValuesTest, AnIntermediateOverTheLimitIsRefusedNamingTheOp) {
  const ops::OpLimits limits;
  wire::PipelineSpec s;
  wire::Op thin = op("resize");
  set(&thin, "size", numbers({1024, 1}));
  wire::Op square = op("resize");
  set(&square, "size", number(1024));
  wire::Op crop = op("center_crop");
  set(&crop, "size", number(8));
  for (const auto& o : {thin, square, crop}) *s.add_ops() = o;
  *s.add_ops() = op("to_tensor");
  auto plan = ops::plan_spec(s, {&limits, 0});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message().find("ops[1] (resize): makes a 1048576 x 1024 image from its 1024 x 1 input, "
                                        "over limits.max_output_side (4096"),
            std::string::npos)
      << plan.error().message();
  set(s.mutable_ops(1), "max_size", number(4096));  // torchvision's own bound on the longer side
  EXPECT_TRUE(ops::plan_spec(s, {&limits, 0}).ok());

  auto kernel = ops::make_resize_kernel(square);
  ASSERT_TRUE(kernel.ok());
  ops::Sample sample;
  sample.image.width = 32768;  // the widest image batchd decodes, one row high
  sample.image.height = 1;
  sample.image.pixels.assign(size_t{32768} * 3, 7);
  SampleRng rng(1, 0, 0);
  const Status run = (*kernel)->run(sample, rng);
  ASSERT_FALSE(run.ok()) << "would have made 33554432 x 1024";
  EXPECT_EQ(run.error().code(), ErrorCode::kDataError);
  EXPECT_NE(run.error().message().find("larger than batchd holds"), std::string::npos) << run.error().message();
}

}  // namespace
}  // namespace batchd::daemon
