// Reads one batch of fashion-mnist-test from the daemon at argv[1] and prints its shape.
#include <batchd/client.h>

#include <cstdio>

int main(int argc, char** argv) {
  auto client = batchd::Client::connect(argc > 1 ? argv[1] : "");
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.error().message().c_str()), 1;
  batchd::StreamOptions o;
  o.dataset = "fashion-mnist-test";
  o.pipeline = "fmnist";
  o.batch_size = 32;
  auto stream = client->open_stream(o);
  if (!stream.ok()) return std::fprintf(stderr, "%s\n", stream.error().message().c_str()), 1;
  auto batch = stream->next();
  if (!batch.ok() || !*batch) return std::fprintf(stderr, "no batch\n"), 1;
  const batchd::Tensor* image = (*batch)->find("image");
  std::printf("image %s [%lld,%lld,%lld,%lld]\n", batchd::dtype_name(image->dtype),
              static_cast<long long>(image->shape[0]), static_cast<long long>(image->shape[1]),
              static_cast<long long>(image->shape[2]), static_cast<long long>(image->shape[3]));
  return 0;
}
