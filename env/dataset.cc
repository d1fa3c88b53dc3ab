#include "env/dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/atomic_file.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "common/text_util.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "The dataset format is little-endian; add byte swapping for this host."
#endif

namespace ristretto::env {
namespace {

// File layout (docs/dataset_format.md): 8-byte magic, u32 version,
// u32 reserved, 32-byte SHA-256 of the content section, content section.
constexpr char kMagic[8] = {'R', 'S', 'T', 'R', 'D', 'S', 'E', 'T'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 32;
// Refuse absurd sizes before allocating (corrupt or hostile files).
constexpr uint64_t kMaxElements = uint64_t{1} << 34;

class Writer {
 public:
  template <typename T>
  void Put(T value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  template <typename T>
  void PutArray(const std::vector<T>& v) {
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const char* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  bool Get(T* value) {
    if (size_ - pos_ < sizeof(T)) return false;
    std::memcpy(value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t len = 0;
    if (!Get(&len) || size_ - pos_ < len) return false;
    s->assign(data_ + pos_, len);
    pos_ += len;
    return true;
  }
  template <typename T>
  bool GetArray(uint64_t count, std::vector<T>* v) {
    if (count > kMaxElements || (size_ - pos_) / sizeof(T) < count) {
      return false;
    }
    v->resize(count);
    std::memcpy(v->data(), data_ + pos_, count * sizeof(T));
    pos_ += count * sizeof(T);
    return true;
  }
  bool AtEnd() const { return pos_ == size_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string SerializeContent(const Dataset& d) {
  Writer w;
  w.Put<uint32_t>(static_cast<uint32_t>(d.num_assets()));
  w.Put<uint32_t>(static_cast<uint32_t>(d.features_per_asset()));
  w.Put<uint64_t>(static_cast<uint64_t>(d.num_rows()));
  w.Put<int64_t>(d.interval_seconds);
  w.Put<int64_t>(d.gaps_filled);
  w.Put<int64_t>(d.warmup_rows_dropped);
  w.PutString(d.source);
  for (const AssetMeta& a : d.assets) {
    w.PutString(a.symbol);
    w.Put<double>(a.min_order_qty);
  }
  for (const std::string& name : d.feature_names) w.PutString(name);
  w.Put<uint64_t>(d.domains.size());
  for (const Domain& dom : d.domains) {
    w.Put<int64_t>(dom.begin);
    w.Put<int64_t>(dom.end);
  }
  w.PutArray(d.timestamps);
  w.PutArray(d.bars);
  w.Put<uint8_t>(d.features.empty() ? 0 : 1);
  w.PutArray(d.features);
  return std::move(w.str());
}

absl::Status Corrupt(const std::string& path, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat(EscapeForMessage(path, 200), ": ", what));
}

}  // namespace

std::vector<double> Dataset::ClosePrices() const {
  const int n = num_assets();
  std::vector<double> prices(static_cast<size_t>(num_rows()) * n);
  for (int64_t t = 0; t < num_rows(); ++t) {
    for (int i = 0; i < n; ++i) prices[t * n + i] = close(t, i);
  }
  return prices;
}

absl::Status Dataset::Validate() const {
  const int64_t T = num_rows();
  const int n = num_assets();
  if (n == 0) return absl::InvalidArgumentError("dataset has no assets");
  if (T == 0) return absl::InvalidArgumentError("dataset has no rows");
  if (interval_seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("interval_seconds must be > 0, got ", interval_seconds));
  }
  for (int i = 0; i < n; ++i) {
    if (assets[i].symbol.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("asset ", i, " has no symbol"));
    }
    for (int j = 0; j < i; ++j) {
      if (assets[j].symbol == assets[i].symbol) {
        return absl::InvalidArgumentError(
            absl::StrCat("duplicate asset symbol '", assets[i].symbol, "'"));
      }
    }
    if (!std::isfinite(assets[i].min_order_qty) ||
        assets[i].min_order_qty < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "asset '", assets[i].symbol, "' has invalid min_order_qty ",
          assets[i].min_order_qty));
    }
  }
  if (bars.size() != static_cast<size_t>(T) * n * kNumBarFields) {
    return absl::InvalidArgumentError(
        absl::StrCat("bars has ", bars.size(), " values, expected T*n*5 = ",
                     static_cast<size_t>(T) * n * kNumBarFields));
  }
  if (!features.empty() &&
      features.size() != static_cast<size_t>(T) * num_features()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "features has ", features.size(),
        " values, expected T*F = ", static_cast<size_t>(T) * num_features()));
  }
  for (int64_t t = 1; t < T; ++t) {
    if (timestamps[t] <= timestamps[t - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("timestamps not increasing at row ", t, ": ",
                       timestamps[t - 1], " then ", timestamps[t]));
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    for (int i = 0; i < n; ++i) {
      for (int f = 0; f < kVolume; ++f) {
        const double p = bar(t, i, static_cast<BarField>(f));
        if (!std::isfinite(p) || p <= 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("row ", t, " asset '", assets[i].symbol,
                           "': price field ", f, " is ", p, " (must be > 0)"));
        }
      }
      const double v = bar(t, i, kVolume);
      if (!std::isfinite(v) || v < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "row ", t, " asset '", assets[i].symbol, "': volume is ", v));
      }
    }
  }
  for (size_t k = 0; k < features.size(); ++k) {
    if (!std::isfinite(features[k])) {
      const int64_t F = num_features();
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", k % F, " at row ", k / F, " is not finite"));
    }
  }
  int64_t expected_begin = 0;
  if (domains.empty())
    return absl::InvalidArgumentError("dataset has no domains");
  for (const Domain& d : domains) {
    if (d.begin != expected_begin || d.end <= d.begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "domains must tile [0, T) in order; got [", d.begin, ", ", d.end,
          ") where begin ", expected_begin, " was expected"));
    }
    expected_begin = d.end;
  }
  if (expected_begin != T) {
    return absl::InvalidArgumentError(
        absl::StrCat("domains end at row ", expected_begin, ", T = ", T));
  }
  return absl::OkStatus();
}

std::string Dataset::ComputeId() const {
  return Sha256::ToHex(Sha256::Hash(SerializeContent(*this)));
}

absl::Status WriteDataset(const Dataset& dataset, const std::string& path) {
  absl::Status valid = dataset.Validate();
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("refusing to write invalid dataset: ", valid.message()));
  }
  const std::string content = SerializeContent(dataset);
  const Sha256::Digest digest = Sha256::Hash(content);
  std::string header(kMagic, sizeof(kMagic));
  const uint32_t version = kFormatVersion;
  const uint32_t reserved = 0;
  header.append(reinterpret_cast<const char*>(&version), 4);
  header.append(reinterpret_cast<const char*>(&reserved), 4);
  header.append(reinterpret_cast<const char*>(digest.data()), digest.size());

  // A temporary file beside it, fsynced and renamed over `path`: a full
  // disk or a crash leaves the previous file (or none), never a torn one;
  // errors carry errno's text ("No space left on device").
  const absl::string_view pieces[] = {header, content};
  return WriteFileAtomically(path, absl::MakeConstSpan(pieces));
}

namespace {

absl::Status CheckHeader(const std::string& path, const std::string& bytes) {
  if (bytes.size() < kHeaderBytes ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Corrupt(path,
                   "not a ristretto dataset file (bad magic or too short)");
  }
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  if (version > kFormatVersion) {
    return absl::UnimplementedError(absl::StrCat(
        path, ": dataset format version ", version,
        " is newer than this build supports (", kFormatVersion, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// What a non-regular file is, for the refusal message.
const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Reads up to `want` bytes at the file's current offset (fewer only at end
// of file). Errors from errno.
absl::Status ReadUpTo(int fd, const std::string& path, size_t want,
                      std::string* out) {
  const size_t start = out->size();
  out->resize(start + want);
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::read(fd, out->data() + start + got, want - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      out->resize(start + got);
      return absl::ErrnoToStatus(
          error, absl::StrCat("cannot read ", EscapeForMessage(path, 200)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out->resize(start + got);
  return absl::OkStatus();
}

// Opens a dataset file and checks its header from the first kHeaderBytes
// bytes only, so that /dev/zero, a FIFO or a 50 GB log are refused at once
// instead of read whole. Non-regular files are refused without being
// opened (opening a FIFO blocks until a writer appears). On success *fd is
// open (the caller closes it), *header holds the header bytes and *size
// the file's size.
absl::Status OpenAndCheckHeader(const std::string& path, int* fd,
                                std::string* header, uint64_t* size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("cannot open ", EscapeForMessage(path, 200)));
    }
    return absl::ErrnoToStatus(
        error, absl::StrCat("cannot open ", EscapeForMessage(path, 200)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(EscapeForMessage(path, 200), " is ", FileKind(st.st_mode),
                     ", not a ristretto dataset file"));
  }
  // O_NONBLOCK: if the path was swapped for a FIFO since stat(), open must
  // not hang; regular-file reads ignore the flag.
  *fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (*fd < 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot open ", EscapeForMessage(path, 200)));
  }
  struct stat opened {};
  if (::fstat(*fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
    ::close(*fd);
    *fd = -1;
    return absl::InvalidArgumentError(
        absl::StrCat(EscapeForMessage(path, 200),
                     " is not a regular file (changed while "
                     "opening), not a ristretto dataset file"));
  }
  *size = static_cast<uint64_t>(opened.st_size);
  header->clear();
  absl::Status status = ReadUpTo(*fd, path, kHeaderBytes, header);
  if (status.ok()) status = CheckHeader(path, *header);
  if (!status.ok()) {
    ::close(*fd);
    *fd = -1;
  }
  return status;
}

}  // namespace

absl::StatusOr<std::string> ReadDatasetId(const std::string& path) {
  int fd = -1;
  std::string header;
  uint64_t size = 0;
  RETURN_IF_ERROR(OpenAndCheckHeader(path, &fd, &header, &size));
  ::close(fd);
  Sha256::Digest digest;
  std::memcpy(digest.data(), header.data() + 16, digest.size());
  return Sha256::ToHex(digest);
}

absl::StatusOr<Dataset> ReadDataset(const std::string& path) {
  int fd = -1;
  std::string bytes;
  uint64_t size = 0;
  RETURN_IF_ERROR(OpenAndCheckHeader(path, &fd, &bytes, &size));
  absl::Status read_status =
      ReadUpTo(fd, path, static_cast<size_t>(size) - kHeaderBytes, &bytes);
  ::close(fd);
  RETURN_IF_ERROR(read_status);
  const char* content = bytes.data() + kHeaderBytes;
  const size_t content_size = bytes.size() - kHeaderBytes;
  Sha256::Digest stored;
  std::memcpy(stored.data(), bytes.data() + 16, stored.size());
  Sha256 hasher;
  hasher.Update(content, content_size);
  if (hasher.Finish() != stored) {
    return Corrupt(path, "content hash mismatch (file corrupted or truncated)");
  }

  Reader r(content, content_size);
  Dataset d;
  uint32_t n = 0, k = 0;
  uint64_t T = 0;
  if (!r.Get(&n) || !r.Get(&k) || !r.Get(&T) || !r.Get(&d.interval_seconds) ||
      !r.Get(&d.gaps_filled) || !r.Get(&d.warmup_rows_dropped) ||
      !r.GetString(&d.source)) {
    return Corrupt(path, "truncated content header");
  }
  if (n > 100000 || k > 100000 || T > kMaxElements) {
    return Corrupt(path, "implausible dimensions");
  }
  d.assets.resize(n);
  for (AssetMeta& a : d.assets) {
    if (!r.GetString(&a.symbol) || !r.Get(&a.min_order_qty)) {
      return Corrupt(path, "truncated asset table");
    }
  }
  d.feature_names.resize(k);
  for (std::string& name : d.feature_names) {
    if (!r.GetString(&name)) return Corrupt(path, "truncated feature names");
  }
  uint64_t num_domains = 0;
  if (!r.Get(&num_domains) || num_domains > T) {
    return Corrupt(path, "bad domain count");
  }
  d.domains.resize(num_domains);
  for (Domain& dom : d.domains) {
    if (!r.Get(&dom.begin) || !r.Get(&dom.end)) {
      return Corrupt(path, "truncated domains");
    }
  }
  uint8_t has_features = 0;
  if (!r.GetArray(T, &d.timestamps) ||
      !r.GetArray(T * n * kNumBarFields, &d.bars) || !r.Get(&has_features) ||
      !r.GetArray(has_features ? T * n * k : 0, &d.features) || !r.AtEnd()) {
    return Corrupt(path, "truncated or oversized arrays");
  }
  absl::Status valid = d.Validate();
  if (!valid.ok()) return Corrupt(path, valid.message());
  return d;
}

absl::StatusOr<int64_t> ParseInterval(const std::string& text) {
  if (text.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad interval '", text, "': expected e.g. 30s, 5m, 1h, 1d"));
  }
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "bad interval unit in '", text, "': expected s, m, h, d or w"));
  }
  int64_t count = 0;
  if (!absl::SimpleAtoi(text.substr(0, text.size() - 1), &count) ||
      count <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad interval '", text, "': expected a positive count"));
  }
  if (count > std::numeric_limits<int64_t>::max() / unit) {
    return absl::InvalidArgumentError(
        absl::StrCat("interval '", text, "' overflows 64-bit seconds"));
  }
  return count * unit;
}

std::string FormatInterval(int64_t seconds) {
  if (seconds > 0 && seconds % (7 * 86400) == 0)
    return absl::StrCat(seconds / (7 * 86400), "w");
  if (seconds > 0 && seconds % 86400 == 0)
    return absl::StrCat(seconds / 86400, "d");
  if (seconds > 0 && seconds % 3600 == 0)
    return absl::StrCat(seconds / 3600, "h");
  if (seconds > 0 && seconds % 60 == 0) return absl::StrCat(seconds / 60, "m");
  return absl::StrCat(seconds, "s");
}

double BarsPerYear(int64_t interval_seconds) {
  return 365.0 * 86400.0 / static_cast<double>(interval_seconds);
}

}  // namespace ristretto::env
