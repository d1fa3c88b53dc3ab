// Rendering untrusted text (file contents, names from study files, fields
// from the wire) into one-line error messages, and UTF-8 validation.
// Thread-safe: pure functions.
#ifndef RISTRETTO_COMMON_TEXT_UTIL_H_
#define RISTRETTO_COMMON_TEXT_UTIL_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
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

// Cap on an id that crosses the network and is logged and stored (actor
// ids, member ids, run ids, addresses): a 10 MB id is an attack, not a name.
inline constexpr size_t kMaxIdBytes = 256;

// kOk when `text`, the value of `what` (e.g. "member_id"), is at most
// `max_bytes` long and holds no control characters (bytes below 0x20, and
// 0x7f). Otherwise kInvalidArgument: "WHAT is N bytes (limit M)" or
// "WHAT 'ESCAPED' contains control characters".
absl::Status CheckIdText(absl::string_view what, absl::string_view text,
                         size_t max_bytes = kMaxIdBytes);

// Byte offset of the first byte of `text` that does not start (or continue)
// a well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or absl::string_view::npos if all of it is valid.
size_t FindInvalidUtf8(absl::string_view text);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_TEXT_UTIL_H_
