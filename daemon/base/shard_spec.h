// shard_spec.h — a webdataset's `shards` patterns expanded into the ordered list of shard files.
//
// Each pattern is brace-expanded the way Python's braceexpand does it (what webdataset.WebDataset(urls) uses):
//   - integer ranges {000000..000099}, {9..0}, {1..10..3}: zero padding is kept (when either end starts with 0,
//     every number is printed as wide as the wider end), descending ranges count down, a step's sign is ignored;
//   - letter ranges {a..e} (A..Z then a..z, as braceexpand's alphabet);
//   - comma lists {a,b,} (an empty alternative is allowed), nested ({x{1..2},y}) and several braces in one pattern
//     (the leftmost brace varies slowest, as itertools.product);
//   - braces holding neither a range nor a comma stay literal ("{abc}"); a backslash escapes the next character;
//     unbalanced braces are an error.
// Then each result that holds a glob metacharacter (* ? [) is matched with glob(3), the matches sorted by name
// (byte order, as Python's sorted()); a glob that matches nothing is an error naming the pattern. Any other result
// must name an existing file (kNotFound naming the path and the config key). Paths are made absolute (relative to
// the daemon's working directory) and normalized.
//
// The order is the patterns' order, then each one's expansion order; it is the dataset's shard order. The same file
// twice (after normalization) is refused: its samples would be in every epoch twice. At most `max_shards` paths.
// Pure apart from the file system lookups (stat, glob); thread-safe; logs nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon {

inline constexpr size_t kMaxShards = size_t{1} << 20;

// Brace expansion alone (no file system): the strings `pattern` stands for, in order. kInvalidArgument for
// unbalanced braces, or if there would be more than `limit` strings.
Result<std::vector<std::string>> brace_expand(const std::string& pattern, size_t limit = kMaxShards);

// The shard files of `patterns`; `key` names the config key in errors ("datasets.train.shards").
// kInvalidArgument (bad pattern, duplicate, too many), kNotFound (a missing file, a glob matching nothing).
Result<std::vector<std::string>> expand_shards(const std::vector<std::string>& patterns, const std::string& key,
                                               size_t max_shards = kMaxShards);

}  // namespace batchd::daemon
