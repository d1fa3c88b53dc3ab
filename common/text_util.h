// Rendering untrusted text (file contents, names from study files, fields
// from the wire) into one-line error messages, and UTF-8 validation.
// Thread-safe: pure functions.
#ifndef RISTRETTO_COMMON_TEXT_UTIL_H_
#define RISTRETTO_COMMON_TEXT_UTIL_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace ristretto {

// Default cap of EscapeForMessage, in output characters: enough to
// recognise a value, short enough that a 50 MB name cannot flood a log.
inline constexpr size_t kMessageTextCap = 80;

// Returns `text` as printable ASCII safe to embed in a one-line message:
// bytes 0x20..0x7E are kept (a backslash becomes "\\"), every other byte
// (control characters, newlines, NUL, bytes >= 0x80) becomes "\xNN" with two
// lower-case hex digits. If the escaped form is longer than `max_chars`, it
// is cut at a whole escape sequence no later than `max_chars` and
// "...(N bytes)" is appended, N being text.size(). max_chars 0 means no cap.
std::string EscapeForMessage(absl::string_view text,
                             size_t max_chars = kMessageTextCap);

// Byte offset of the first byte of `text` that does not start (or continue)
// a well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or absl::string_view::npos if all of it is valid.
size_t FindInvalidUtf8(absl::string_view text);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_TEXT_UTIL_H_
