#include "common/text_util.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace ristretto {

std::string EscapeForMessage(absl::string_view text, size_t max_chars) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() < 256 ? text.size() + 8 : 256);
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    char piece[4];
    size_t len = 0;
    if (byte == '\\') {
      piece[0] = '\\';
      piece[1] = '\\';
      len = 2;
    } else if (byte >= 0x20 && byte <= 0x7e) {
      piece[0] = ch;
      len = 1;
    } else {
      piece[0] = '\\';
      piece[1] = 'x';
      piece[2] = kHex[byte >> 4];
      piece[3] = kHex[byte & 0xf];
      len = 4;
    }
    if (max_chars != 0 && out.size() + len > max_chars) {
      absl::StrAppend(&out, "...(", text.size(), " bytes)");
      return out;
    }
    out.append(piece, len);
  }
  return out;
}

size_t FindInvalidUtf8(absl::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b = bytes[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t min = 0;
    uint32_t cp = 0;
    if ((b & 0xe0) == 0xc0) {
      len = 2;
      min = 0x80;
      cp = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
      len = 3;
      min = 0x800;
      cp = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0) {
      len = 4;
      min = 0x10000;
      cp = b & 0x07;
    } else {
      return i;  // a continuation byte without a lead, or 0xf8..0xff
    }
    if (n - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((bytes[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (bytes[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return absl::string_view::npos;
}

absl::Status CheckIdText(absl::string_view what, absl::string_view text,
                         size_t max_bytes) {
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is ", text.size(), " bytes (limit ", max_bytes, ")"));
  }
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " '", EscapeForMessage(text), "' contains control characters"));
    }
  }
  return absl::OkStatus();
}

}  // namespace ristretto
