// ReadFileToString: regular files only (a FIFO is named, never waited on),
// a size cap checked before the read, errors with their errno text.
#include "common/file_util.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/temp_dir.h"

namespace ristretto {
namespace {

using ::testing::HasSubstr;
using tests::TempDir;

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

TEST(FileUtilTest, ReadsARegularFileWhole) {
  TempDir dir("file_util");
  const std::string text("{\"a\": 1}\n\0tail", 14);
  Write(dir.Path("f.json"), text);
  absl::StatusOr<std::string> got = ReadFileToString(dir.Path("f.json"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, text);
  Write(dir.Path("empty"), "");
  EXPECT_EQ(*ReadFileToString(dir.Path("empty")), "");
}

TEST(FileUtilTest, MissingFilesAreNotFoundWithTheirErrno) {
  TempDir dir("file_util");
  absl::StatusOr<std::string> got = ReadFileToString(dir.Path("none"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(),
              HasSubstr("cannot open " + dir.Path("none") +
                        ": No such file or directory"));
}

TEST(FileUtilTest, NonRegularFilesAreNamedForWhatTheyAre) {
  TempDir dir("file_util");
  ASSERT_EQ(::mkfifo(dir.Path("fifo").c_str(), 0600), 0);
  // Returns at once: a FIFO without a writer is never read.
  absl::StatusOr<std::string> fifo = ReadFileToString(dir.Path("fifo"));
  EXPECT_EQ(fifo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fifo.status().message(),
              HasSubstr(dir.Path("fifo") + " is a FIFO, not a regular file"));
  absl::StatusOr<std::string> d = ReadFileToString(dir.path());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("is a directory"));
  absl::StatusOr<std::string> null = ReadFileToString("/dev/null");
  EXPECT_EQ(null.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(null.status().message(),
              HasSubstr("/dev/null is a character device"));
  ASSERT_EQ(::symlink(dir.Path("loop").c_str(), dir.Path("loop").c_str()), 0);
  absl::StatusOr<std::string> loop = ReadFileToString(dir.Path("loop"));
  EXPECT_FALSE(loop.ok());
  // open(2) fails with ELOOP, which absl::ErrnoToStatus maps to kUnknown.
  EXPECT_EQ(loop.status().code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(loop.status().message(),
              HasSubstr("Too many levels of symbolic links"));
}

TEST(FileUtilTest, FilesAboveTheCapAreRefusedBeforeTheyAreRead) {
  TempDir dir("file_util");
  Write(dir.Path("big"), std::string(1000, 'x'));
  absl::StatusOr<std::string> got = ReadFileToString(dir.Path("big"), 999);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(),
              HasSubstr("big is 1000 bytes, more than the 999 allowed"));
  EXPECT_TRUE(ReadFileToString(dir.Path("big"), 1000).ok());
  // A sparse 2 GiB file is refused by its size, not read.
  ASSERT_EQ(::truncate(dir.Path("big").c_str(), int64_t{2} << 30), 0);
  got = ReadFileToString(dir.Path("big"));
  EXPECT_THAT(got.status().message(),
              HasSubstr("is 2147483648 bytes, more than the 67108864 allowed"));
  EXPECT_EQ(DescribeFileType(S_IFSOCK), std::string("a socket"));
  EXPECT_EQ(DescribeFileType(S_IFREG), std::string("a regular file"));
}

}  // namespace
}  // namespace ristretto
