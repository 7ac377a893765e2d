// batchctl_cache.h — batchctl cache [DATASET] [--drop] [--json]: the daemon's sample cache (docs/operations.md
// "Cache"): its bound and use, and per (dataset load, op prefix) its entries, bytes, fill progress and hit rate
// (groups: admins only); --drop drops the entries of DATASET (every one without it; admins only).
#pragma once

#include <string>

#include "batchd/admin.h"

namespace batchd::ctl {

// Prints the cache part of `status`, the groups of `dataset` only when it is not empty.
void print_cache(const DaemonStatus& status, const std::string& dataset);
// batchctl cache: asks for the cache with its groups (StatusRequest.cache_groups: no stream listed) and prints it,
// or its JSON ({"cache": ...}); returns the exit status.
int run_cache(const ConnectOptions& connect, const std::string& dataset, bool json);
// One line for batchctl shm: the cache's memory (a memfd of the daemon's, in no directory).
void print_cache_memory(const CacheStatus& cache);
// --drop: asks the daemon, prints what was dropped; returns the exit status (1 if refused or unreachable).
int run_cache_drop(const ConnectOptions& connect, const std::string& dataset);

}  // namespace batchd::ctl
