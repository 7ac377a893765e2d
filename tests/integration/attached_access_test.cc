// Who may attach a worker to a stream of a trainer's own Dataset, and what an attached worker holds: another uid
// gets the answer a missing stream gets; a connection is a trainer or a worker, never both; a stream of a daemon
// dataset takes no attached worker; limits.max_attached_workers bounds them; the progress page is a sealed memfd of
// 4096 bytes and the segment fd a worker gets is read-write while the trainer's stays read-only; attaching and
// leaving leaks no daemon fd.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <regex>

#include "attached_fixture.h"

namespace batchd::testing {
namespace {

std::string error_of(const wire::Reply& r) {
  return r.has_error() ? std::to_string(r.error().code()) + " " + r.error().message() : r.ShortDebugString();
}

// The message with every number taken out: the shape of an answer, whatever stream and uid it names.
std::string shape(const std::string& message) { return std::regex_replace(message, std::regex("[0-9]+"), "N"); }

TEST(AttachedAccess, AnotherUidGetsTheAnswerOfAMissingStream) {
  SKIP_UNLESS_ROOT();
  auto daemon = start_daemon();
  open_socket_to_everyone(daemon.socket_path());
  auto trainer = Client::connect(daemon.socket_path());
  ASSERT_TRUE(trainer.ok()) << trainer.error().message();
  auto stream = trainer->open_stream(external_options(64, 8, 2));
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  const uint64_t id = stream->info().id;
  const std::string verdict = run_as(OtherUser{}, [&]() -> std::string {
    std::string out;
    RawConnection theirs(daemon.socket_path()), missing(daemon.socket_path());
    const RawAttachment a = raw_attach(theirs, id), b = raw_attach(missing, id + 1000);
    if (a.attached()) return "nobody attached to root's stream " + std::to_string(id);
    if (a.reply.error().code() != wire::NOT_FOUND) out += "another uid's stream: " + error_of(a.reply) + "\n";
    if (shape(a.reply.error().message()) != shape(b.reply.error().message())) {
      out += "the answers differ: '" + a.reply.error().message() + "' vs '" + b.reply.error().message() + "'\n";
    }
    if (a.reply.error().message().find(std::to_string(::getuid())) == std::string::npos) {
      out += "the answer does not name the asker's uid: " + a.reply.error().message() + "\n";
    }
    return out;
  });
  EXPECT_EQ(verdict, "");
}

TEST(AttachedAccess, ATrainerConnectionCannotAttachNorAWorkerOpenStreams) {
  auto daemon = start_daemon();
  // A connection with a stream open (raw, so the same connection can try to attach).
  RawConnection trainer(daemon.socket_path());
  const uint64_t id = raw_open_external(trainer, 64, 8, 2);
  ASSERT_NE(id, 0u);
  const RawAttachment own = raw_attach(trainer, id);
  ASSERT_FALSE(own.attached());
  EXPECT_EQ(own.reply.error().code(), wire::INVALID_ARGUMENT) << error_of(own.reply);
  EXPECT_NE(own.reply.error().message().find("connection of its own"), std::string::npos) << error_of(own.reply);

  // An attached worker that sends anything but WorkerDone is closed (a protocol error); its task is redone.
  RawConnection worker(daemon.socket_path());
  ASSERT_TRUE(raw_attach(worker, id).attached());
  ASSERT_TRUE(raw_next_task(worker).has_value());
  worker.send_request(fmnist_open_request(8));
  auto refused = worker.read_reply();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error().code(), wire::PROTOCOL) << error_of(*refused);
  EXPECT_NE(refused->error().message().find("may send only worker_done"), std::string::npos) << error_of(*refused);
  EXPECT_FALSE(worker.read_reply().has_value()) << "the worker's connection stays open";

  // The trainer's stream still ends, each batch once, with another worker.
  GoodWorkers good(daemon.socket_path(), id, 1);
  const RawStreamOutcome outcome = read_raw_stream(trainer, id);
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.delivered, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(AttachedAccess, AStreamOfADaemonDatasetTakesNoAttachedWorker) {
  auto daemon = start_daemon();
  auto trainer = Client::connect(daemon.socket_path());
  ASSERT_TRUE(trainer.ok()) << trainer.error().message();
  auto stream = trainer->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  RawConnection worker(daemon.socket_path());
  const RawAttachment a = raw_attach(worker, stream->info().id);
  ASSERT_FALSE(a.attached());
  EXPECT_EQ(a.reply.error().code(), wire::INVALID_ARGUMENT) << error_of(a.reply);
  EXPECT_NE(a.reply.error().message().find("fashion-mnist-test"), std::string::npos) << error_of(a.reply);
}

// The daemon's open fds (/proc/PID/fd).
size_t open_fds(pid_t pid) {
  size_t n = 0;
  if (DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n;
}

TEST(AttachedAccess, MaxAttachedWorkersIsNamedAndAttachingLeaksNoFd) {
  auto daemon = start_daemon_with("attached-max", "[limits]\nmax_attached_workers = 2\n");
  auto trainer = Client::connect(daemon.socket_path());
  ASSERT_TRUE(trainer.ok()) << trainer.error().message();
  auto stream = trainer->open_stream(external_options(64, 8, 2));
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  const uint64_t id = stream->info().id;
  {
    RawConnection first(daemon.socket_path());
    ASSERT_TRUE(raw_attach(first, id).attached());  // its page is made: the pool keeps it for the slot
  }
  ASSERT_TRUE(eventually([&] { return daemon_status(daemon.socket_path()).streams.at(0).attached_workers.empty(); }));
  const size_t fds_before = open_fds(daemon.pid());
  {
    RawConnection a(daemon.socket_path()), b(daemon.socket_path()), c(daemon.socket_path());
    ASSERT_TRUE(raw_attach(a, id).attached());
    ASSERT_TRUE(raw_attach(b, id).attached());
    const RawAttachment third = raw_attach(c, id);
    ASSERT_FALSE(third.attached());
    EXPECT_EQ(third.reply.error().code(), wire::RESOURCE_EXHAUSTED) << error_of(third.reply);
    EXPECT_NE(third.reply.error().message().find("limits.max_attached_workers"), std::string::npos)
        << error_of(third.reply);
  }
  // Their slots are free again, and every fd of theirs is closed (one page per slot stays with the pool).
  RawConnection again(daemon.socket_path());
  ASSERT_TRUE(eventually([&] {
    return daemon_status(daemon.socket_path()).streams.at(0).attached_workers.empty();
  }));
  ASSERT_TRUE(raw_attach(again, id).attached());
  EXPECT_LE(open_fds(daemon.pid()), fds_before + 2) << "the daemon's fds grew (the new connection and a second "
                                                       "slot's page are expected)";
}

TEST(AttachedAccess, ThePageIsASealedMemfdAndOnlyTheWorkersSegmentFdIsWritable) {
  auto daemon = start_daemon();
  RawConnection trainer(daemon.socket_path());
  std::vector<wire::UniqueFd> trainer_fds;
  const uint64_t id = raw_open_external(trainer, 64, 8, 1, wire::FILE_DESCRIPTOR, &trainer_fds);
  ASSERT_TRUE(id != 0 && trainer_fds.size() == 1);

  RawConnection worker(daemon.socket_path());
  const RawAttachment a = raw_attach(worker, id);
  ASSERT_TRUE(a.attached() && a.page.valid() && a.segment.valid());
  struct stat st {};
  ASSERT_EQ(::fstat(a.page.get(), &st), 0);
  EXPECT_EQ(st.st_size, 4096);
  EXPECT_NE(::ftruncate(a.page.get(), 1 << 20), 0) << "the page could grow";
  EXPECT_NE(::ftruncate(a.page.get(), 0), 0) << "the page could shrink (the daemon's mapping would fault)";
  const int seals = ::fcntl(a.page.get(), F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) << seals;
  EXPECT_NE(::fcntl(a.page.get(), F_ADD_SEALS, F_SEAL_WRITE), 0) << "the worker could seal the daemon's writes out";
  EXPECT_EQ(::fcntl(a.page.get(), F_GETFL) & O_ACCMODE, O_RDWR);

  EXPECT_EQ(::fcntl(a.segment.get(), F_GETFL) & O_ACCMODE, O_RDWR) << "the worker writes its rows";
  EXPECT_EQ(::fcntl(trainer_fds[0].get(), F_GETFL) & O_ACCMODE, O_RDONLY) << "the trainer's fd became writable";
  void* w = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, trainer_fds[0].get(), 0);
  EXPECT_EQ(w, MAP_FAILED) << "the trainer mapped its read-only segment fd writable";
  if (w != MAP_FAILED) ::munmap(w, 4096);
}

}  // namespace
}  // namespace batchd::testing
