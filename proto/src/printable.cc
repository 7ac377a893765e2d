#include "batchd/wire/printable.h"

#include <cstdio>

#include "batchd/wire/utf8.h"

namespace batchd::wire {

namespace {

void append_hex(std::string* out, const char* format, unsigned value) {
  char buf[8];
  std::snprintf(buf, sizeof buf, format, value);
  out->append(buf);
}

// The code point of the well-formed 2- or 3-byte sequence at the start of `s` (its length `n`).
unsigned code_point(std::string_view s, size_t n) {
  const auto b = [&](size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(s[i])); };
  if (n == 2) return ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
  return ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (c == '\\') out += "\\\\";
      else if (c < 0x20 || c == 0x7F) append_hex(&out, "\\x%02x", c);
      else out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    const size_t n = utf8_sequence_length(text.substr(i));
    if (n == 0) {
      append_hex(&out, "\\x%02x", c);
      ++i;
      continue;
    }
    const unsigned cp = n <= 3 ? code_point(text.substr(i), n) : 0x10000;
    if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
      append_hex(&out, "\\u%04x", cp);
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace batchd::wire
