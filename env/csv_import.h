// Imports a directory of per-asset OHLCV CSV files (one SYMBOL.csv per asset)
// into a Dataset of raw, time-aligned bars; features are computed later.
// Thread-safe: the functions keep no state; concurrent calls are independent.
//
// File format (one file per asset, the symbol is the file name minus ".csv"):
//   timestamp,open,high,low,close,volume          <- header, required
//   1704067200,42000.5,42100,41950.25,42050,12.5  <- one bar per line
// The header must be exactly those six names in that order (case-sensitive);
// whitespace around the line or a name, a trailing '\r' and a leading UTF-8
// byte-order mark are tolerated. Data
// fields may carry surrounding whitespace; lines that are empty or blank are
// skipped (and reported in a warning). Every other line is a bar and is
// checked; the first bad one fails the import with kInvalidArgument and the
// message "FILE:LINE: what is wrong" (FILE is the file name, LINE is
// 1-based, the header being line 1). Numbers are decimal (hex floats such
// as "0x1p3" are refused); prices must be finite, > 0 and normal (not
// subnormal), volumes finite, >= 0 and not subnormal; high >= low, and open
// and close must lie in [low, high]. Field text in messages has
// non-printable bytes escaped and is capped (EscapeForMessage).
//
// Alignment, in order:
//  1. Common range: [latest first timestamp, earliest last timestamp] over
//     all assets. Bars outside it are trimmed (rows_outside_common_range).
//  2. Each asset's series is scanned for gaps: k consecutive missing grid
//     times between two real bars. k <= max_ffill_bars: the missing bars are
//     forward-filled (open = high = low = close = previous close, volume 0).
//     k > max_ffill_bars: a long gap; kFail fails the import, kSplit removes
//     the grid times of the gap from the dataset (the real bars other assets
//     have there are counted in bars_dropped_in_long_gaps) and a domain
//     boundary falls there. Gap length is measured on the asset's whole file,
//     so a long gap straddling the common range's edge is still long.
//  3. Output rows are the grid times where every asset has a real or filled
//     bar; domains are maximal runs of consecutive grid times. Domains with
//     fewer than min_domain_rows rows are dropped and counted.
// Nothing is dropped silently: with R_i the data rows read for asset i, n
// assets and T output rows, sum_i R_i = rows_outside_common_range +
// bars_dropped_in_long_gaps + short_domain_bars_dropped + n·T - gaps_filled.
#ifndef RISTRETTO_ENV_CSV_IMPORT_H_
#define RISTRETTO_ENV_CSV_IMPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "env/dataset.h"

namespace ristretto::env {

// The default CsvImportOptions::max_ffill_bars (and `dataset import
// --max-ffill`): gaps of up to 3 consecutive missing bars are forward-filled.
// Why 3: exchanges write no candle for an interval without a trade, so
// minute and 5-minute data of all but the most liquid pairs has many
// 1-bar holes (and a few 2-3 bar ones) that are not outages but quiet
// markets; a flat price with volume 0 is exactly what happened there, and
// splitting at each of them cut real BTC-quoted data into hundreds of
// domains too short for an episode. Longer holes (at 5 minutes, more than
// 15 minutes without a single trade) are more likely maintenance or feed
// outages where the price did move: inventing a flat price there would
// hide a jump, so they still split the market into separate domains (or
// fail with LongGapPolicy::kFail). Pass 0 to never fill.
inline constexpr int64_t kDefaultMaxFfillBars = 3;

// What to do with a gap longer than CsvImportOptions::max_ffill_bars.
enum class LongGapPolicy {
  kSplit,  // remove the gap's rows and start a new domain after it
  kFail,   // fail the import with kInvalidArgument naming asset and times
};

// Options of ImportCsvDirectory.
struct CsvImportOptions {
  // Directory holding one SYMBOL.csv per asset. Only regular files (or
  // symlinks to them) whose name ends in ".csv" (lower case) are read; other
  // names are ignored and listed in a warning, and *.csv entries that are
  // not regular files (directory, FIFO, socket, device, dangling symlink,
  // symlink loop) are listed, with what they are, in a "skipped" warning.
  // Entries are only stat()ed before being chosen, so a FIFO is never
  // opened. Columns are ordered by symbol, ascending (byte order).
  std::string csv_dir;
  // Bar interval in seconds; required, > 0. Every timestamp must be a
  // multiple of it (timestamp % interval_seconds == 0).
  int64_t interval_seconds = 0;
  // Gaps of up to this many consecutive missing bars (per asset) are
  // forward-filled; >= 0. 0 means never fill. Default kDefaultMaxFfillBars.
  int64_t max_ffill_bars = kDefaultMaxFfillBars;
  // Policy for gaps longer than max_ffill_bars.
  LongGapPolicy on_long_gap = LongGapPolicy::kSplit;
  // Optional CSV with header `symbol,min_order_qty` and one line per symbol
  // (see ReadMinQtyFile). Empty: every asset gets min_order_qty 0 and the
  // report gets one warning.
  std::string min_qty_file;
  // Domains with fewer rows than this are dropped and counted in
  // short_domain_rows_dropped. Values <= 1 keep every domain.
  int64_t min_domain_rows = 2;
};

// Everything the import did, for `ristretto dataset import/info` output.
// Bar counts are per asset and summed over assets; row counts are grid times
// (one row holds one bar of every asset).
struct CsvImportReport {
  // (symbol, data rows read from its file), in column (symbol) order.
  std::vector<std::pair<std::string, int64_t>> rows_read_per_asset;
  // (symbol, bars forward-filled in the returned dataset), column order;
  // the counts sum to gaps_filled.
  std::vector<std::pair<std::string, int64_t>> filled_per_asset;
  // Bars forward-filled that are in the returned dataset (= its gaps_filled).
  int64_t gaps_filled = 0;
  // Contiguous domains (and rows) of the returned dataset, before the
  // feature warm-up.
  int64_t domains = 0;
  int64_t rows = 0;
  // Gaps longer than max_ffill_bars that reach into the common range, one
  // per (asset, gap). Under kSplit each removed its grid times from the
  // dataset (a domain boundary, or a shortened edge if at the range's end).
  int64_t long_gaps = 0;
  // Real bars of any asset inside the common range that were removed
  // because at least one asset was in a long gap at that time.
  int64_t bars_dropped_in_long_gaps = 0;
  // Real bars before the latest first timestamp or after the earliest last
  // timestamp over all assets, trimmed.
  int64_t rows_outside_common_range = 0;
  // Rows (grid times) removed with domains shorter than min_domain_rows.
  int64_t short_domain_rows_dropped = 0;
  // Real (not forward-filled) bars in those rows.
  int64_t short_domain_bars_dropped = 0;
  // Domains removed for being shorter than min_domain_rows.
  int64_t short_domains_dropped = 0;
  // Human-readable notes: trimmed ranges, long gaps,
  // dropped domains, missing min-qty entries, ignored files, blank lines.
  std::vector<std::string> warnings;
};

// Imports options.csv_dir into a Dataset with assets (sorted by symbol, with
// min_order_qty), interval_seconds, timestamps, bars, domains, gaps_filled
// and source = "csv:" + csv_dir; feature_names and features are left empty.
// `report` (may be null) is reset and filled; on error it holds what was
// counted before the failure.
// Errors: kNotFound if csv_dir or min_qty_file does not exist;
// kInvalidArgument for bad options, a directory without .csv files, a file
// without data rows, any bad line ("FILE:LINE: ..."), assets whose time
// ranges do not overlap ("mismatched assets: ..."), a long gap under kFail,
// a bad min-qty file or one naming an unknown symbol, or no rows left after
// alignment; other codes (from errno) when a file cannot be read.
absl::StatusOr<Dataset> ImportCsvDirectory(const CsvImportOptions& options,
                                           CsvImportReport* report);

// Parses one timestamp into epoch seconds (UTC). Surrounding whitespace is
// ignored. Accepted forms:
//  * Epoch integer: digits only. Values >= 1e11 (100000000000) are epoch
//    milliseconds, smaller ones epoch seconds. (1e11 s is the year 5138 and
//    1e11 ms is 1973-03-03, so real data is never ambiguous.) Milliseconds
//    must be a whole second.
//  * Epoch decimal: digits '.' digits, same seconds/milliseconds rule on the
//    integer part; the fraction must be zero (e.g. "1704067200.000").
//  * ISO-8601: YYYY-MM-DD, optionally followed by 'T' or ' ' and HH:MM:SS,
//    an optional fraction ".ddd" (must be zero), and an optional zone: 'Z',
//    or ±HH:MM, ±HHMM, ±HH. No zone means UTC. A date alone is midnight UTC.
// Sub-second times are rejected rather than rounded, so no two bars can
// silently collapse onto one second.
// Errors: kInvalidArgument naming the text and the problem.
absl::StatusOr<int64_t> ParseTimestamp(absl::string_view text);

// Formats epoch seconds as ISO-8601 UTC, "2024-01-02T03:04:05Z".
std::string FormatTimestamp(int64_t epoch_seconds);

// Reads a min-order-quantity file: header `symbol,min_order_qty` (same
// tolerance as the bar header), then one `SYMBOL,QTY` line per asset, QTY a
// finite number >= 0 in coins; blank lines are skipped. Returns the entries
// in file order.
// Errors: kNotFound if the file does not exist; kInvalidArgument
// ("FILE:LINE: ...") for a bad header, field count, empty or duplicate
// symbol, or bad quantity; other codes (from errno) on read failure.
absl::StatusOr<std::vector<AssetMeta>> ReadMinQtyFile(const std::string& path);

// Renders a report as indented lines (counters, then warnings) for the CLI.
std::string FormatCsvImportReport(const CsvImportReport& report);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_CSV_IMPORT_H_
