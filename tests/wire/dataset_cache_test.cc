#include "wire/dataset_cache.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/temp_dir.h"

namespace ristretto::wire {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// This file's temporary directories (tests/common/temp_dir.h).
class TempDir : public ristretto::tests::TempDir {
 public:
  TempDir() : ristretto::tests::TempDir("ristretto_dataset_cache_test_") {}
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Stands in for the client side of a FetchDataset call: hands out the
// given pieces, then finishes with `finish`.
class FakePieceReader final
    : public grpc::ClientReaderInterface<v1::DatasetPiece> {
 public:
  FakePieceReader(std::vector<v1::DatasetPiece> pieces, grpc::Status finish)
      : pieces_(std::move(pieces)), finish_(std::move(finish)) {}

  bool Read(v1::DatasetPiece* msg) override {
    if (next_ >= pieces_.size()) return false;
    *msg = pieces_[next_++];
    return true;
  }
  bool NextMessageSize(uint32_t* sz) override {
    if (next_ >= pieces_.size()) return false;
    *sz = static_cast<uint32_t>(pieces_[next_].ByteSizeLong());
    return true;
  }
  grpc::Status Finish() override {
    finished_ = true;
    return finish_;
  }
  void WaitForInitialMetadata() override {}

  size_t read() const { return next_; }
  bool finished() const { return finished_; }

 private:
  std::vector<v1::DatasetPiece> pieces_;
  grpc::Status finish_;
  size_t next_ = 0;
  bool finished_ = false;
};

// `bytes` cut into pieces of at most `piece_size`, as a server sends them.
std::vector<v1::DatasetPiece> Pieces(const std::string& bytes,
                                     size_t piece_size) {
  std::vector<v1::DatasetPiece> pieces;
  for (size_t offset = 0; offset < bytes.size(); offset += piece_size) {
    v1::DatasetPiece p;
    p.set_offset(static_cast<int64_t>(offset));
    p.set_total_size(static_cast<int64_t>(bytes.size()));
    p.set_data(bytes.substr(offset, piece_size));
    p.set_last(offset + piece_size >= bytes.size());
    pieces.push_back(std::move(p));
  }
  return pieces;
}

std::string SomeBytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + 7) % 256);
  return s;
}

TEST(DatasetCacheReceiveTest, WritesThePiecesInOrderAndLeavesNoTemporary) {
  TempDir dir;
  const std::string bytes = SomeBytes(10000);
  FakePieceReader reader(Pieces(bytes, 4096), grpc::Status::OK);
  grpc::ClientContext ctx;
  const std::string path = dir.Path("abc.rds");
  ASSERT_TRUE(ReceiveDatasetFile(&reader, &ctx, "abc", path).ok());
  EXPECT_EQ(reader.read(), 3u);
  EXPECT_TRUE(reader.finished());
  EXPECT_EQ(ReadFile(path), bytes);
  EXPECT_THAT(dir.Entries(), ElementsAre("abc.rds"));
}

TEST(DatasetCacheReceiveTest, RefusesAPieceOutOfOrderAndWritesNothing) {
  TempDir dir;
  std::vector<v1::DatasetPiece> pieces = Pieces(SomeBytes(10000), 4096);
  std::swap(pieces[1], pieces[2]);
  FakePieceReader reader(std::move(pieces), grpc::Status::OK);
  grpc::ClientContext ctx;
  const absl::Status s =
      ReceiveDatasetFile(&reader, &ctx, "abc", dir.Path("abc.rds"));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("offset 8192 of 10000 bytes does not follow 4096"));
  EXPECT_THAT(dir.Entries(), IsEmpty());
}

TEST(DatasetCacheReceiveTest, RefusesAStreamThatEndsEarlyAndWritesNothing) {
  TempDir dir;
  std::vector<v1::DatasetPiece> pieces = Pieces(SomeBytes(10000), 4096);
  pieces.pop_back();
  FakePieceReader reader(std::move(pieces), grpc::Status::OK);
  grpc::ClientContext ctx;
  const absl::Status s =
      ReceiveDatasetFile(&reader, &ctx, "abc", dir.Path("abc.rds"));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("dataset abc ended after 8192 of 10000 bytes"));
  EXPECT_THAT(dir.Entries(), IsEmpty());
}

// A failed call is kUnavailable whatever the server's code (the caller
// retries a download; the server's code and message are in the text), not
// the code mapped by grpc_status.h.
TEST(DatasetCacheReceiveTest, AServerFailureIsUnavailableWithTheServersReason) {
  TempDir dir;
  FakePieceReader reader({}, grpc::Status(grpc::StatusCode::NOT_FOUND,
                                          "dataset 'abc' is not served here"));
  grpc::ClientContext ctx;
  const absl::Status s =
      ReceiveDatasetFile(&reader, &ctx, "abc", dir.Path("abc.rds"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "FetchDataset abc: dataset 'abc' is not served here (code 5)");
  EXPECT_THAT(dir.Entries(), IsEmpty());
}

class DatasetCacheLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env::SyntheticMarketOptions o;
    o.num_assets = 2;
    o.num_rows = 300;
    o.seed = 11;
    absl::StatusOr<env::Dataset> d = env::GenerateSyntheticDataset(o);
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = std::move(*d);
    id_ = dataset_.ComputeId();
    o.seed = 12;
    absl::StatusOr<env::Dataset> other = env::GenerateSyntheticDataset(o);
    ASSERT_TRUE(other.ok()) << other.status();
    other_ = std::move(*other);
  }

  // A fetch that writes `dataset` and counts its calls.
  std::function<absl::Status(const std::string&)> FetchWriting(
      const env::Dataset& dataset) {
    return [this, &dataset](const std::string& path) {
      ++fetches_;
      return env::WriteDataset(dataset, path);
    };
  }

  TempDir dir_;
  env::Dataset dataset_;
  env::Dataset other_;
  std::string id_;
  int fetches_ = 0;
};

TEST_F(DatasetCacheLoadTest, FetchesOnceThenServesTheCache) {
  const std::string cache = dir_.Path("cache");  // created on demand
  absl::StatusOr<env::Dataset> first =
      LoadOrFetchDataset(cache, id_, FetchWriting(dataset_));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->ComputeId(), id_);
  EXPECT_EQ(fetches_, 1);
  EXPECT_TRUE(fs::exists(cache + "/" + id_ + ".rds"));

  absl::StatusOr<env::Dataset> second =
      LoadOrFetchDataset(cache, id_, FetchWriting(dataset_));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->ComputeId(), id_);
  EXPECT_EQ(fetches_, 1);
}

TEST_F(DatasetCacheLoadTest, RefusesAFetchedFileWithAnotherIdAndRemovesIt) {
  absl::StatusOr<env::Dataset> got =
      LoadOrFetchDataset(dir_.path(), id_, FetchWriting(other_));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("its content hashes to " + other_.ComputeId()));
  EXPECT_THAT(dir_.Entries(), IsEmpty());
}

TEST_F(DatasetCacheLoadTest, RefetchesACachedFileThatDoesNotVerify) {
  const std::string path = dir_.Path(id_ + ".rds");
  {
    std::ofstream garbage(path, std::ios::binary);
    garbage << "not a dataset";
  }
  absl::StatusOr<env::Dataset> got =
      LoadOrFetchDataset(dir_.path(), id_, FetchWriting(dataset_));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ComputeId(), id_);
  EXPECT_EQ(fetches_, 1);
  EXPECT_THAT(dir_.Entries(), ElementsAre(id_ + ".rds"));
}

TEST_F(DatasetCacheLoadTest, PassesTheFetchErrorOn) {
  const auto failing = [this](const std::string& /*path*/) {
    ++fetches_;
    return absl::UnavailableError("learner gone");
  };
  absl::StatusOr<env::Dataset> got =
      LoadOrFetchDataset(dir_.path(), id_, failing);
  EXPECT_EQ(got.status(), absl::UnavailableError("learner gone"));
  EXPECT_EQ(fetches_, 1);
  EXPECT_THAT(dir_.Entries(), IsEmpty());
}

}  // namespace
}  // namespace ristretto::wire
