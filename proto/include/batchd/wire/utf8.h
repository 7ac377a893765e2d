// utf8.h — text from another process made fit for a protobuf `string` field. proto3 parsers refuse a string that is
// not valid UTF-8, and refuse with it the whole frame: an error message cut in the middle of a character (a byte
// limit applied with substr) makes its receiver drop the connection instead of showing the error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace batchd::wire {

// `text` cut to at most `max_bytes` bytes at a character boundary, each byte that is not part of a well-formed
// UTF-8 sequence replaced by '?'. Well-formed is RFC 3629's (table 3-7 of the Unicode standard, what protobuf
// checks): no overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF. The result is valid UTF-8 of
// at most max_bytes bytes; text that is valid and short enough comes back unchanged.
std::string bounded_utf8(std::string_view text, size_t max_bytes);

// The length (1 to 4) of the well-formed UTF-8 sequence (the rule above) that `text` starts with; 0 if it starts
// with none (or is empty).
size_t utf8_sequence_length(std::string_view text);

}  // namespace batchd::wire
