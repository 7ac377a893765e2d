// What the worker pool says of itself (worker_pool.h): the status rows of its workers, the sample on a worker's
// progress page, and a task described for the log.
#include <string>
#include <vector>

#include "workers/worker_pool.h"

namespace batchd::daemon {

int64_t WorkerPool::sample_on_page(size_t w) const {
  const Worker& worker = workers_[w];
  const WorkerProgress* p = worker.progress->get();
  if (!worker.task || p->stream_id.load() != worker.task->stream_id() ||
      p->sequence.load() != worker.task->sequence() || p->begin.load() != worker.task->begin()) {
    return -1;
  }
  return p->sample.load();
}

std::string WorkerPool::describe_task(const Task& task) const {
  const auto& indices = task.work.indices();
  std::string s = "stream " + std::to_string(task.stream_id()) + ", batch " + std::to_string(task.work.batch()) +
                  " of epoch " + std::to_string(task.work.epoch()) + ", samples [" + std::to_string(task.begin()) +
                  ", " + std::to_string(task.end()) + ") of the batch";
  if (!indices.empty()) {
    s += indices.size() == 1 ? " (dataset index " + std::to_string(indices[0]) + ")"
                             : " (dataset indices " + std::to_string(indices[0]) +
                                   (indices.size() > 2 ? ", ..., " : ", ") + std::to_string(indices[indices.size() - 1]) +
                                   ")";
  }
  return s;
}

std::vector<wire::WorkerInfo> WorkerPool::describe() const {
  std::vector<wire::WorkerInfo> out;
  for (const auto& worker : workers_) {
    wire::WorkerInfo info;
    info.set_pid(worker.pid);
    info.set_state(worker.pid <= 0 ? "down" : worker.task ? "busy" : "idle");
    info.set_batches_done(worker.batches_done);
    info.set_restarts(worker.restarts);
    const auto now = std::chrono::steady_clock::now();
    const auto busy = worker.busy + (worker.task ? now - worker.task_started : std::chrono::steady_clock::duration{});
    info.set_busy_seconds(std::chrono::duration<double>(busy).count());
    info.set_alive_seconds(worker.pid > 0 ? std::chrono::duration<double>(now - worker.started).count() : 0.0);
    out.push_back(info);
  }
  return out;
}

}  // namespace batchd::daemon
