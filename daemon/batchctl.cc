// batchctl — the batchd admin command.
//
//   batchctl [--socket PATH] status [--json]   daemon, workers, streams, segments
//   batchctl [--socket PATH] shm [--json] [--gc [--include-foreign]]
//       every live segment (stream, owner pid/uid, strategy, size, slots, age), the fds each client holds, and a
//       scan of /dev/shm for orphans (batchd.* whose daemon is gone) and foreign leftovers (torch_*, ...).
//       Works when the daemon is down, from /dev/shm alone.
//
// Exit status: 0 on success, 1 if the daemon cannot be reached or answers with an error, 2 on a usage error.
#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "batchctl_shm.h"
#include "batchd/wire/convert.h"
#include "client_core.h"

namespace {

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

const char* strategy(batchd::wire::SharingStrategy s) {
  return s == batchd::wire::FILE_SYSTEM ? "file_system" : "file_descriptor";
}

std::string slot_state(const batchd::wire::SegmentInfo& s) {
  return std::to_string(s.slots_leased()) + " leased, " + std::to_string(s.slots_ready()) + " ready, " +
         std::to_string(s.slots_working()) + " working, " + std::to_string(s.slots_free()) + " free";
}

int print_json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(m, &out, options).ok()) return 1;
  std::printf("%s\n", out.c_str());
  return 0;
}

void print_segments(const batchd::wire::StatusReply& st) {
  if (st.segments_size() == 0) {
    std::printf("no live segments\n");
    return;
  }
  std::printf("%-8s %-30s %-16s %10s %8s %6s %8s  %s\n", "STREAM", "SEGMENT", "STRATEGY", "SIZE", "PID", "UID",
              "AGE", "SLOTS");
  for (const auto& s : st.segments()) {
    std::printf("%-8llu %-30s %-16s %10s %8d %6u %7.1fs  %s\n", static_cast<unsigned long long>(s.stream_id()),
                s.name().c_str(), strategy(s.strategy()), human_bytes(s.bytes()).c_str(), s.owner_pid(),
                s.owner_uid(), s.age_seconds(), slot_state(s).c_str());
  }
}

void print_status(const batchd::wire::StatusReply& st) {
  std::printf("batchd %s, pid %d, up %.0f s, %u connections, default strategy %s\n", st.version().c_str(),
              st.daemon_pid(), st.uptime_seconds(), st.connections(), strategy(st.default_strategy()));
  std::printf("datasets: ");
  for (int i = 0; i < st.datasets_size(); ++i) std::printf("%s%s", i ? ", " : "", st.datasets(i).c_str());
  std::printf("\n\nworkers (%d):\n", st.workers_size());
  for (const auto& w : st.workers()) {
    std::printf("  pid %-8d %-5s %10llu batches  %llu restarts\n", w.pid(), w.state().c_str(),
                static_cast<unsigned long long>(w.batches_done()), static_cast<unsigned long long>(w.restarts()));
  }
  std::printf("\nstreams (%d):\n", st.streams_size());
  for (const auto& s : st.streams()) {
    std::printf("  %-6llu %-20s %-12s batch %-6u client pid %-8d %llu/%llu batches  %s\n",
                static_cast<unsigned long long>(s.stream_id()), s.dataset().c_str(), s.pipeline().c_str(),
                s.batch_size(), s.client_pid(), static_cast<unsigned long long>(s.batches_delivered()),
                static_cast<unsigned long long>(s.batches_total()), s.state().c_str());
  }
  std::printf("\nsegments (%d):\n", st.segments_size());
  print_segments(st);
}

std::optional<batchd::wire::StatusReply> query_status(const std::string& socket, std::string* error) {
  auto core = batchd::detail::ClientCore::connect(socket);
  if (!core.ok()) {
    *error = core.error().message();
    return std::nullopt;
  }
  batchd::wire::Request request;
  request.mutable_status();
  auto reply = (*core)->call(std::move(request));
  if (!reply.ok()) {
    *error = reply.error().message();
    return std::nullopt;
  }
  return reply->reply.status();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("batchctl — inspect a running batchd.\n\nThe socket is --socket, else $BATCHD_SOCKET, else "
               "/run/batchd/batchd.sock. Exit status: 0 ok, 1 daemon unreachable or error, 2 usage.",
               "batchctl");
  app.require_subcommand(1);
  std::string socket;
  bool json = false;
  app.add_option("-s,--socket", socket, "the daemon's socket");
  app.set_version_flag("--version", std::string("batchctl ") + BATCHD_VERSION);
  auto* status_cmd = app.add_subcommand("status", "daemon, workers (pid, state, batches, restarts), streams and "
                                                  "segments");
  status_cmd->add_flag("--json", json, "print the whole status as one JSON object");
  batchd::ctl::ShmOptions shm_options;
  auto* shm_cmd = app.add_subcommand(
      "shm", "/dev/shm usage and leaks: the daemon's live segments (stream, owner pid/uid, strategy, size, slot "
             "states, age), the fds each client holds, orphans (batchd.* segments whose daemon is gone) and foreign "
             "files (torch_* leftovers, ...). Works when the daemon is down.");
  shm_cmd->add_flag("--json", json, "print the report as one JSON object");
  auto* gc = shm_cmd->add_flag("--gc", shm_options.gc, "remove the orphans");
  shm_cmd->add_flag("--include-foreign", shm_options.include_foreign,
                    "with --gc: also remove PyTorch leftovers (torch_*) that no process has open or mapped")
      ->needs(gc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  std::string error;
  auto status = query_status(socket, &error);
  if (*shm_cmd) {
    const auto report = batchd::ctl::shm_report(status, error, shm_options);
    if (json) return print_json(report);
    batchd::ctl::print_shm_report(report);
    return 0;
  }
  if (!status) {
    std::fprintf(stderr, "batchctl: %s\n", error.c_str());
    return 1;
  }
  if (json) return print_json(*status);
  print_status(*status);
  return 0;
}
