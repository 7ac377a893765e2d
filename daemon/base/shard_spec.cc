#include "base/shard_spec.h"

#include <glob.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>

namespace batchd::daemon {

namespace {

using Strings = std::vector<std::string>;
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

class Expander {
 public:
  Expander(const std::string& whole, size_t limit) : whole_(whole), limit_(limit) {}

  // A pattern: literal runs and top-level brace groups, combined as a cartesian product (leftmost slowest).
  Result<Strings> pattern(std::string_view s) {
    std::vector<Strings> items;
    size_t start = 0, depth = 0;
    for (size_t pos = 0; pos < s.size(); ++pos) {
      if (s[pos] == '\\') {
        ++pos;
      } else if (s[pos] == '{') {
        if (depth++ == 0) {
          if (pos > start) items.push_back({std::string(s.substr(start, pos - start))});
          start = pos;
        }
      } else if (s[pos] == '}') {
        if (depth == 0) return unbalanced();
        if (--depth == 0) {
          auto expr = expression(s.substr(start + 1, pos - start - 1));
          if (!expr.ok()) return expr.error();
          if (expr->has_value()) {
            items.push_back(std::move(**expr));
          } else {  // neither a range nor a list: the braces are literal, their content is still a pattern
            auto inner = pattern(s.substr(start + 1, pos - start - 1));
            if (!inner.ok()) return inner.error();
            items.push_back({"{"});
            items.push_back(std::move(inner).value());
            items.push_back({"}"});
          }
          start = pos + 1;
        }
      }
    }
    if (depth != 0) return unbalanced();
    if (start < s.size()) items.push_back({std::string(s.substr(start))});
    return product(items);
  }

 private:
  Error unbalanced() const { return Error(ErrorCode::kInvalidArgument, "unbalanced braces in '" + whole_ + "'"); }
  Error too_many() const {
    return Error(ErrorCode::kInvalidArgument, "'" + whole_ + "' expands to more than " + std::to_string(limit_) +
                                                  " shards; split the dataset or use larger shards");
  }

  Result<Strings> product(const std::vector<Strings>& items) {
    size_t total = 1;
    for (const auto& item : items) {
      if (item.empty()) return Strings{};
      if (total > limit_ / item.size()) return too_many();
      total *= item.size();
    }
    Strings out(1);
    for (const auto& item : items) {
      Strings next;
      next.reserve(out.size() * item.size());
      for (const auto& prefix : out) {
        for (const auto& part : item) next.push_back(prefix + part);
      }
      out = std::move(next);
    }
    return out;
  }

  // A range, a comma list, or nullopt (literal braces).
  Result<std::optional<Strings>> expression(std::string_view expr) {
    static const std::regex int_range(R"(^(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?$)");
    static const std::regex char_range(R"(^([A-Za-z])\.\.([A-Za-z])(?:\.\.-?(\d+))?$)");
    const std::string e(expr);
    std::smatch m;
    if (std::regex_match(e, m, int_range)) return ints(m[1], m[2], m[3]);
    if (std::regex_match(e, m, char_range)) return letters(m[1].str()[0], m[2].str()[0], m[3]);
    std::vector<std::string_view> parts;
    size_t start = 0, depth = 0;
    for (size_t pos = 0; pos < expr.size(); ++pos) {
      if (expr[pos] == '\\') {
        ++pos;
      } else if (expr[pos] == '{') {
        ++depth;
      } else if (expr[pos] == '}') {
        --depth;
      } else if (expr[pos] == ',' && depth == 0) {
        parts.push_back(expr.substr(start, pos - start));
        start = pos + 1;
      }
    }
    if (parts.empty()) return std::optional<Strings>();
    parts.push_back(expr.substr(start));
    Strings out;
    for (auto part : parts) {
      auto expanded = pattern(part);
      if (!expanded.ok()) return expanded.error();
      if (out.size() + expanded->size() > limit_) return too_many();
      out.insert(out.end(), expanded->begin(), expanded->end());
    }
    return std::optional<Strings>(std::move(out));
  }

  Result<int64_t> number(const std::string& s) const {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v > (int64_t{1} << 53) || v < -(int64_t{1} << 53)) {
      return Error(ErrorCode::kInvalidArgument, "range bound " + s + " in '" + whole_ + "' is out of range");
    }
    return v;
  }

  static int64_t step_of(const std::ssub_match& incr, int64_t parsed) { return incr.matched && parsed != 0 ? parsed : 1; }

  Result<std::optional<Strings>> ints(const std::string& left, const std::string& right, const std::ssub_match& incr) {
    auto a = number(left), b = number(right), s = incr.matched ? number(incr.str()) : Result<int64_t>(1);
    if (!a.ok()) return a.error();
    if (!b.ok()) return b.error();
    if (!s.ok()) return s.error();
    const int64_t step = step_of(incr, *s);
    auto padded = [](const std::string& x) { return x != "0" && x != "-0" && (x[0] == '0' || x.rfind("-0", 0) == 0); };
    const int width = padded(left) || padded(right) ? static_cast<int>(std::max(left.size(), right.size())) : 0;
    const uint64_t span = static_cast<uint64_t>(*a < *b ? *b - *a : *a - *b);
    if (span / static_cast<uint64_t>(step) + 1 > limit_) return too_many();
    Strings out;
    const int64_t dir = *a <= *b ? step : -step;
    for (int64_t v = *a; dir > 0 ? v <= *b : v >= *b; v += dir) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%0*lld", width, static_cast<long long>(v));
      out.emplace_back(buf);
    }
    return std::optional<Strings>(std::move(out));
  }

  Result<std::optional<Strings>> letters(char left, char right, const std::ssub_match& incr) {
    auto s = incr.matched ? number(incr.str()) : Result<int64_t>(1);
    if (!s.ok()) return s.error();
    const int64_t step = step_of(incr, *s);
    const int64_t a = static_cast<int64_t>(kAlphabet.find(left)), b = static_cast<int64_t>(kAlphabet.find(right));
    const int64_t dir = a < b ? step : -step;
    Strings out;
    for (int64_t v = a; dir > 0 ? v <= b : v >= b; v += dir) out.emplace_back(1, kAlphabet[static_cast<size_t>(v)]);
    return std::optional<Strings>(std::move(out));
  }

  const std::string& whole_;
  const size_t limit_;
};

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

std::string normalized(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : abs).lexically_normal().string();
}

// The files a glob matches, sorted by name; kNotFound if none.
Result<Strings> match(const std::string& pattern, const std::string& key) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT | GLOB_ERR, nullptr, &g);
  Strings out(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
  ::globfree(&g);
  if (rc == GLOB_NOMATCH) {
    return Error(ErrorCode::kNotFound, key + ": '" + pattern + "' matches no file; fix the pattern or the path");
  }
  if (rc != 0) {
    return Error(ErrorCode::kIo, key + ": cannot match '" + pattern + "' (" +
                                     (rc == GLOB_NOSPACE ? "out of memory" : "a directory could not be read") +
                                     "); check the directories' permissions");
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Result<std::vector<std::string>> brace_expand(const std::string& pattern, size_t limit) {
  auto raw = Expander(pattern, limit).pattern(pattern);
  if (!raw.ok()) return raw.error();
  for (auto& s : *raw) s = unescape(s);
  return raw;
}

Result<std::vector<std::string>> expand_shards(const std::vector<std::string>& patterns, const std::string& key,
                                               size_t max_shards) {
  Strings out;
  std::set<std::string> seen;
  for (const auto& pattern : patterns) {
    auto expanded = brace_expand(pattern, max_shards);
    if (!expanded.ok()) return Error(expanded.error().code(), key + ": " + expanded.error().message());
    for (const auto& one : *expanded) {
      Strings files;
      if (one.find_first_of("*?[") != std::string::npos) {
        auto matched = match(one, key);
        if (!matched.ok()) return matched.error();
        files = std::move(matched).value();
      } else {
        struct stat st {};
        if (::stat(one.c_str(), &st) != 0) {
          const int err = errno;
          if (err == ENOENT || err == ENOTDIR) {
            return Error(ErrorCode::kNotFound, "shard " + one + " does not exist (" + key + " = '" + pattern +
                                                   "'); restore the file or fix the pattern");
          }
          return posix_error("cannot stat shard " + one + " (" + key + ")", err);
        }
        files.push_back(one);
      }
      for (const auto& file : files) {
        std::string path = normalized(file);
        if (!seen.insert(path).second) {
          return Error(ErrorCode::kInvalidArgument, key + " names shard " + path + " twice (its samples would be "
                                                    "in every epoch twice); remove the overlap between patterns");
        }
        if (out.size() == max_shards) {
          return Error(ErrorCode::kInvalidArgument, key + " names more than " + std::to_string(max_shards) +
                                                        " shards; use larger shards");
        }
        out.push_back(std::move(path));
      }
    }
  }
  return out;
}

}  // namespace batchd::daemon
