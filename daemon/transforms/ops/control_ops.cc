// The control family: random_apply, random_choice, random_order (torchvision 0.14's RandomApply, RandomChoice,
// RandomOrder), over a nested list of per-sample ops. The spec planner plans and canonicalizes the nested ops
// (spec_plan.cc); the kernels here draw as torchvision does and run the nested kernels. And `cache`, the cache point
// (cache/sample_cache.h): a place in the list, not a transform; the spec pipeline reads or fills the host-wide cache
// there, and the planner refuses it where what comes before is random (spec_plan.cc).
#include <numeric>

#include "transforms/ops/op_registry.h"
#include "transforms/ops/weighted_choice.h"

namespace batchd::daemon::ops {

namespace {

using Kernels = std::vector<std::unique_ptr<SampleKernel>>;

ParamDef ops_param() {
  return {.key = "ops", .type = ParamType::kOps, .presence = Presence::kRequired, .doc = "the ops it applies"};
}

Status run_all(Kernels& kernels, Sample& s, SampleRng& rng) {
  for (auto& k : kernels) {
    if (k) BATCHD_RETURN_IF_ERROR(k->run(s, rng));
  }
  return ok_status();
}

class RandomApplyKernel final : public SampleKernel {
 public:
  RandomApplyKernel(double p, Kernels kernels) : p_(p), kernels_(std::move(kernels)) {}
  Status run(Sample& s, SampleRng& rng) override {
    if (p_ < rng.uniform(0.0, 1.0)) return ok_status();  // torchvision: if self.p < torch.rand(1): return img
    return run_all(kernels_, s, rng);
  }

 private:
  double p_;
  Kernels kernels_;
};

// random.choices(transforms, weights=p): one uniform draw (weighted_choice.h).
class RandomChoiceKernel final : public SampleKernel {
 public:
  RandomChoiceKernel(std::vector<double> weights, Kernels kernels)
      : choice_(std::move(weights), kernels.size()), kernels_(std::move(kernels)) {}
  Status run(Sample& s, SampleRng& rng) override {
    auto& k = kernels_[choice_.draw(rng)];
    return k ? k->run(s, rng) : ok_status();
  }

 private:
  WeightedChoice choice_;
  Kernels kernels_;
};

class RandomOrderKernel final : public SampleKernel {
 public:
  explicit RandomOrderKernel(Kernels kernels) : kernels_(std::move(kernels)), order_(kernels_.size()) {}
  Status run(Sample& s, SampleRng& rng) override {
    std::iota(order_.begin(), order_.end(), size_t{0});
    // random.shuffle: for i from the last down to 1, swap with a uniform j in [0, i].
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.randint(0, static_cast<int64_t>(i - 1))]);
    for (size_t i : order_) {
      if (kernels_[i]) BATCHD_RETURN_IF_ERROR(kernels_[i]->run(s, rng));
    }
    return ok_status();
  }

 private:
  Kernels kernels_;
  std::vector<size_t> order_;
};

// The kernel K(args..., the compiled nested ops) of a control op.
template <typename K, typename... Args>
Result<std::unique_ptr<SampleKernel>> with_nested(const wire::Op& op, const ValueType& in,
                                                  const CompileList& compile_list, Args... args) {
  auto kernels = compile_list(param(op, "ops")->ops(), in);
  if (!kernels.ok()) return kernels.error();
  return std::unique_ptr<SampleKernel>(new K(std::move(args)..., std::move(kernels).value()));
}

// The type rule is the planner's (it sees the nested ops); here only what the parameters alone decide.
Result<ValueType> keep(const wire::Op&, const ValueType& in, const OpPlanContext&) { return in; }

}  // namespace

void add_control_ops(std::vector<OpDef>* defs) {
  OpDef apply;
  apply.name = "random_apply";
  apply.follows = "torchvision.transforms.RandomApply";
  apply.random = true;
  apply.params = {ops_param(), {.key = "p", .type = ParamType::kNumber, .default_value = number_value(0.5), .min = 0,
                                .max = 1, .doc = "probability of applying the ops, all of them in order"}};
  apply.plan = keep;
  apply.compile = [](const wire::Op& op, const ValueType& in, const CompileList& compile_list) {
    return with_nested<RandomApplyKernel>(op, in, compile_list, number(op, "p"));
  };
  defs->push_back(std::move(apply));

  OpDef choice;
  choice.name = "random_choice";
  choice.follows = "torchvision.transforms.RandomChoice";
  choice.random = true;
  choice.params = {ops_param(), {.key = "p", .type = ParamType::kNumbers, .presence = Presence::kOptional, .min = 0,
                                 .max_len = 64, .doc = "a weight per op (relative); absent: equal weights"}};
  choice.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    const int n = param(op, "ops")->ops().ops_size();
    if (n == 0) return param_error("ops", "is empty: random_choice needs at least one op");
    if (has(op, "p")) {
      const auto p = numbers(op, "p");
      if (static_cast<int>(p.size()) != n) {
        return param_error("p", "has " + std::to_string(p.size()) + " weights for " + std::to_string(n) + " ops");
      }
      if (std::accumulate(p.begin(), p.end(), 0.0) <= 0) return param_error("p", "weights sum to 0");
    }
    return in;
  };
  choice.compile = [](const wire::Op& op, const ValueType& in, const CompileList& compile_list) {
    return with_nested<RandomChoiceKernel>(op, in, compile_list, numbers(op, "p"));
  };
  defs->push_back(std::move(choice));

  OpDef order;
  order.name = "random_order";
  order.follows = "torchvision.transforms.RandomOrder";
  order.random = true;
  order.params = {ops_param()};
  order.plan = keep;
  order.compile = [](const wire::Op& op, const ValueType& in, const CompileList& compile_list) {
    return with_nested<RandomOrderKernel>(op, in, compile_list);
  };
  defs->push_back(std::move(order));

  OpDef cache;
  cache.name = "cache";
  cache.follows = "tf.data.Dataset.cache, host-wide: what the ops before it make of a sample is kept in the "
                  "daemon's cache (cache.max_bytes) and read, not recomputed, by later epochs, streams and trainers";
  cache.plan = [](const wire::Op&, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    if (in.kind == Kind::kEncoded) {
      return Error(ErrorCode::kInvalidArgument, "comes after decode: the file's bytes are in the page cache already");
    }
    return in;
  };
  // The spec pipeline handles the point itself (a hit skips the ops before it); as a kernel it changes nothing.
  cache.compile = [](const wire::Op&, const ValueType&, const CompileList&) {
    return fn_kernel([](Sample&, SampleRng&) {});
  };
  defs->push_back(std::move(cache));
}

}  // namespace batchd::daemon::ops
