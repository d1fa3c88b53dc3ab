#include "env/csv_import.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "common/text_util.h"

namespace ristretto::env {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kBarHeader[] = {"timestamp", "open",  "high",
                                            "low",       "close", "volume"};
constexpr absl::string_view kMinQtyHeader[] = {"symbol", "min_order_qty"};

constexpr size_t kMaxSymbolBytes = 32;

// A symbol: 1-32 ASCII letters, digits, '_', '-', '.' or '+'; no separator
// (',' joins symbols in the store), no space, no control or escape byte.
bool IsSymbol(absl::string_view s) {
  if (s.empty() || s.size() > kMaxSymbolBytes) return false;
  for (const char c : s) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                    c == '_' || c == '-' || c == '.' || c == '+';
    if (!ok) return false;
  }
  return true;
}
constexpr absl::string_view kPriceNames[] = {"open", "high", "low", "close"};
// Integers at or above this are epoch milliseconds (see ParseTimestamp).
constexpr int64_t kMillisThreshold = 100'000'000'000;
// Per-category cap on detailed warnings; the rest are summarised in one line.
constexpr int kMaxDetailWarnings = 20;

// ---- Small text helpers.

absl::Status LineError(absl::string_view file, int64_t line,
                       absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(EscapeForMessage(file), ":", line, ": ", what));
}

// A field of the file as it may appear in a message: non-printable bytes
// escaped, capped (a 1 MB field must not become a 1 MB error).
std::string Shown(absl::string_view field) { return EscapeForMessage(field); }

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", path, "'"));
  }
  std::string content;
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), f)) > 0) {
    content.append(buffer, got);
  }
  const bool failed = std::ferror(f) != 0;
  const int error = errno;
  std::fclose(f);
  if (failed) {
    return absl::ErrnoToStatus(error, absl::StrCat("cannot read '", path, "'"));
  }
  return content;
}

// Iterates over the lines of a buffer; strips one trailing '\r'.
class LineCursor {
 public:
  explicit LineCursor(absl::string_view text) : text_(text) {}
  // Returns false at the end; otherwise sets *line and its 1-based number.
  bool Next(absl::string_view* line, int64_t* number) {
    if (pos_ >= text_.size()) return false;
    size_t nl = text_.find('\n', pos_);
    if (nl == absl::string_view::npos) nl = text_.size();
    *line = text_.substr(pos_, nl - pos_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    pos_ = nl + 1;
    *number = ++line_number_;
    return true;
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int64_t line_number_ = 0;
};

// Splits `line` on ',' into at most `max` trimmed fields; returns the total
// number of fields found (which may exceed `max`).
int SplitFields(absl::string_view line, absl::string_view* fields, int max) {
  int count = 0;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    const size_t stop = comma == absl::string_view::npos ? line.size() : comma;
    if (count < max) {
      fields[count] =
          absl::StripAsciiWhitespace(line.substr(start, stop - start));
    }
    ++count;
    if (comma == absl::string_view::npos) return count;
    start = comma + 1;
  }
}

// Checks a header line against `expected` names (each name may carry
// surrounding whitespace; a UTF-8 byte-order mark is tolerated).
template <size_t N>
absl::Status CheckHeader(absl::string_view file, bool present,
                         absl::string_view line,
                         const absl::string_view (&expected)[N]) {
  const std::string wanted = absl::StrJoin(expected, ",");
  if (!present) {
    return LineError(file, 1, absl::StrCat("missing header '", wanted, "'"));
  }
  absl::string_view text = line;
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");
  absl::string_view fields[N];
  const int count = SplitFields(text, fields, static_cast<int>(N));
  bool ok = count == static_cast<int>(N);
  for (size_t i = 0; ok && i < N; ++i) ok = fields[i] == expected[i];
  if (!ok) {
    return LineError(
        file, 1,
        absl::StrCat("header must be '", wanted, "', got '",
                     Shown(absl::StripAsciiWhitespace(text)), "'"));
  }
  return absl::OkStatus();
}

// Parses a whole field as a double. std::from_chars (locale-free, several
// times faster) handles the common case; strtod handles what from_chars
// rejects by design (a leading '+', out-of-range values, which become ±inf
// and are then reported as infinite). Hex floats ("0x1p3") are refused: no
// exchange writes them, and strtod would read one silently. Returns false
// unless the whole field is one decimal number.
bool ParseDouble(absl::string_view field, double* out) {
  if (field.empty()) return false;
  if (field.find_first_of("xX") != absl::string_view::npos) return false;
  const char* const last = field.data() + field.size();
  const auto [ptr, ec] = std::from_chars(field.data(), last, *out);
  if (ec == std::errc() && ptr == last) return true;
  char small[64];
  std::string large;
  const char* begin;
  if (field.size() < sizeof(small)) {
    std::memcpy(small, field.data(), field.size());
    small[field.size()] = '\0';
    begin = small;
  } else {
    large.assign(field.data(), field.size());
    begin = large.c_str();
  }
  char* end = nullptr;
  *out = std::strtod(begin, &end);
  return end == begin + field.size();
}

// "0x..." with an optional sign: what strtod would read as a hex float.
bool LooksHex(absl::string_view field) {
  if (!field.empty() && (field[0] == '+' || field[0] == '-')) {
    field.remove_prefix(1);
  }
  return field.size() > 1 && field[0] == '0' &&
         (field[1] == 'x' || field[1] == 'X');
}

// Parses field `name` of a row into *out; prices must be finite and > 0,
// the volume finite and >= 0.
absl::Status ParseBarValue(absl::string_view file, int64_t line,
                           absl::string_view name, absl::string_view field,
                           bool is_price, double* out) {
  if (field.empty())
    return LineError(file, line, absl::StrCat(name, " is empty"));
  if (!ParseDouble(field, out)) {
    return LineError(
        file, line,
        absl::StrCat(name, " '", Shown(field), "' is not a ",
                     LooksHex(field) ? "decimal number (hex floats are refused)"
                                     : "number"));
  }
  if (std::isnan(*out))
    return LineError(file, line, absl::StrCat(name, " is NaN"));
  if (std::isinf(*out)) {
    return LineError(file, line, absl::StrCat(name, " is infinite"));
  }
  if (is_price && !(*out > 0.0)) {
    return LineError(file, line,
                     absl::StrCat(name, " must be > 0, got ", Shown(field)));
  }
  if (!is_price && *out < 0.0) {
    return LineError(file, line,
                     absl::StrCat(name, " must be >= 0, got ", Shown(field)));
  }
  // Far above any real price or bar volume: the features computed from it
  // (squares, products, sums over windows) would overflow to infinity.
  constexpr double kMaxBarValue = 1e18;
  if (*out > kMaxBarValue) {
    return LineError(file, line,
                     absl::StrCat(name, " ", Shown(field),
                                  " is above 1e18 (larger than any real ",
                                  is_price ? "price" : "volume", ")"));
  }
  // Subnormal values (below ~2.2e-308) lose precision and turn into inf in
  // any ratio; no real price or quantity is that small.
  if (std::fpclassify(*out) == FP_SUBNORMAL) {
    return LineError(file, line,
                     absl::StrCat(name, " ", Shown(field),
                                  " is subnormal (too small to be real)"));
  }
  return absl::OkStatus();
}

// ---- Calendar arithmetic (Howard Hinnant's public-domain algorithms).

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2 ? 1 : 0);
}

int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// Reads exactly `n` digits at text[*pos]; advances *pos.
bool ReadDigits(absl::string_view text, size_t* pos, int n, int64_t* out) {
  if (*pos + n > text.size()) return false;
  int64_t value = 0;
  for (int i = 0; i < n; ++i) {
    const char c = text[*pos + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *pos += n;
  *out = value;
  return true;
}

bool AllZeroDigits(absl::string_view digits) {
  return std::all_of(digits.begin(), digits.end(),
                     [](char c) { return c == '0'; });
}

bool AllDigits(absl::string_view digits) {
  return !digits.empty() &&
         std::all_of(digits.begin(), digits.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

absl::StatusOr<int64_t> ParseIso(absl::string_view text) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad ISO-8601 timestamp '", Shown(text), "': ", why,
                     " (expected YYYY-MM-DD[THH:MM:SS[.000][Z|+HH:MM]])"));
  };
  size_t pos = 0;
  int64_t year, month, day, hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, &pos, 4, &year) || text[pos++] != '-' ||
      !ReadDigits(text, &pos, 2, &month) || pos >= text.size() ||
      text[pos++] != '-' || !ReadDigits(text, &pos, 2, &day)) {
    return bad("malformed date");
  }
  if (month < 1 || month > 12) return bad("month out of range");
  if (day < 1 || day > DaysInMonth(year, month)) return bad("day out of range");
  int64_t offset_seconds = 0;
  if (pos < text.size()) {
    const char sep = text[pos++];
    if (sep != 'T' && sep != 't' && sep != ' ') {
      return bad("expected 'T' or ' ' after the date");
    }
    if (!ReadDigits(text, &pos, 2, &hour) || pos >= text.size() ||
        text[pos++] != ':' || !ReadDigits(text, &pos, 2, &minute) ||
        pos >= text.size() || text[pos++] != ':' ||
        !ReadDigits(text, &pos, 2, &second)) {
      return bad("malformed time of day");
    }
    if (hour > 23 || minute > 59 || second > 59) {
      return bad("time of day out of range");
    }
    if (pos < text.size() && text[pos] == '.') {
      const size_t begin = ++pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
      const absl::string_view fraction = text.substr(begin, pos - begin);
      if (fraction.empty()) return bad("empty fraction of a second");
      if (!AllZeroDigits(fraction)) {
        return bad(
            "non-zero fraction of a second (bars open on whole seconds)");
      }
    }
    if (pos < text.size()) {
      const char zone = text[pos++];
      if (zone == 'Z' || zone == 'z') {
        // UTC.
      } else if (zone == '+' || zone == '-') {
        int64_t oh = 0, om = 0;
        if (!ReadDigits(text, &pos, 2, &oh)) return bad("malformed offset");
        if (pos < text.size()) {
          if (text[pos] == ':') ++pos;
          if (!ReadDigits(text, &pos, 2, &om)) return bad("malformed offset");
        }
        if (oh > 23 || om > 59) return bad("offset out of range");
        offset_seconds = (zone == '+' ? 1 : -1) * (oh * 3600 + om * 60);
      } else {
        return bad("unexpected characters after the time");
      }
      if (pos != text.size())
        return bad("unexpected characters after the zone");
    }
  }
  return DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 +
         second - offset_seconds;
}

absl::StatusOr<int64_t> ParseEpoch(absl::string_view text) {
  const size_t dot = text.find('.');
  const absl::string_view integer = text.substr(0, dot);
  const absl::string_view fraction = dot == absl::string_view::npos
                                         ? absl::string_view()
                                         : text.substr(dot + 1);
  if (!AllDigits(integer) ||
      (dot != absl::string_view::npos && !AllDigits(fraction))) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad timestamp '", Shown(text),
                     "': expected epoch seconds, epoch milliseconds or "
                     "ISO-8601"));
  }
  int64_t value = 0;
  const auto [end, ec] =
      std::from_chars(integer.data(), integer.data() + integer.size(), value);
  if (ec != std::errc() || end != integer.data() + integer.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad timestamp '", Shown(text), "': out of range"));
  }
  if (!AllZeroDigits(fraction)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad timestamp '", Shown(text),
                     "': non-zero fraction (bars open on whole seconds)"));
  }
  if (value >= kMillisThreshold) {
    if (value % 1000 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad timestamp '", Shown(text),
          "': epoch milliseconds (>= 1e11) that are not a whole second"));
    }
    return value / 1000;
  }
  return value;
}

// Empty if `path` is (or links to) a regular file; otherwise what it is,
// for the warning: "a directory", "a FIFO", "a symlink loop", ... Uses
// stat/lstat only.
std::string NonRegularKind(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) {
    if (ec.value() == ELOOP) return "a symlink loop";
    std::error_code link_ec;
    if (fs::is_symlink(fs::symlink_status(path, link_ec))) {
      if (ec.value() == ENOENT) return "a dangling symlink";
      return absl::StrCat("a symlink that cannot be followed: ", ec.message());
    }
    return absl::StrCat("cannot stat: ", ec.message());
  }
  switch (st.type()) {
    case fs::file_type::regular:
      return "";
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::not_found:
      return "a dangling symlink";
    default:
      return "not a regular file";
  }
}

// ---- One asset's bars as read from its file.

struct AssetSeries {
  std::string symbol;
  std::string file;            // file name, for messages
  std::vector<int64_t> ts;     // epoch seconds, strictly increasing
  std::vector<double> bars;    // 5 per bar, BarField order
  std::vector<int64_t> lines;  // source line of each bar
  int64_t blank_lines = 0;
};

int64_t FloorMod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + b : r;
}

absl::Status ReadBarFile(const std::string& path, int64_t interval,
                         AssetSeries* series) {
  ASSIGN_OR_RETURN(const std::string content, ReadWholeFile(path));
  const absl::string_view file = series->file;
  LineCursor cursor(content);
  absl::string_view line;
  int64_t number = 0;
  const bool has_header = cursor.Next(&line, &number);
  RETURN_IF_ERROR(CheckHeader(file, has_header, line, kBarHeader));

  const size_t estimate =
      static_cast<size_t>(std::count(content.begin(), content.end(), '\n'));
  series->ts.reserve(estimate);
  series->bars.reserve(estimate * kNumBarFields);
  series->lines.reserve(estimate);

  absl::string_view fields[kNumBarFields + 1];
  while (cursor.Next(&line, &number)) {
    if (absl::StripAsciiWhitespace(line).empty()) {
      ++series->blank_lines;
      continue;
    }
    const int count = SplitFields(line, fields, kNumBarFields + 1);
    if (count != kNumBarFields + 1) {
      return LineError(file, number,
                       absl::StrCat("expected 6 fields "
                                    "(timestamp,open,high,low,close,volume), "
                                    "got ",
                                    count));
    }
    auto ts = ParseTimestamp(fields[0]);
    if (!ts.ok()) return LineError(file, number, ts.status().message());
    double values[kNumBarFields];
    for (int f = 0; f < kNumBarFields; ++f) {
      const bool is_price = f != kVolume;
      RETURN_IF_ERROR(ParseBarValue(file, number,
                                    is_price ? kPriceNames[f] : "volume",
                                    fields[f + 1], is_price, &values[f]));
    }
    if (values[kHigh] < values[kLow]) {
      return LineError(file, number,
                       absl::StrCat("high ", Shown(fields[1 + kHigh]),
                                    " is below low ", Shown(fields[1 + kLow])));
    }
    // A bar's open and close are prices traded inside it, so they lie in
    // [low, high]; one outside is a corrupt or shifted row.
    for (const int f : {kOpen, kClose}) {
      if (values[f] < values[kLow] || values[f] > values[kHigh]) {
        return LineError(file, number,
                         absl::StrCat(kPriceNames[f], " ", Shown(fields[1 + f]),
                                      " is outside the bar's [low, high] = [",
                                      Shown(fields[1 + kLow]), ", ",
                                      Shown(fields[1 + kHigh]), "]"));
      }
    }
    const int64_t remainder = FloorMod(*ts, interval);
    if (remainder != 0) {
      return LineError(file, number,
                       absl::StrCat("timestamp ", *ts, " is not on the ",
                                    interval, "-second grid (", *ts, " % ",
                                    interval, " = ", remainder, ")"));
    }
    if (!series->ts.empty()) {
      const int64_t previous = series->ts.back();
      if (*ts == previous) {
        return LineError(
            file, number,
            absl::StrCat("duplicate timestamp ", *ts, " (same as line ",
                         series->lines.back(), ")"));
      }
      if (*ts < previous) {
        return LineError(
            file, number,
            absl::StrCat("timestamp ", *ts, " is not after previous ", previous,
                         " (line ", series->lines.back(), ")"));
      }
    }
    series->ts.push_back(*ts);
    series->bars.insert(series->bars.end(), values, values + kNumBarFields);
    series->lines.push_back(number);
  }
  if (series->ts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": no data rows (header only)"));
  }
  return absl::OkStatus();
}

// Adds up to kMaxDetailWarnings of `lines`, then one summary line.
void AddCappedWarnings(const std::vector<std::string>& lines,
                       absl::string_view what, CsvImportReport* report) {
  for (size_t i = 0; i < lines.size() && i < kMaxDetailWarnings; ++i) {
    report->warnings.push_back(lines[i]);
  }
  if (lines.size() > static_cast<size_t>(kMaxDetailWarnings)) {
    report->warnings.push_back(absl::StrCat(
        "... and ", lines.size() - kMaxDetailWarnings, " more ", what));
  }
}

std::string TimeForMessage(int64_t t) {
  return absl::StrCat(FormatTimestamp(t), " (", t, ")");
}

// A run of missing bars of one asset longer than max_ffill_bars.
struct LongGap {
  int asset;
  int64_t first_missing;  // epoch seconds
  int64_t last_missing;
  int64_t missing;      // bars
  int64_t line_before;  // line of the last bar before the gap
};

}  // namespace

absl::StatusOr<int64_t> ParseTimestamp(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return absl::InvalidArgumentError("timestamp is empty");
  if (text.size() >= 10 && text[4] == '-') return ParseIso(text);
  return ParseEpoch(text);
}

std::string FormatTimestamp(int64_t epoch_seconds) {
  int64_t days = epoch_seconds / 86400;
  int64_t rest = epoch_seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  int64_t y, m, d;
  CivilFromDays(days, &y, &m, &d);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, rest / 3600,
                         rest / 60 % 60, rest % 60);
}

absl::StatusOr<std::vector<AssetMeta>> ReadMinQtyFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string content, ReadWholeFile(path));
  const std::string file = fs::path(path).filename().string();
  LineCursor cursor(content);
  absl::string_view line;
  int64_t number = 0;
  const bool has_header = cursor.Next(&line, &number);
  RETURN_IF_ERROR(CheckHeader(file, has_header, line, kMinQtyHeader));
  std::vector<AssetMeta> result;
  std::map<std::string, int64_t, std::less<>> first_line;
  absl::string_view fields[3];
  while (cursor.Next(&line, &number)) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const int count = SplitFields(line, fields, 3);
    if (count != 2) {
      return LineError(file, number,
                       absl::StrCat("expected 2 fields (symbol,min_order_qty), "
                                    "got ",
                                    count));
    }
    if (fields[0].empty()) return LineError(file, number, "symbol is empty");
    const auto [it, inserted] = first_line.emplace(fields[0], number);
    if (!inserted) {
      return LineError(file, number,
                       absl::StrCat("duplicate symbol '", Shown(fields[0]),
                                    "' (first on line ", it->second, ")"));
    }
    AssetMeta meta;
    meta.symbol = std::string(fields[0]);
    RETURN_IF_ERROR(ParseBarValue(file, number, "min_order_qty", fields[1],
                                  /*is_price=*/false, &meta.min_order_qty));
    result.push_back(std::move(meta));
  }
  return result;
}

absl::StatusOr<Dataset> ImportCsvDirectory(const CsvImportOptions& options,
                                           CsvImportReport* report) {
  CsvImportReport local_report;
  if (report == nullptr) report = &local_report;
  *report = CsvImportReport();
  const int64_t interval = options.interval_seconds;
  if (interval <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("interval_seconds must be > 0, got ", interval));
  }
  if (options.max_ffill_bars < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_ffill_bars must be >= 0, got ", options.max_ffill_bars));
  }
  if (options.csv_dir.empty()) {
    return absl::InvalidArgumentError("csv_dir is empty");
  }

  // ---- List SYMBOL.csv files, sorted by symbol.
  std::error_code ec;
  const fs::file_status dir_status = fs::status(options.csv_dir, ec);
  if (!fs::exists(dir_status)) {
    return absl::NotFoundError(
        absl::StrCat("csv directory '", options.csv_dir, "' does not exist"));
  }
  if (!fs::is_directory(dir_status)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", options.csv_dir, "' is not a directory"));
  }
  std::vector<std::pair<std::string, std::string>> files;  // (symbol, path)
  std::vector<std::string> ignored;  // names not ending in ".csv"
  std::vector<std::string> skipped;  // "NAME (what it is)": *.csv, not a file
  for (fs::directory_iterator it(options.csv_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= 4 || !absl::EndsWith(name, ".csv")) {
      ignored.push_back(EscapeForMessage(name));
      continue;
    }
    // stat(), never open(): opening a FIFO would block the import forever.
    const std::string what = NonRegularKind(it->path());
    if (what.empty()) {
      const std::string symbol = name.substr(0, name.size() - 4);
      if (!IsSymbol(symbol)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", EscapeForMessage(name), "' in '",
            EscapeForMessage(options.csv_dir),
            "': a symbol (the file name before .csv) is 1-", kMaxSymbolBytes,
            " letters, digits, '_', '-', '.' or '+' (it names a column, is "
            "printed and stored comma-joined); rename the file"));
      }
      files.emplace_back(symbol, it->path().string());
    } else {
      skipped.push_back(absl::StrCat(EscapeForMessage(name), " (", what, ")"));
    }
  }
  if (ec) {
    return absl::Status(
        absl::ErrnoToStatusCode(ec.value()),
        absl::StrCat("cannot list '", options.csv_dir, "': ", ec.message()));
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no .csv files in '", options.csv_dir, "'"));
  }
  std::sort(files.begin(), files.end());
  std::sort(ignored.begin(), ignored.end());
  std::sort(skipped.begin(), skipped.end());
  if (!ignored.empty()) {
    report->warnings.push_back(absl::StrCat(
        "ignored ", ignored.size(),
        " entries not named *.csv: ", absl::StrJoin(ignored, ", ")));
  }
  if (!skipped.empty()) {
    report->warnings.push_back(
        absl::StrCat("skipped ", skipped.size(),
                     " *.csv entries that are not regular files (not read): ",
                     absl::StrJoin(skipped, ", ")));
  }
  const int n = static_cast<int>(files.size());

  // ---- Asset metadata, matched by symbol.
  Dataset dataset;
  dataset.assets.resize(n);
  for (int i = 0; i < n; ++i) dataset.assets[i].symbol = files[i].first;
  if (options.min_qty_file.empty()) {
    report->warnings.push_back(
        "no min_qty_file given: min_order_qty is 0 for every asset");
  } else {
    ASSIGN_OR_RETURN(const std::vector<AssetMeta> entries,
                     ReadMinQtyFile(options.min_qty_file));
    std::vector<bool> seen(n, false);
    for (const AssetMeta& entry : entries) {
      const auto it =
          std::lower_bound(files.begin(), files.end(), entry.symbol,
                           [](const auto& file, const std::string& s) {
                             return file.first < s;
                           });
      if (it == files.end() || it->first != entry.symbol) {
        return absl::InvalidArgumentError(absl::StrCat(
            options.min_qty_file, ": unknown symbol '", entry.symbol, "' (no ",
            entry.symbol, ".csv in '", options.csv_dir, "')"));
      }
      const int i = static_cast<int>(it - files.begin());
      dataset.assets[i].min_order_qty = entry.min_order_qty;
      seen[i] = true;
    }
    for (int i = 0; i < n; ++i) {
      if (!seen[i]) {
        report->warnings.push_back(
            absl::StrCat(dataset.assets[i].symbol, " is missing from ",
                         options.min_qty_file, ": min_order_qty is 0"));
      }
    }
  }

  // ---- Read and check every file.
  std::vector<AssetSeries> series(n);
  for (int i = 0; i < n; ++i) {
    series[i].symbol = files[i].first;
    series[i].file = files[i].first + ".csv";
    RETURN_IF_ERROR(ReadBarFile(files[i].second, interval, &series[i]));
    report->rows_read_per_asset.emplace_back(
        series[i].symbol, static_cast<int64_t>(series[i].ts.size()));
    if (series[i].blank_lines > 0) {
      report->warnings.push_back(absl::StrCat(
          series[i].file, ": skipped ", series[i].blank_lines, " blank lines"));
    }
  }

  // ---- Common range.
  int latest_first = 0, earliest_last = 0;
  for (int i = 1; i < n; ++i) {
    if (series[i].ts.front() > series[latest_first].ts.front())
      latest_first = i;
    if (series[i].ts.back() < series[earliest_last].ts.back())
      earliest_last = i;
  }
  const int64_t start = series[latest_first].ts.front();
  const int64_t end = series[earliest_last].ts.back();
  if (start > end) {
    std::vector<std::string> ranges;
    ranges.reserve(series.size());
    for (const AssetSeries& s : series) {
      ranges.push_back(absl::StrCat(s.symbol, " [",
                                    FormatTimestamp(s.ts.front()), ", ",
                                    FormatTimestamp(s.ts.back()), "]"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "mismatched assets: time ranges do not overlap: ",
        series[latest_first].symbol, " starts at ", TimeForMessage(start),
        " after ", series[earliest_last].symbol, " ends at ",
        TimeForMessage(end), "; ranges: ", absl::StrJoin(ranges, ", ")));
  }
  std::vector<size_t> cursor(n);
  for (int i = 0; i < n; ++i) {
    const std::vector<int64_t>& ts = series[i].ts;
    const size_t first_in =
        std::lower_bound(ts.begin(), ts.end(), start) - ts.begin();
    const size_t after_in =
        std::upper_bound(ts.begin(), ts.end(), end) - ts.begin();
    const int64_t before = static_cast<int64_t>(first_in);
    const int64_t after = static_cast<int64_t>(ts.size() - after_in);
    cursor[i] = first_in;
    if (before + after > 0) {
      report->rows_outside_common_range += before + after;
      report->warnings.push_back(
          absl::StrCat(series[i].file, ": trimmed ", before, " bars before ",
                       FormatTimestamp(start), " and ", after, " bars after ",
                       FormatTimestamp(end), " (outside the common range)"));
    }
  }

  // ---- Long gaps reaching into the common range.
  std::vector<LongGap> long_gaps;
  for (int i = 0; i < n; ++i) {
    const std::vector<int64_t>& ts = series[i].ts;
    for (size_t j = 1; j < ts.size(); ++j) {
      const int64_t missing = (ts[j] - ts[j - 1]) / interval - 1;
      if (missing <= options.max_ffill_bars) continue;
      const LongGap gap{i, ts[j - 1] + interval, ts[j] - interval, missing,
                        series[i].lines[j - 1]};
      if (gap.first_missing <= end && gap.last_missing >= start) {
        long_gaps.push_back(gap);
      }
    }
  }
  std::sort(long_gaps.begin(), long_gaps.end(),
            [](const LongGap& a, const LongGap& b) {
              return std::tie(a.first_missing, a.asset) <
                     std::tie(b.first_missing, b.asset);
            });
  const auto describe_gap = [&](const LongGap& gap) {
    return absl::StrCat(
        series[gap.asset].file, ": long gap of ", gap.missing,
        " missing bars from ", TimeForMessage(gap.first_missing), " to ",
        TimeForMessage(gap.last_missing), " (after line ", gap.line_before,
        ") exceeds max_ffill_bars=", options.max_ffill_bars);
  };
  if (!long_gaps.empty() && options.on_long_gap == LongGapPolicy::kFail) {
    return absl::InvalidArgumentError(
        absl::StrCat(describe_gap(long_gaps.front()), " (on_long_gap=fail)"));
  }
  report->long_gaps = static_cast<int64_t>(long_gaps.size());
  {
    std::vector<std::string> lines;
    lines.reserve(long_gaps.size());
    for (const LongGap& gap : long_gaps) {
      lines.push_back(describe_gap(gap) + "; its rows were removed");
    }
    AddCappedWarnings(lines, "long gaps", report);
  }

  // ---- Sweep the grid. Invariant while t <= end: cursor[i] is the first bar
  // of asset i at or after t (it exists because every asset's last bar is at
  // or after end), and if that bar is after t, a bar before t exists too
  // (every asset's first bar is at or before start).
  std::vector<int64_t> out_ts;
  std::vector<double> out_bars;
  std::vector<uint8_t> filled;  // T × n: 1 where the bar was forward-filled
  std::vector<Domain> domains;
  int64_t t = start;
  while (true) {
    bool available = true;
    int64_t resume = t;
    for (int i = 0; i < n; ++i) {
      const std::vector<int64_t>& ts = series[i].ts;
      const size_t c = cursor[i];
      if (ts[c] == t) continue;
      const int64_t missing = (ts[c] - ts[c - 1]) / interval - 1;
      if (missing > options.max_ffill_bars) {
        available = false;
        resume = std::max(resume, ts[c]);
      }
    }
    if (available) {
      const int64_t row = static_cast<int64_t>(out_ts.size());
      if (domains.empty() || out_ts.back() != t - interval) {
        domains.push_back(Domain{row, row});
      }
      domains.back().end = row + 1;
      out_ts.push_back(t);
      for (int i = 0; i < n; ++i) {
        const AssetSeries& s = series[i];
        size_t& c = cursor[i];
        if (s.ts[c] == t) {
          out_bars.insert(out_bars.end(), s.bars.begin() + c * kNumBarFields,
                          s.bars.begin() + (c + 1) * kNumBarFields);
          filled.push_back(0);
          ++c;
        } else {
          const double close = s.bars[(c - 1) * kNumBarFields + kClose];
          out_bars.insert(out_bars.end(), {close, close, close, close, 0.0});
          filled.push_back(1);
        }
      }
      if (t > end - interval) break;
      t += interval;
    } else {
      // Every asset's real bars in [t, resume) are removed with the gap.
      for (int i = 0; i < n; ++i) {
        const std::vector<int64_t>& ts = series[i].ts;
        size_t& c = cursor[i];
        while (c < ts.size() && ts[c] < resume && ts[c] <= end) {
          ++report->bars_dropped_in_long_gaps;
          ++c;
        }
      }
      if (resume > end) break;
      t = resume;
    }
  }

  // ---- Drop short domains, compacting rows in place.
  std::vector<std::string> dropped_lines;
  int64_t write = 0;
  std::vector<Domain> kept;
  for (const Domain& d : domains) {
    if (d.size() < options.min_domain_rows) {
      int64_t filled_here = 0;
      for (int64_t r = d.begin * n; r < d.end * n; ++r)
        filled_here += filled[r];
      ++report->short_domains_dropped;
      report->short_domain_rows_dropped += d.size();
      report->short_domain_bars_dropped += d.size() * n - filled_here;
      dropped_lines.push_back(absl::StrCat(
          "dropped domain ", FormatTimestamp(out_ts[d.begin]), " .. ",
          FormatTimestamp(out_ts[d.end - 1]), " (", d.size(),
          " rows < min_domain_rows=", options.min_domain_rows, ")"));
      continue;
    }
    if (write != d.begin) {
      std::copy(out_ts.begin() + d.begin, out_ts.begin() + d.end,
                out_ts.begin() + write);
      std::copy(out_bars.begin() + d.begin * n * kNumBarFields,
                out_bars.begin() + d.end * n * kNumBarFields,
                out_bars.begin() + write * n * kNumBarFields);
      std::copy(filled.begin() + d.begin * n, filled.begin() + d.end * n,
                filled.begin() + write * n);
    }
    kept.push_back(Domain{write, write + d.size()});
    write += d.size();
  }
  AddCappedWarnings(dropped_lines, "short domains dropped", report);
  out_ts.resize(write);
  out_bars.resize(write * n * kNumBarFields);
  filled.resize(write * n);

  std::vector<int64_t> filled_per_asset(n, 0);
  for (int64_t r = 0; r < write; ++r) {
    for (int i = 0; i < n; ++i) filled_per_asset[i] += filled[r * n + i];
  }
  for (int i = 0; i < n; ++i) {
    report->gaps_filled += filled_per_asset[i];
    report->filled_per_asset.emplace_back(series[i].symbol,
                                          filled_per_asset[i]);
  }
  report->domains = static_cast<int64_t>(kept.size());
  report->rows = write;
  if (write == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no aligned rows remain in '", options.csv_dir, "' (common range ",
        FormatTimestamp(start), " .. ", FormatTimestamp(end),
        "; long gaps: ", report->long_gaps, "; short-domain rows dropped: ",
        report->short_domain_rows_dropped, ")"));
  }

  dataset.interval_seconds = interval;
  dataset.timestamps = std::move(out_ts);
  dataset.bars = std::move(out_bars);
  dataset.domains = std::move(kept);
  dataset.gaps_filled = report->gaps_filled;
  dataset.source = "csv:" + options.csv_dir;
  return dataset;
}

std::string FormatCsvImportReport(const CsvImportReport& report) {
  std::string out = "rows read:\n";
  for (const auto& [symbol, rows] : report.rows_read_per_asset) {
    absl::StrAppend(&out, "  ", symbol, ": ", rows, "\n");
  }
  out += "bars forward-filled per asset:\n";
  for (const auto& [symbol, filled] : report.filled_per_asset) {
    absl::StrAppend(&out, "  ", symbol, ": ", filled, "\n");
  }
  absl::StrAppend(
      &out,
      "bars outside common range (trimmed): ", report.rows_outside_common_range,
      "\n", "bars forward-filled: ", report.gaps_filled, "\n",
      "long gaps: ", report.long_gaps, "\n",
      "bars dropped in long gaps: ", report.bars_dropped_in_long_gaps, "\n",
      "short domains dropped: ", report.short_domains_dropped, " (",
      report.short_domain_rows_dropped, " rows, ",
      report.short_domain_bars_dropped, " real bars)\n",
      "domains: ", report.domains, " (", report.rows, " rows)\n");
  if (!report.warnings.empty()) {
    out += "warnings:\n";
    for (const std::string& w : report.warnings) {
      absl::StrAppend(&out, "  ", w, "\n");
    }
  }
  return out;
}

}  // namespace ristretto::env
