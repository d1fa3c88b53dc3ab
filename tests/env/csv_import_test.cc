#include "env/csv_import.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::env {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr int64_t kBase = 1704067200;  // 2024-01-01T00:00:00Z
constexpr int64_t kMinute = 60;
constexpr char kHeader[] = "timestamp,open,high,low,close,volume\n";

// A bar whose close identifies asset and time: close = price + k.
std::string Row(int64_t k, double price = 100.0) {
  const double c = price + static_cast<double>(k);
  return absl::StrCat(kBase + k * kMinute, ",", c - 0.5, ",", c + 1, ",", c - 1,
                      ",", c, ",", 10 + k, "\n");
}

// A file with bars at the given grid indices (k = minutes after kBase).
std::string Bars(const std::vector<int64_t>& ks, double price = 100.0) {
  std::string out = kHeader;
  for (int64_t k : ks) out += Row(k, price);
  return out;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t k = begin; k < end; ++k) out.push_back(k);
  return out;
}

std::vector<int64_t> Concat(std::vector<int64_t> a,
                            const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool AnyWarningContains(const CsvImportReport& report, absl::string_view s) {
  for (const std::string& w : report.warnings) {
    if (absl::StrContains(w, s)) return true;
  }
  return false;
}

// Sum over assets of rows read must equal every bar accounted for.
void ExpectEveryBarAccountedFor(const Dataset& d, const CsvImportReport& r) {
  int64_t read = 0;
  for (const auto& [symbol, rows] : r.rows_read_per_asset) read += rows;
  EXPECT_EQ(read, r.rows_outside_common_range + r.bars_dropped_in_long_gaps +
                      r.short_domain_bars_dropped +
                      d.num_rows() * d.num_assets() - r.gaps_filled);
}

class CsvImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/csv_import_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes `content` to dir_/name (creating sub-directories); returns path.
  std::string Write(const std::string& name, const std::string& content) {
    const fs::path path = fs::path(dir_) / name;
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << content;
    return path.string();
  }

  CsvImportOptions Options(const std::string& sub = "") const {
    CsvImportOptions options;
    options.csv_dir = sub.empty() ? dir_ : dir_ + "/" + sub;
    options.interval_seconds = kMinute;
    return options;
  }

  // Imports dir_ with default options and returns the error.
  absl::Status ImportError() {
    CsvImportReport report;
    return ImportCsvDirectory(Options(), &report).status();
  }

  std::string dir_;
};

// ---- ParseTimestamp.

TEST(CsvImportParseTimestampTest,
     EpochSecondsMillisecondsAndIsoGiveTheSameInstant) {
  for (const char* text :
       {"1704164645", "1704164645000", "1704164645.0", "1704164645000.000",
        "2024-01-02T03:04:05Z", "2024-01-02 03:04:05", "2024-01-02t03:04:05z",
        "2024-01-02T03:04:05.000Z", "  1704164645 "}) {
    SCOPED_TRACE(text);
    auto ts = ParseTimestamp(text);
    ASSERT_TRUE(ts.ok()) << ts.status();
    EXPECT_EQ(*ts, 1704164645);
  }
}

TEST(CsvImportParseTimestampTest, IsoOffsetsAreSubtractedToGiveUtc) {
  for (const char* text :
       {"2024-01-02T05:04:05+02:00", "2024-01-02T05:04:05+0200",
        "2024-01-02T05:04:05+02", "2024-01-01T22:04:05-05:00",
        "2024-01-02T08:34:05.00+05:30", "2024-01-02T03:04:05+00:00"}) {
    SCOPED_TRACE(text);
    auto ts = ParseTimestamp(text);
    ASSERT_TRUE(ts.ok()) << ts.status();
    EXPECT_EQ(*ts, 1704164645);
  }
}

TEST(CsvImportParseTimestampTest,
     IntegersFromOneHundredBillionAreMilliseconds) {
  EXPECT_EQ(*ParseTimestamp("99999999999"), 99999999999);
  EXPECT_EQ(*ParseTimestamp("100000000000"), 100000000);
  EXPECT_EQ(*ParseTimestamp("0"), 0);
}

TEST(CsvImportParseTimestampTest, DatesAloneAreMidnightUtcAndLeapDaysExist) {
  EXPECT_EQ(*ParseTimestamp("1970-01-01"), 0);
  EXPECT_EQ(*ParseTimestamp("2024-01-01"), kBase);
  EXPECT_EQ(*ParseTimestamp("2024-02-29T00:00:00Z"), kBase + 59 * 86400);
  EXPECT_EQ(*ParseTimestamp("1969-12-31T23:59:59Z"), -1);
}

TEST(CsvImportParseTimestampTest,
     SubSecondAndMalformedTimesAreInvalidArguments) {
  for (const char* text :
       {"", "abc", "-5", "1e9", "1704164645.5", "1704164645123", "17041.",
        "99999999999999999999", "2024-01-02T03:04:05.5Z", "2024-13-01",
        "2024-02-30", "2023-02-29", "2024-01-02T03:04", "2024-01-02T24:00:00",
        "2024-01-02T03:04:60", "2024-01-02T03:04:05+25:00",
        "2024-01-02T03:04:05Zjunk", "2024-01-02X03:04:05", "2024/01/02"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(ParseTimestamp(text).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_THAT(std::string(ParseTimestamp("1704164645123").status().message()),
              HasSubstr("not a whole second"));
  EXPECT_THAT(std::string(ParseTimestamp("2024-02-30").status().message()),
              HasSubstr("day out of range"));
}

TEST(CsvImportParseTimestampTest, FormatTimestampWritesIsoUtc) {
  EXPECT_EQ(FormatTimestamp(1704164645), "2024-01-02T03:04:05Z");
  EXPECT_EQ(FormatTimestamp(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp(-1), "1969-12-31T23:59:59Z");
}

// ---- Import: formats and layout.

TEST_F(CsvImportTest, ImportsAssetsInSymbolOrderWithExactBars) {
  Write("ZEC.csv", Bars(Range(0, 3), 30));
  Write("BTC.csv", Bars(Range(0, 3), 10));
  Write("ETH.csv", Bars(Range(0, 3), 20));
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->num_assets(), 3);
  EXPECT_EQ(dataset->assets[0].symbol, "BTC");
  EXPECT_EQ(dataset->assets[1].symbol, "ETH");
  EXPECT_EQ(dataset->assets[2].symbol, "ZEC");
  EXPECT_EQ(dataset->interval_seconds, 60);
  EXPECT_THAT(dataset->timestamps, ElementsAre(kBase, kBase + 60, kBase + 120));
  ASSERT_EQ(dataset->bars.size(), 3u * 3 * 5);
  // Row 2 of ETH: close 20 + 2 = 22.
  EXPECT_EQ(dataset->bar(2, 1, kOpen), 21.5);
  EXPECT_EQ(dataset->bar(2, 1, kHigh), 23.0);
  EXPECT_EQ(dataset->bar(2, 1, kLow), 21.0);
  EXPECT_EQ(dataset->bar(2, 1, kClose), 22.0);
  EXPECT_EQ(dataset->bar(2, 1, kVolume), 12.0);
  EXPECT_EQ(dataset->close(0, 0), 10.0);
  EXPECT_EQ(dataset->close(1, 2), 31.0);
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 3}));
  EXPECT_TRUE(dataset->feature_names.empty());
  EXPECT_TRUE(dataset->features.empty());
  EXPECT_EQ(dataset->gaps_filled, 0);
  EXPECT_EQ(dataset->source, "csv:" + dir_);
  EXPECT_THAT(report.rows_read_per_asset,
              ElementsAre(Pair("BTC", 3), Pair("ETH", 3), Pair("ZEC", 3)));
  EXPECT_EQ(report.rows_outside_common_range, 0);
  EXPECT_EQ(report.long_gaps, 0);
}

TEST_F(CsvImportTest, ThreeTimestampFormsGiveIdenticalDatasets) {
  const char* seconds[] = {"1704067200", "1704067260", "1704067320"};
  const char* millis[] = {"1704067200000", "1704067260000", "1704067320000"};
  const char* iso[] = {"2024-01-01T00:00:00Z", "2024-01-01 00:01:00",
                       "2024-01-01T00:02:00.000Z"};
  const char* const* forms[] = {seconds, millis, iso};
  std::vector<Dataset> datasets;
  for (int f = 0; f < 3; ++f) {
    const std::string sub = absl::StrCat("form", f);
    for (const char* symbol : {"BTC", "ETH"}) {
      std::string csv = kHeader;
      for (int k = 0; k < 3; ++k) {
        absl::StrAppend(&csv, forms[f][k], ",1.5,2.5,1.25,2,", k, "\n");
      }
      Write(absl::StrCat(sub, "/", symbol, ".csv"), csv);
    }
    CsvImportReport report;
    auto dataset = ImportCsvDirectory(Options(sub), &report);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    datasets.push_back(*std::move(dataset));
  }
  for (int f = 1; f < 3; ++f) {
    SCOPED_TRACE(f);
    EXPECT_EQ(datasets[f].timestamps, datasets[0].timestamps);
    EXPECT_EQ(datasets[f].bars, datasets[0].bars);
    EXPECT_EQ(datasets[f].domains, datasets[0].domains);
  }
  EXPECT_THAT(datasets[0].timestamps,
              ElementsAre(kBase, kBase + 60, kBase + 120));
}

TEST_F(CsvImportTest, IsoTimestampsWithOffsetsAlignWithUtcOnes) {
  Write("BTC.csv", std::string(kHeader) +
                       "2024-01-01T00:00:00Z,1,1,1,1,1\n"
                       "2024-01-01T00:01:00Z,2,2,2,2,1\n");
  Write("ETH.csv", std::string(kHeader) +
                       "2024-01-01T02:00:00+02:00,3,3,3,3,1\n"
                       "2023-12-31T19:01:00-05:00,4,4,4,4,1\n");
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT(dataset->timestamps, ElementsAre(kBase, kBase + 60));
  EXPECT_EQ(dataset->close(0, 1), 3.0);
  EXPECT_EQ(dataset->close(1, 1), 4.0);
  EXPECT_EQ(report.rows_outside_common_range, 0);
  EXPECT_EQ(report.gaps_filled, 0);
}

TEST_F(CsvImportTest, AcceptsHeaderWithWhitespaceByteOrderMarkAndCrlf) {
  Write("BTC.csv",
        "\xEF\xBB\xBF  timestamp, open ,high,low,close,volume \r\n"
        "1704067200, 1,2,0.5,1.5 ,3\r\n1704067260,1,2,0.5,1.5,3\r\n");
  auto dataset = ImportCsvDirectory(Options(), nullptr);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(dataset->num_rows(), 2);
  EXPECT_EQ(dataset->close(0, 0), 1.5);
}

TEST_F(CsvImportTest, BlankLinesAreSkippedAndReported) {
  Write("BTC.csv", std::string(kHeader) + Row(0) + "\n   \n" + Row(1) + "\n");
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(dataset->num_rows(), 2);
  EXPECT_TRUE(AnyWarningContains(report, "BTC.csv: skipped 3 blank lines"));
}

TEST_F(CsvImportTest, IgnoresEntriesNotNamedCsvAndSaysSo) {
  Write("BTC.csv", Bars(Range(0, 2)));
  Write("README.md", "notes");
  Write("ETH.CSV", Bars(Range(0, 2)));
  Write("notes\x01.txt", "");
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->num_assets(), 1);
  EXPECT_TRUE(AnyWarningContains(
      report,
      "ignored 3 entries not named *.csv: ETH.CSV, README.md, notes\\x01.txt"));
}

// *.csv entries that are not regular files are named with what they are,
// and a FIFO is never opened (opening one with no writer blocks forever,
// so a hang here is the failure).
TEST_F(CsvImportTest, SkipsCsvEntriesThatAreNotRegularFilesAndSaysWhatTheyAre) {
  Write("BTC.csv", Bars(Range(0, 2)));
  Write("sub.csv/x.txt", "");
  ASSERT_EQ(mkfifo((dir_ + "/pipe.csv").c_str(), 0600), 0);
  fs::create_symlink("loop.csv", dir_ + "/loop.csv");
  fs::create_symlink("missing", dir_ + "/dangling.csv");
  fs::create_symlink("BTC.csv", dir_ + "/LINK.csv");  // followed: imported
  // A unix socket (sun_path is short: bind from inside the directory).
  const int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = dir_ + "/sock.csv";
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, sock_path.c_str(), sock_path.size() + 1);
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  close(sock);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->num_assets(), 2);
  EXPECT_EQ(dataset->assets[0].symbol, "BTC");
  EXPECT_EQ(dataset->assets[1].symbol, "LINK");
  EXPECT_TRUE(AnyWarningContains(
      report,
      "skipped 5 *.csv entries that are not regular files (not read): "
      "dangling.csv (a dangling symlink), loop.csv (a symlink loop), "
      "pipe.csv (a FIFO), sock.csv (a socket), sub.csv (a directory)"))
      << absl::StrJoin(report.warnings, "\n");
  EXPECT_FALSE(AnyWarningContains(report, "not named *.csv"));
}

// ---- Alignment.

TEST_F(CsvImportTest, TrimsBarsOutsideTheCommonRangeAndCountsThem) {
  Write("BTC.csv", Bars(Range(0, 10)));  // minutes 0..9
  Write("ETH.csv", Bars(Range(3, 14)));  // minutes 3..13
  Write("SOL.csv", Bars(Range(1, 12)));  // minutes 1..11
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  // Common range: minutes 3..9.
  ASSERT_EQ(dataset->num_rows(), 7);
  EXPECT_EQ(dataset->timestamps.front(), kBase + 3 * kMinute);
  EXPECT_EQ(dataset->timestamps.back(), kBase + 9 * kMinute);
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 7}));
  // BTC: 3 before; ETH: 4 after; SOL: 2 before + 2 after.
  EXPECT_EQ(report.rows_outside_common_range, 11);
  EXPECT_TRUE(AnyWarningContains(report, "ETH.csv: trimmed 0 bars before"));
  EXPECT_TRUE(AnyWarningContains(report, "SOL.csv: trimmed 2 bars before"));
  EXPECT_EQ(dataset->close(0, 0), 103.0);
  ExpectEveryBarAccountedFor(*dataset, report);
}

TEST_F(CsvImportTest, ForwardFillsGapsUpToTheLimit) {
  Write("BTC.csv", Bars(Range(0, 10)));
  // ETH misses minutes 3, 4 (two bars) and 7 (one bar).
  Write("ETH.csv", Bars({0, 1, 2, 5, 6, 8, 9}, 200));
  CsvImportOptions options = Options();
  options.max_ffill_bars = 2;
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(options, &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->num_rows(), 10);
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 10}));
  EXPECT_EQ(report.gaps_filled, 3);
  EXPECT_EQ(dataset->gaps_filled, 3);
  EXPECT_EQ(report.long_gaps, 0);
  for (int64_t t : {3, 4}) {
    SCOPED_TRACE(t);
    for (BarField f : {kOpen, kHigh, kLow, kClose}) {
      EXPECT_EQ(dataset->bar(t, 1, f), 202.0);  // close of minute 2
    }
    EXPECT_EQ(dataset->bar(t, 1, kVolume), 0.0);
  }
  EXPECT_EQ(dataset->bar(7, 1, kClose), 206.0);
  EXPECT_EQ(dataset->bar(7, 1, kVolume), 0.0);
  EXPECT_EQ(dataset->bar(5, 1, kOpen), 204.5);   // real bar again
  EXPECT_EQ(dataset->bar(3, 0, kClose), 103.0);  // BTC untouched
  EXPECT_THAT(report.filled_per_asset,
              ElementsAre(std::make_pair(std::string("BTC"), int64_t{0}),
                          std::make_pair(std::string("ETH"), int64_t{3})));
  ExpectEveryBarAccountedFor(*dataset, report);
}

// Exchange data: no candle where nothing traded. By default 1-3 missing
// bars are quiet markets (forward-filled, volume 0); 4 or more split.
TEST_F(CsvImportTest, DefaultFillsUpToThreeBarsAndSplitsLongerGaps) {
  EXPECT_EQ(CsvImportOptions().max_ffill_bars, 3);
  EXPECT_EQ(kDefaultMaxFfillBars, 3);
  Write("BTC.csv", Bars(Range(0, 30)));
  // ETH misses 3 (1 bar), 10..12 (3 bars: filled) and 20..23 (4: split).
  Write("ETH.csv",
        Bars(Concat(Concat(Concat(Range(0, 3), Range(4, 10)), Range(13, 20)),
                    Range(24, 30)),
             200));
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 20}, Domain{20, 26}));
  EXPECT_EQ(dataset->timestamps[20], kBase + 24 * kMinute);
  EXPECT_EQ(report.gaps_filled, 4);
  EXPECT_EQ(report.long_gaps, 1);
  EXPECT_EQ(report.bars_dropped_in_long_gaps, 4);  // BTC at 20..23
  EXPECT_EQ(report.domains, 2);
  EXPECT_EQ(report.rows, 26);
  EXPECT_THAT(report.filled_per_asset,
              ElementsAre(std::make_pair(std::string("BTC"), int64_t{0}),
                          std::make_pair(std::string("ETH"), int64_t{4})));
  for (int64_t t : {10, 11, 12}) {
    EXPECT_EQ(dataset->bar(t, 1, kClose), 209.0);  // close of minute 9
    EXPECT_EQ(dataset->bar(t, 1, kVolume), 0.0);
  }
  const std::string text = FormatCsvImportReport(report);
  EXPECT_THAT(
      text, HasSubstr("bars forward-filled per asset:\n  BTC: 0\n  ETH: 4\n"));
  EXPECT_THAT(text, HasSubstr("bars forward-filled: 4\n"));
  EXPECT_THAT(text, HasSubstr("domains: 2 (26 rows)\n"));
  ExpectEveryBarAccountedFor(*dataset, report);
}

TEST_F(CsvImportTest, GapsLongerThanTheLimitSplitIntoDomains) {
  Write("BTC.csv", Bars(Range(0, 20)));
  // ETH misses 5..7 (three bars: long) and 12 (one bar: filled).
  Write("ETH.csv",
        Bars(Concat(Concat(Range(0, 5), Range(8, 12)), Range(13, 20))));
  CsvImportOptions options = Options();
  options.max_ffill_bars = 1;
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(options, &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 5}, Domain{5, 17}));
  EXPECT_EQ(dataset->timestamps[4], kBase + 4 * kMinute);
  EXPECT_EQ(dataset->timestamps[5], kBase + 8 * kMinute);
  EXPECT_EQ(dataset->timestamps[16], kBase + 19 * kMinute);
  EXPECT_EQ(report.long_gaps, 1);
  EXPECT_EQ(report.bars_dropped_in_long_gaps, 3);  // BTC at 5, 6, 7
  EXPECT_EQ(report.gaps_filled, 1);
  EXPECT_TRUE(AnyWarningContains(
      report, "ETH.csv: long gap of 3 missing bars from 2024-01-01T00:05:00Z"));
  ExpectEveryBarAccountedFor(*dataset, report);
}

TEST_F(CsvImportTest, LongGapInEveryAssetAtOnceSplitsWithoutDroppingBars) {
  const auto ks = Concat(Range(0, 5), Range(8, 20));
  Write("BTC.csv", Bars(ks));
  Write("ETH.csv", Bars(ks));
  CsvImportOptions options = Options();
  options.max_ffill_bars = 2;
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(options, &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 5}, Domain{5, 17}));
  EXPECT_EQ(report.long_gaps, 2);
  EXPECT_EQ(report.bars_dropped_in_long_gaps, 0);
  EXPECT_EQ(report.gaps_filled, 0);
  ExpectEveryBarAccountedFor(*dataset, report);
}

TEST_F(CsvImportTest, LongGapAcrossTheCommonRangeStartRemovesTheEdgeRows) {
  Write("BTC.csv", Bars(Concat({0}, Range(10, 20))));  // misses 1..9
  Write("ETH.csv", Bars(Range(5, 20)));
  CsvImportOptions options = Options();
  options.max_ffill_bars = 2;
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(options, &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 10}));
  EXPECT_EQ(dataset->timestamps.front(), kBase + 10 * kMinute);
  EXPECT_EQ(report.rows_outside_common_range, 1);  // BTC at 0
  EXPECT_EQ(report.long_gaps, 1);
  EXPECT_EQ(report.bars_dropped_in_long_gaps, 5);  // ETH at 5..9
  ExpectEveryBarAccountedFor(*dataset, report);
}

TEST_F(CsvImportTest, DomainsShorterThanTheMinimumAreDroppedAndCounted) {
  Write("BTC.csv", Bars(Range(0, 20)));
  // ETH: 0..4, 8, 12..19 -> candidate domains of 5, 1 and 8 rows.
  Write("ETH.csv", Bars(Concat(Concat(Range(0, 5), {8}), Range(12, 20))));
  CsvImportOptions options = Options();
  options.max_ffill_bars = 1;
  options.min_domain_rows = 2;
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(options, &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT(dataset->domains, ElementsAre(Domain{0, 5}, Domain{5, 13}));
  EXPECT_EQ(dataset->timestamps[5], kBase + 12 * kMinute);
  EXPECT_EQ(report.long_gaps, 2);
  EXPECT_EQ(report.bars_dropped_in_long_gaps, 6);  // BTC at 5-7, 9-11
  EXPECT_EQ(report.short_domains_dropped, 1);
  EXPECT_EQ(report.short_domain_rows_dropped, 1);
  EXPECT_EQ(report.short_domain_bars_dropped, 2);
  EXPECT_TRUE(AnyWarningContains(
      report, "dropped domain 2024-01-01T00:08:00Z .. 2024-01-01T00:08:00Z"));
  ExpectEveryBarAccountedFor(*dataset, report);
}

TEST_F(CsvImportTest, FailPolicyNamesTheAssetAndTimeRangeOfALongGap) {
  Write("BTC.csv", Bars(Range(0, 20)));
  Write("ETH.csv", Bars(Concat(Range(0, 5), Range(8, 20))));
  CsvImportOptions options = Options();
  options.on_long_gap = LongGapPolicy::kFail;
  options.max_ffill_bars = 3;  // the 3-bar gap is filled
  ASSERT_TRUE(ImportCsvDirectory(options, nullptr).ok());
  options.max_ffill_bars = 2;
  auto dataset = ImportCsvDirectory(options, nullptr);
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(dataset.status().message()),
              HasSubstr("ETH.csv: long gap of 3 missing bars from "
                        "2024-01-01T00:05:00Z (1704067500) to "
                        "2024-01-01T00:07:00Z (1704067620) (after line 6) "
                        "exceeds max_ffill_bars=2 (on_long_gap=fail)"));
}

TEST_F(CsvImportTest, AssetsWhoseRangesDoNotOverlapAreMismatched) {
  Write("BTC.csv", Bars(Range(0, 5)));
  Write("ETH.csv", Bars(Range(10, 15)));
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("mismatched assets: time ranges do not overlap: ETH "
                        "starts at 2024-01-01T00:10:00Z (1704067800) after "
                        "BTC ends at 2024-01-01T00:04:00Z (1704067440)"));
}

TEST_F(CsvImportTest, NoRowsLeftAfterLongGapsIsInvalid) {
  Write("BTC.csv", Bars({0, 10}));
  Write("ETH.csv", Bars(Range(0, 11)));
  CsvImportOptions options = Options();
  options.min_domain_rows = 2;
  auto dataset = ImportCsvDirectory(options, nullptr);
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(dataset.status().message()),
              HasSubstr("no aligned rows remain"));
}

// ---- Malformed input: every error names FILE:LINE.

TEST_F(CsvImportTest, RowWithWrongFieldCountIsRejected) {
  Write("BTC.csv", std::string(kHeader) + Row(0) + "1704067260,1,2,0.5,1.5\n");
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("BTC.csv:3: expected 6 fields "
                        "(timestamp,open,high,low,close,volume), got 5"));
}

TEST_F(CsvImportTest, UnparsableNumberIsRejected) {
  Write("BTC.csv", std::string(kHeader) + "1704067200,1,abc,0.5,1.5,3\n");
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("BTC.csv:2: high 'abc' is not a number"));
}

TEST_F(CsvImportTest, EmptyFieldIsRejected) {
  Write("BTC.csv", std::string(kHeader) + "1704067200,1,2,,1.5,3\n");
  EXPECT_THAT(std::string(ImportError().message()),
              HasSubstr("BTC.csv:2: low is empty"));
}

TEST_F(CsvImportTest, UnparsableTimestampIsRejected) {
  Write("BTC.csv", std::string(kHeader) + Row(0) + "yesterday,1,2,0.5,1.5,3\n");
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("BTC.csv:3: bad timestamp 'yesterday'"));
}

TEST_F(CsvImportTest, NanInfiniteNegativeAndZeroPricesAreRejected) {
  const struct {
    const char* row;
    const char* message;
  } cases[] = {
      {"1704067200,1,2,0.5,nan,3", "BTC.csv:3: close is NaN"},
      {"1704067200,inf,2,0.5,1,3", "BTC.csv:3: open is infinite"},
      {"1704067200,1,2,-1,1,3", "BTC.csv:3: low must be > 0, got -1"},
      {"1704067200,0,2,0.5,1,3", "BTC.csv:3: open must be > 0, got 0"},
      {"1704067200,1,1e999,0.5,1,3", "BTC.csv:3: high is infinite"},
      {"1704067200,1e308,1e308,1e308,1e308,3",
       "BTC.csv:3: open 1e308 is above 1e18 (larger than any real price)"},
      {"1704067200,1,2,0.5,1,1e19",
       "BTC.csv:3: volume 1e19 is above 1e18 (larger than any real volume)"},
      {"1704067200,1,2,0.5,1,-3", "BTC.csv:3: volume must be >= 0, got -3"},
      {"1704067200,1,2,0.5,1,NaN", "BTC.csv:3: volume is NaN"},
      {"1704067200,1,0.5,2,1,3", "BTC.csv:3: high 0.5 is below low 2"},
      // open and close must lie inside the bar's range.
      {"1704067200,3,2,0.5,1,3",
       "BTC.csv:3: open 3 is outside the bar's [low, high] = [0.5, 2]"},
      {"1704067200,1,2,0.5,0.25,3",
       "BTC.csv:3: close 0.25 is outside the bar's [low, high] = [0.5, 2]"},
      {"1704067200,1,2,1.5,1.75,3",
       "BTC.csv:3: open 1 is outside the bar's [low, high] = [1.5, 2]"},
      // Hex floats are refused, not read by strtod.
      {"1704067200,1,0x1p3,0.5,1,3",
       "BTC.csv:3: high '0x1p3' is not a decimal number (hex floats are "
       "refused)"},
      {"1704067200,1,2,0.5,1,0X10", "BTC.csv:3: volume '0X10' is not a"},
      // Subnormal prices and volumes.
      {"1704067200,1,2,4e-320,1,3",
       "BTC.csv:3: low 4e-320 is subnormal (too small to be real)"},
      {"1704067200,1,2,0.5,1,1e-310", "BTC.csv:3: volume 1e-310 is subnormal"},
      {"1704067200,1,2,0.5,1,-0.0", ""},  // -0 volume is 0: accepted below
      {"1704067200,1,Infinity,0.5,1,3", "BTC.csv:3: high is infinite"},
      {"1704067200,-inf,2,0.5,1,3", "BTC.csv:3: open is infinite"},
      // Raw bytes in a field are escaped and a huge field is capped.
      {"1704067200,1\x01\xff,2,0.5,1,3",
       "BTC.csv:3: open '1\\x01\\xff' is not a number"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.row);
    // Line 2 is a good bar one minute earlier, line 3 the bad one.
    Write("BTC.csv",
          absl::StrCat(kHeader, "1704067140,1,2,0.5,1,3\n", c.row, "\n"));
    auto status = ImportError();
    if (c.message[0] == '\0') {
      EXPECT_TRUE(status.ok()) << status;
      continue;
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST_F(CsvImportTest, HugeBadFieldIsEchoedCappedWithItsSize) {
  const std::string huge(1 << 20, 'z');
  Write("BTC.csv", absl::StrCat(kHeader, "1704067200,", huge, ",2,0.5,1,3\n"));
  const absl::Status status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("BTC.csv:2: open 'zzz"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("(1048576 bytes)"));
  EXPECT_LT(status.message().size(), 300u);
}

TEST_F(CsvImportTest, NonIncreasingTimestampsAreRejected) {
  Write("ETH.csv", absl::StrCat(kHeader, "1699999800,1,1,1,1,1\n",
                                "1700000100,1,1,1,1,1\n",
                                "1700000300,1,1,1,1,1\n"
                                "1700000000,1,1,1,1,1\n"));
  CsvImportOptions options = Options();
  options.interval_seconds = 100;
  auto status = ImportCsvDirectory(options, nullptr).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("ETH.csv:5: timestamp 1700000000 is not after "
                        "previous 1700000300 (line 4)"));
}

TEST_F(CsvImportTest, DuplicateTimestampsAreRejected) {
  Write("BTC.csv", std::string(kHeader) + Row(0) + Row(1) + Row(1));
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("BTC.csv:4: duplicate timestamp 1704067260 (same as "
                        "line 3)"));
}

TEST_F(CsvImportTest, TimestampOffTheIntervalGridIsRejected) {
  Write("BTC.csv", std::string(kHeader) + Row(0) + "1704067290,1,2,0.5,1,3\n");
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("BTC.csv:3: timestamp 1704067290 is not on the "
                        "60-second grid (1704067290 % 60 = 30)"));
}

TEST_F(CsvImportTest, WrongHeaderIsRejected) {
  Write("BTC.csv", "time,open,high,low,close,volume\n" + Row(0));
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("BTC.csv:1: header must be "
                        "'timestamp,open,high,low,close,volume', got "
                        "'time,open,high,low,close,volume'"));
}

TEST_F(CsvImportTest, HeaderOnlyFileIsInvalid) {
  Write("BTC.csv", Bars(Range(0, 2)));
  Write("ETH.csv", kHeader);
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("ETH.csv: no data rows"));
}

TEST_F(CsvImportTest, EmptyFileIsMissingItsHeader) {
  Write("BTC.csv", "");
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("BTC.csv:1: missing header"));
}

// A symbol is a column name, printed in reports and stored comma-joined: a
// file name with a comma, a space, an escape sequence or a newline cannot
// be one. The error escapes what it echoes.
TEST_F(CsvImportTest, FileNamesThatCannotBeSymbolsAreRefusedEscaped) {
  for (const std::string& name :
       {std::string("A,B.csv"), std::string("sp ace.csv"),
        std::string("x\x1b[2J.csv"), std::string("new\nline.csv"),
        std::string(33, 'S') + ".csv"}) {
    SCOPED_TRACE(name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("BTC.csv", kHeader);
    Write(name, kHeader);
    const absl::Status status = ImportError();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("a symbol (the file name before .csv) is 1-32"));
    EXPECT_EQ(std::string(status.message()).find('\x1b'), std::string::npos);
    EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos);
  }
}

TEST_F(CsvImportTest, MissingDirectoryIsNotFound) {
  CsvImportOptions options = Options("does_not_exist");
  auto status = ImportCsvDirectory(options, nullptr).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("does_not_exist"));
}

TEST_F(CsvImportTest, DirectoryWithoutCsvFilesIsInvalid) {
  Write("notes.txt", "hello");
  auto status = ImportError();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("no .csv files"));
}

TEST_F(CsvImportTest, NonPositiveIntervalAndNegativeFillLimitAreInvalid) {
  Write("BTC.csv", Bars(Range(0, 2)));
  CsvImportOptions options = Options();
  options.interval_seconds = 0;
  EXPECT_EQ(ImportCsvDirectory(options, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.interval_seconds = 60;
  options.max_ffill_bars = -1;
  EXPECT_EQ(ImportCsvDirectory(options, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Minimum order quantities, keyed by symbol.

TEST_F(CsvImportTest, MinQtyIsMatchedBySymbolNotPosition) {
  Write("ZEC.csv", Bars(Range(0, 2)));
  Write("BTC.csv", Bars(Range(0, 2)));
  Write("ETH.csv", Bars(Range(0, 2)));
  CsvImportOptions options = Options();
  options.min_qty_file = Write("meta/min_qty.csv",
                               "symbol,min_order_qty\r\n"
                               "ETH,0.01\nZEC , 0.5\nBTC,0.0001\n");
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(options, &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(dataset->num_assets(), 3);
  EXPECT_EQ(dataset->assets[0].symbol, "BTC");
  EXPECT_EQ(dataset->assets[0].min_order_qty, 0.0001);
  EXPECT_EQ(dataset->assets[1].symbol, "ETH");
  EXPECT_EQ(dataset->assets[1].min_order_qty, 0.01);
  EXPECT_EQ(dataset->assets[2].symbol, "ZEC");
  EXPECT_EQ(dataset->assets[2].min_order_qty, 0.5);
  EXPECT_FALSE(AnyWarningContains(report, "min_order_qty"));
}

TEST_F(CsvImportTest, UnknownSymbolInMinQtyFileIsAnError) {
  Write("BTC.csv", Bars(Range(0, 2)));
  CsvImportOptions options = Options();
  options.min_qty_file =
      Write("meta/min_qty.csv", "symbol,min_order_qty\nBTC,1\nDOGE,5\n");
  auto status = ImportCsvDirectory(options, nullptr).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("unknown symbol 'DOGE' (no DOGE.csv"));
}

TEST_F(CsvImportTest, SymbolMissingFromMinQtyFileGetsZeroAndAWarning) {
  Write("BTC.csv", Bars(Range(0, 2)));
  Write("ETH.csv", Bars(Range(0, 2)));
  CsvImportOptions options = Options();
  options.min_qty_file =
      Write("meta/min_qty.csv", "symbol,min_order_qty\nBTC,0.001\n");
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(options, &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(dataset->assets[0].min_order_qty, 0.001);
  EXPECT_EQ(dataset->assets[1].min_order_qty, 0.0);
  EXPECT_TRUE(AnyWarningContains(report, "ETH is missing from"));
  EXPECT_FALSE(AnyWarningContains(report, "BTC is missing from"));
}

TEST_F(CsvImportTest, NoMinQtyFileGivesZerosAndOneWarning) {
  Write("BTC.csv", Bars(Range(0, 2)));
  Write("ETH.csv", Bars(Range(0, 2)));
  CsvImportReport report;
  auto dataset = ImportCsvDirectory(Options(), &report);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(dataset->assets[0].min_order_qty, 0.0);
  EXPECT_EQ(dataset->assets[1].min_order_qty, 0.0);
  int count = 0;
  for (const std::string& w : report.warnings) {
    count += absl::StrContains(w, "min_order_qty") ? 1 : 0;
  }
  EXPECT_EQ(count, 1);
}

TEST_F(CsvImportTest, MissingMinQtyFileIsNotFound) {
  Write("BTC.csv", Bars(Range(0, 2)));
  CsvImportOptions options = Options();
  options.min_qty_file = dir_ + "/nope.csv";
  EXPECT_EQ(ImportCsvDirectory(options, nullptr).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CsvImportTest, ReadMinQtyFileRejectsBadLinesWithFileAndLine) {
  const struct {
    const char* content;
    const char* message;
  } cases[] = {
      {"symbol,qty\nBTC,1\n", "qty.csv:1: header must be"},
      {"symbol,min_order_qty\nBTC,1\nBTC,2\n",
       "qty.csv:3: duplicate symbol 'BTC' (first on line 2)"},
      {"symbol,min_order_qty\nBTC,-1\n",
       "qty.csv:2: min_order_qty must be >= 0, got -1"},
      {"symbol,min_order_qty\nBTC,1,2\n", "qty.csv:2: expected 2 fields"},
      {"symbol,min_order_qty\n,1\n", "qty.csv:2: symbol is empty"},
      {"symbol,min_order_qty\nBTC,x\n",
       "qty.csv:2: min_order_qty 'x' is not a number"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.content);
    auto entries = ReadMinQtyFile(Write("qty.csv", c.content));
    EXPECT_EQ(entries.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(entries.status().message()), HasSubstr(c.message));
  }
  auto ok = ReadMinQtyFile(
      Write("qty.csv", "symbol,min_order_qty\nETH,0.5\n\nBTC,2\n"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].symbol, "ETH");
  EXPECT_EQ((*ok)[1].min_order_qty, 2.0);
}

TEST_F(CsvImportTest, FormattedReportListsCountersAndWarnings) {
  Write("BTC.csv", Bars(Range(0, 4)));
  Write("ETH.csv", Bars(Range(1, 4)));
  CsvImportReport report;
  ASSERT_TRUE(ImportCsvDirectory(Options(), &report).ok());
  const std::string text = FormatCsvImportReport(report);
  EXPECT_THAT(text, HasSubstr("  BTC: 4\n  ETH: 3\n"));
  EXPECT_THAT(text, HasSubstr("bars outside common range (trimmed): 1\n"));
  EXPECT_THAT(text, HasSubstr("warnings:\n  no min_qty_file given"));
}

}  // namespace
}  // namespace ristretto::env
