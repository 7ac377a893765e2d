// batchd::Op / PipelineSpec (batchd/pipeline_spec.h): what the builder holds, and the OpenStream.spec it becomes on
// the wire (client/src/streams/pipeline_spec.cc, core/wire_mapping.cc), compared with the message written out in text
// form.
#include "batchd/pipeline_spec.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "batchd/client.h"
#include "core/wire_mapping.h"

namespace batchd {
namespace {

wire::PipelineSpec parse(const std::string& text) {
  wire::PipelineSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec)) << text;
  return spec;
}

void expect_wire(const wire::PipelineSpec& got, const std::string& expected_text) {
  const auto expected = parse(expected_text);
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(expected, got)) << diff << "got:\n" << got.DebugString();
}

TEST(PipelineSpecTest, BuilderSendsEachValueKindAsOpenStreamSpec) {
  StreamOptions options;
  options.dataset = "imagenet-train";
  options.spec.ops = {
      Op("resize").set("size", 232).set("interpolation", "bicubic").set("antialias", true),
      Op("center_crop").set("size", {224, 200}),
      Op("random_apply").set("ops", {Op("color_jitter").set("brightness", 0.4)}).set("p", 0.8),
      Op("normalize").set("mean", std::vector<double>{0.485, 0.456, 0.406}).set("std", {0.229, 0.224, 0.225}),
      Op("random_erasing").set("value", std::string("random")),
  };
  options.spec.batch_ops = {Op("mixup").set("alpha", 0.2f).set("num_classes", 10u)};
  const wire::Request request = detail::open_request(options);
  ASSERT_TRUE(request.open_stream().has_spec());
  EXPECT_EQ(request.open_stream().pipeline(), "");
  expect_wire(request.open_stream().spec(), R"pb(
    ops { name: "resize"
          params { key: "size" value { number: 232 } }
          params { key: "interpolation" value { text: "bicubic" } }
          params { key: "antialias" value { flag: true } } }
    ops { name: "center_crop" params { key: "size" value { numbers { values: 224 values: 200 } } } }
    ops { name: "random_apply"
          params { key: "ops" value { ops { ops { name: "color_jitter"
                                                  params { key: "brightness" value { number: 0.4 } } } } } }
          params { key: "p" value { number: 0.8 } } }
    ops { name: "normalize"
          params { key: "mean" value { numbers { values: 0.485 values: 0.456 values: 0.406 } } }
          params { key: "std" value { numbers { values: 0.229 values: 0.224 values: 0.225 } } } }
    ops { name: "random_erasing" params { key: "value" value { text: "random" } } }
    batch_ops { name: "mixup"
                params { key: "alpha" value { number: 0.20000000298023224 } }
                params { key: "num_classes" value { number: 10 } } }
  )pb");
}

TEST(PipelineSpecTest, SetAgainReplacesTheValueInPlace) {
  const Op op = Op("horizontal_flip").set("p", 0.5).set("q", 1).set("p", 0.25);
  ASSERT_EQ(op.params().size(), 2u);
  EXPECT_EQ(op.params()[0].first, "p");
  EXPECT_EQ(std::get<double>(op.params()[0].second), 0.25);
  ASSERT_NE(op.find("q"), nullptr);
  EXPECT_EQ(op.find("missing"), nullptr);
  const Op switched = Op("x").set("v", 1).set("v", "random");  // a key may change kind
  EXPECT_EQ(std::get<std::string>(*switched.find("v")), "random");
}

TEST(PipelineSpecTest, AnEmptySpecSendsNoSpecAndAnEmptyListStaysAList) {
  StreamOptions options;
  options.pipeline = "train224";
  EXPECT_FALSE(detail::open_request(options).open_stream().has_spec());
  PipelineSpec spec;
  spec.ops = {Op("normalize").set("mean", std::vector<double>{})};
  const auto w = detail::to_wire(spec);
  EXPECT_EQ(w.ops(0).params(0).value().kind_case(), wire::OpValue::kNumbers);
}

TEST(PipelineSpecTest, StreamInfoCarriesTheCanonicalSpecBack) {
  wire::StreamOpened opened;
  *opened.mutable_spec() = parse(R"pb(
    ops { name: "decode" params { key: "exact_decode" value { flag: false } } }
    ops { name: "random_choice"
          params { key: "ops" value { ops { ops { name: "vertical_flip" params { key: "p" value { number: 1 } } }
                                            ops { name: "identity_is_not_an_op" } } } } }
    batch_ops { name: "cutmix" params { key: "alpha" value { number: 1 } } }
  )pb");
  const StreamInfo info = detail::stream_info(opened);
  ASSERT_EQ(info.spec.ops.size(), 2u);
  EXPECT_EQ(info.spec.ops[0].name(), "decode");
  EXPECT_FALSE(std::get<bool>(*info.spec.ops[0].find("exact_decode")));
  const auto& nested = std::get<std::vector<Op>>(*info.spec.ops[1].find("ops"));
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(std::get<double>(*nested[0].find("p")), 1.0);
  EXPECT_EQ(nested[1].name(), "identity_is_not_an_op");
  ASSERT_EQ(info.spec.batch_ops.size(), 1u);
  expect_wire(detail::to_wire(info.spec), opened.spec().DebugString());  // the round trip loses nothing
}

}  // namespace
}  // namespace batchd
