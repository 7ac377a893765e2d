// pipeline_config.h — [pipelines.NAME] tables of the daemon's config: pipelines as data (docs/operations.md,
// "Pipelines"), usable by name in OpenStream.pipeline like the built-in presets.
//
//   [pipelines.my_train]
//   ops = [ { op = "random_resized_crop", size = 176 }, { op = "horizontal_flip" },
//           { op = "trivial_augment_wide" }, { op = "to_tensor" },
//           { op = "normalize", mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225] } ]
//   batch_ops = [ { op = "random_choice", ops = [ { op = "mixup", alpha = 0.2 }, { op = "cutmix" } ] } ]
//
// TOML values map onto OpValue: integers and floats -> number, arrays of numbers -> numbers, strings -> text,
// booleans -> flag, arrays of tables -> ops (nested). Each pipeline is planned when the config is read (the
// dataset's class count, which batch ops may take as num_classes, is checked at OpenStream): a bad one refuses
// the config, naming the file, the table and the op's position and key.
#pragma once

#include <string>

#include <toml++/toml.h>

#include "batchd.pb.h"
#include "batchd/result.h"

namespace batchd::daemon {

struct Config;

// Reads [pipelines] into config->pipelines (the limits of config->limits apply, as to a client's spec).
Status parse_pipelines(const toml::table& pipelines, const std::string& source, Config* config);

// A TOML op list (array of tables) as wire ops; `where` names it in errors ("pipelines.x.ops").
Status toml_ops(const toml::node& node, const std::string& where, const std::string& source,
                google::protobuf::RepeatedPtrField<wire::Op>* out);

}  // namespace batchd::daemon
