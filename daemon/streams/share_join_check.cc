// Share::check_join (share.h): which requests may join a shared production (always of its creator's uid: the
// StreamManager looks shares up by (uid, name)).
#include "streams/share.h"

#include <algorithm>

#include "streams/stream_settings.h"

namespace batchd::daemon {

Status Share::check_join(const wire::OpenStream& req, const StreamPlan& plan, const Peer& peer) const {
  const std::string share = "share '" + name() + "'";
  if (!production_.running()) {
    return Error(ErrorCode::kUnavailable, share + " has failed; its subscribers must close it before the name can "
                                                  "be used again");
  }
  if (subscribers_.count(peer.connection_id)) {
    return Error(ErrorCode::kInvalidArgument, share + " already has a subscriber on this connection; read it "
                                                      "through that stream, or join from another connection");
  }
  if (subscribers_.size() >= max_subscribers_) {
    return Error(ErrorCode::kResourceExhausted, share + " has " + std::to_string(subscribers_.size()) +
                                                    " subscribers (shares.max_subscribers); open a private stream "
                                                    "or raise the limit");
  }
  const wire::StreamOpened& mine = production_.opened();
  auto differs = [&](const std::string& option, const std::string& theirs, const std::string& yours) {
    return Error(ErrorCode::kInvalidArgument,
                 share + " reads " + option + " " + theirs + "; this stream asks for " + option + " " + yours +
                     ". Every subscriber must ask for the same dataset, pipeline, pipeline options, seed, batch "
                     "size, sampler, strategy, depth and on_error (only epoch, start_batch and num_epochs may "
                     "differ): change it, open a private stream, or use another share name");
  };
  auto text = [](auto v) { return std::to_string(v); };
  auto flag = [](bool v) { return std::string(v ? "true" : "false"); };
  const uint32_t world = req.world_size() ? req.world_size() : 1;
  const uint32_t creator_world = creator_.world_size() ? creator_.world_size() : 1;
  const std::string& dataset = production_.attach().dataset();  // as planned: a folder reference resolved
  if (plan.dataset() != dataset) return differs("dataset", "'" + dataset + "'", "'" + plan.dataset() + "'");
  if (req.subset().SerializeAsString() != creator_.subset().SerializeAsString()) {
    return differs("subset", std::to_string(production_.opened().subset_size()) + " indices",
                   "another (" + std::to_string(plan.opened.subset_size()) + " indices)");
  }
  if (req.pipeline() != creator_.pipeline()) return differs("pipeline", "'" + creator_.pipeline() + "'", "'" + req.pipeline() + "'");
  const auto& options = plan.attach.pipeline_options();
  if (options.SerializeAsString() != production_.attach().pipeline_options().SerializeAsString()) {
    return differs("pipeline_options", "{" + production_.attach().pipeline_options().ShortDebugString() + "}",
                   "{" + options.ShortDebugString() + "}");
  }
  // The canonical spec (key order and defaults do not matter; a config pipeline reloaded with other ops does).
  if (plan.attach.spec().SerializeAsString() != production_.attach().spec().SerializeAsString()) {
    return differs("pipeline ops", "[" + production_.attach().spec().ShortDebugString().substr(0, 300) + "]",
                   "[" + plan.attach.spec().ShortDebugString().substr(0, 300) + "]");
  }
  if (req.seed() != creator_.seed()) return differs("seed", text(creator_.seed()), text(req.seed()));
  if (req.batch_size() != creator_.batch_size()) return differs("batch_size", text(creator_.batch_size()), text(req.batch_size()));
  if (req.shuffle() != creator_.shuffle()) return differs("shuffle", flag(creator_.shuffle()), flag(req.shuffle()));
  if (req.rank() != creator_.rank()) return differs("rank", text(creator_.rank()), text(req.rank()));
  if (world != creator_world) return differs("world_size", text(creator_world), text(world));
  if (req.drop_last() != creator_.drop_last()) return differs("drop_last", flag(creator_.drop_last()), flag(req.drop_last()));
  if (drops_last_batch(req) != drops_last_batch(creator_)) {
    return differs("drop_last_batch", flag(drops_last_batch(creator_)), flag(drops_last_batch(req)));
  }
  const auto repeats = [](const wire::OpenStream& r) { return std::max(r.repeated_aug().repeats(), 1u); };
  if (repeats(req) != repeats(creator_)) return differs("repeated_aug", text(repeats(creator_)), text(repeats(req)));
  if (req.repeated_aug().selected_samples() != creator_.repeated_aug().selected_samples()) {
    return differs("repeated_aug.selected_samples", text(creator_.repeated_aug().selected_samples()),
                   text(req.repeated_aug().selected_samples()));
  }
  if (plan.opened.strategy() != mine.strategy()) {
    return differs("strategy", strategy_name(mine.strategy()), strategy_name(plan.opened.strategy()));
  }
  if (plan.opened.window() != window_) return differs("depth", text(window_), text(plan.opened.window()));
  if (req.on_error() != creator_.on_error()) {
    return differs("on_error", creator_.on_error() == wire::ON_ERROR_SKIP ? "skip" : "fail",
                   req.on_error() == wire::ON_ERROR_SKIP ? "skip" : "fail");
  }
  return ok_status();
}

}  // namespace batchd::daemon
