// printable.h — text that another party chose (an S3 key, an ETag, a server's error message, a URL from a listing)
// made safe to put inside one log line, one error message or one status field, which batchctl prints to a terminal.
//
// A newline in such a text would start a forged log line; an escape sequence (ESC, CSI) would drive the terminal of
// whoever reads `batchctl datasets`. printable() escapes, reversibly and in ASCII, everything that could do either:
//   - the C0 controls and DEL: "\n", "\r", "\t" for those three, "\xNN" for the others (ESC = "\x1b",
//     DEL = "\x7f");
//   - the backslash itself: "\\" (so an escaped text cannot be taken for another one);
//   - a byte that is not part of well-formed UTF-8 (wire/utf8.h's rule): "\xNN";
//   - the C1 controls (U+0080..U+009F, CSI among them) and U+2028/U+2029 (line and paragraph separators): "\uNNNN".
// Everything else (printable ASCII, well-formed UTF-8 letters) comes back unchanged, so a plain key reads as it is.
// The result is valid UTF-8 of at most 6 bytes per byte of `text`; apply it once, where the text enters a message.
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace batchd::wire {

std::string printable(std::string_view text);

}  // namespace batchd::wire
