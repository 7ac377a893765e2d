// cache_hash.h — the 64-bit ids that key the sample cache's entries (sample_cache.h CacheKey): of a dataset's key
// ("<name>#<load>") and of a canonical op prefix (cache_point.h cache_prefix), whose bytes a client chooses.
//
// Keyed: SipHash-2-4 (Aumasson & Bernstein, "SipHash: a fast short-input PRF", 2012; the reference vectors of its
// paper's appendix A) under a 128-bit key drawn from getrandom(2) when the daemon starts (static initialization),
// before it forks its workers, who inherit it: the same in the daemon and every worker, unknown to clients. An
// unkeyed hash (std::hash: MurmurHash64A in libstdc++, invertible block by block) lets a client compute a spec whose
// prefix id equals another spec's, and fill entries that the other spec's streams then read as theirs.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace batchd::daemon {

// SipHash-2-4 of `text` under `key` (little-endian words, as the paper's reference code reads its 16 key bytes).
uint64_t siphash24(const std::array<uint64_t, 2>& key, std::string_view text);

// siphash24 under this process's key (drawn at start; inherited by forked workers). Not stable across daemon runs,
// which never share a cache.
uint64_t cache_hash(std::string_view text);

}  // namespace batchd::daemon
