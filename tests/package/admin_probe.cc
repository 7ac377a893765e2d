// Asks the daemon at argv[1] for its status through the installed batchd/admin.h and prints its workers.
#include <batchd/admin.h>

#include <cstdio>

int main(int argc, char** argv) {
  auto admin = batchd::Admin::connect(argc > 1 ? argv[1] : "");
  if (!admin.ok()) return std::fprintf(stderr, "%s\n", admin.error().message().c_str()), 1;
  auto status = admin->status();
  if (!status.ok()) return std::fprintf(stderr, "%s\n", status.error().message().c_str()), 1;
  std::printf("admin: %zu workers\n", status->workers.size());
  return 0;
}
