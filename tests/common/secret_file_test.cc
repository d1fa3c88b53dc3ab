#include "common/secret_file.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "ristretto-secret.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` to dir/name with `mode`; returns the path.
  std::string Write(const std::string& name, const std::string& text,
                    mode_t mode) {
    std::string path = dir_ + "/" + name;
    {
      std::ofstream out(path, std::ios::binary);
      out << text;
    }
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }

  std::string dir_;
};

TEST_F(SecretFileTest, ReadsTheSecretWithoutItsTrailingNewline) {
  EXPECT_EQ(*ReadSecretFile(Write("a", "s3cret\n", 0600)), "s3cret");
  EXPECT_EQ(*ReadSecretFile(Write("b", "s3cret\r\n", 0400)), "s3cret");
  EXPECT_EQ(*ReadSecretFile(Write("c", "s3cret", 0600)), "s3cret");
}

TEST_F(SecretFileTest, RefusesFilesOthersCanReadNamingFileAndMode) {
  for (const mode_t mode : {0640, 0604, 0644, 0660, 0602}) {
    const std::string path = Write("open", "s3cret\n", mode);
    const absl::StatusOr<std::string> s = ReadSecretFile(path);
    ASSERT_FALSE(s.ok()) << std::oct << mode;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
    char expected_mode[8];
    std::snprintf(expected_mode, sizeof(expected_mode), "%04o", mode);
    EXPECT_THAT(s.status().message(), HasSubstr(path));
    EXPECT_THAT(s.status().message(),
                HasSubstr(std::string("mode ") + expected_mode));
    EXPECT_THAT(s.status().message(), HasSubstr("chmod 600"));
    EXPECT_THAT(s.status().message(), Not(HasSubstr("s3cret")));
  }
}

TEST_F(SecretFileTest, RefusesEmptyMissingNonRegularAndMultiLineFiles) {
  absl::StatusOr<std::string> s = ReadSecretFile(Write("empty", "\n", 0600));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("is empty"));
  s = ReadSecretFile(Write("zero", "", 0600));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);

  s = ReadSecretFile(dir_ + "/missing");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr(dir_ + "/missing"));

  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  s = ReadSecretFile(dir_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("not a regular file"));

  // A FIFO must be refused, not block the open or the read.
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  s = ReadSecretFile(fifo);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);

  s = ReadSecretFile(Write("two", "line1\nline2\n", 0600));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), Not(HasSubstr("line1")));
  s = ReadSecretFile(Write("space", "a b\n", 0600));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  s = ReadSecretFile(
      Write("big", std::string(kMaxSecretFileBytes + 1, 'x'), 0600));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SecretFileTest, FollowsSymlinksToAPrivateFile) {
  // Kubernetes secret volumes are symlinks into ..data/.
  const std::string target = Write("target", "tok\n", 0600);
  const std::string link = dir_ + "/link";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(*ReadSecretFile(link), "tok");
}

TEST_F(SecretFileTest, WriteCreatesAMode600FileThatReadsBack) {
  const mode_t old_umask = umask(0);  // even a permissive umask
  const std::string path = dir_ + "/token";
  const absl::Status written = WriteSecretFile(path, "abc123");
  umask(old_umask);
  ASSERT_TRUE(written.ok()) << written;
  struct stat st = {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(*ReadSecretFile(path), "abc123");
  // Overwrites atomically and leaves no temporary behind.
  ASSERT_TRUE(WriteSecretFile(path, "def456").ok());
  EXPECT_EQ(*ReadSecretFile(path), "def456");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  EXPECT_EQ(WriteSecretFile(path, "").code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status no_dir = WriteSecretFile(dir_ + "/no/such/dir/token", "x");
  EXPECT_FALSE(no_dir.ok());
  EXPECT_EQ(no_dir.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(no_dir.message(), HasSubstr("cannot create"));
  EXPECT_THAT(no_dir.message(), HasSubstr("/no/such/dir/.token.tmp."));
}

TEST(GenerateTokenTest, Is64HexDigitsAndDiffersEachCall) {
  const absl::StatusOr<std::string> a = GenerateToken();
  const absl::StatusOr<std::string> b = GenerateToken();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_THAT(*a, ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_NE(*a, *b);
}

TEST_F(SecretFileTest, ResolveTokenRefusesArgvThenPrefersFileOverEnv) {
  absl::StatusOr<std::string> t = ResolveToken(true, "", "env-token");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("--token-file"));
  EXPECT_THAT(t.status().message(), HasSubstr("RISTRETTO_TOKEN"));
  // Another token's flag and variable are named in its refusal.
  t = ResolveToken(true, "", nullptr, "actor-token", "RISTRETTO_ACTOR_TOKEN");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("--actor-token-file"));
  EXPECT_THAT(t.status().message(), HasSubstr("$RISTRETTO_ACTOR_TOKEN"));

  const std::string file_token = "file-token-0123456789abcdef0123456789";
  const std::string env_token = "env-token-0123456789abcdef0123456789ab";
  const std::string file = Write("tok", file_token + "\n", 0600);
  EXPECT_EQ(*ResolveToken(false, file, env_token.c_str()), file_token);
  EXPECT_EQ(*ResolveToken(false, "", env_token.c_str()), env_token);
  EXPECT_EQ(*ResolveToken(false, "", nullptr), "");
  EXPECT_EQ(*ResolveToken(false, "", ""), "");
  // A bad file is an error, not a silent fallback to the environment.
  t = ResolveToken(false, Write("bad", file_token + "\n", 0644),
                   env_token.c_str());
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(t.status().message(), HasSubstr("/bad"));
  EXPECT_THAT(t.status().message(), HasSubstr("has mode 0644"));
}

// A configured token is long and printable: a short one is guessable, one
// with a space or a control byte cannot be sent as a bearer credential.
// The refusal names where it came from, never the value.
TEST_F(SecretFileTest, ResolveTokenRefusesWeakAndUnprintableTokens) {
  const std::string weak = "sesame-1234";
  absl::StatusOr<std::string> t =
      ResolveToken(false, Write("weak", weak + "\n", 0600), nullptr);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("is 11 bytes; use at least 32"));
  EXPECT_THAT(t.status().message(), Not(HasSubstr(weak)));
  t = ResolveToken(false, "", weak.c_str(), "actor-token",
                   "RISTRETTO_ACTOR_TOKEN");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("$RISTRETTO_ACTOR_TOKEN"));
  const std::string spaced = "0123456789abcdef 0123456789abcdef";
  t = ResolveToken(false, "", spaced.c_str());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("printable ASCII"));
  EXPECT_THAT(t.status().message(), Not(HasSubstr(spaced)));
  const std::string exactly(kMinTokenBytes, 'k');
  EXPECT_EQ(*ResolveToken(false, "", exactly.c_str()), exactly);
  const std::string one_short = exactly.substr(1);
  t = ResolveToken(false, "", one_short.c_str());
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("$RISTRETTO_TOKEN"));
  EXPECT_THAT(t.status().message(), HasSubstr("is 31 bytes; use at least 32"));
}

TEST(DsnPasswordTest, FindsPasswordsInEveryLibpqForm) {
  EXPECT_TRUE(DsnHasPassword("host=db user=u password=s dbname=x"));
  EXPECT_TRUE(DsnHasPassword("password = 's b' host=db"));
  EXPECT_TRUE(DsnHasPassword("host=db\tpassword=s"));
  EXPECT_TRUE(DsnHasPassword("postgresql://u:s@db:5432/x"));
  EXPECT_TRUE(DsnHasPassword("postgres://u:p%40ss@db/x?sslmode=require"));
  EXPECT_TRUE(DsnHasPassword("POSTGRESQL://u:s@db/x"));
  EXPECT_TRUE(DsnHasPassword("postgresql:///x?host=/run&password=s"));
  EXPECT_TRUE(DsnHasPassword("postgresql://db/x?password=s"));
  // Spellings only libpq's parser sees: a percent-encoded key.
  EXPECT_TRUE(DsnHasPassword("postgresql://db/x?%70assword=PW"));
  EXPECT_TRUE(
      DsnHasPassword("postgresql://db/x?sslmode=disable&%70%61ssword=PW"));

  EXPECT_FALSE(DsnHasPassword("host=db user=u dbname=x"));
  EXPECT_FALSE(DsnHasPassword("host=/tmp/pg port=5432 dbname=ristretto"));
  EXPECT_FALSE(DsnHasPassword("passfile=/run/pgpass host=db"));
  EXPECT_FALSE(DsnHasPassword("host=db user=password_owner"));
  EXPECT_FALSE(DsnHasPassword("postgresql://u@db/x"));
  EXPECT_FALSE(DsnHasPassword("postgresql://db:5432/x"));
  EXPECT_FALSE(DsnHasPassword("postgresql://u@db/x?passfile=/p"));
  EXPECT_FALSE(DsnHasPassword(""));
}

TEST(DsnPasswordTest, RefusalSaysWhatToUseAndNeverEchoesThePassword) {
  EXPECT_TRUE(RefuseDsnPasswordOnCommandLine("host=db", "db").ok());
  const absl::Status s =
      RefuseDsnPasswordOnCommandLine("host=db password=hunter2", "db");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--db carries a database password"));
  EXPECT_THAT(s.message(), HasSubstr("PGPASSFILE"));
  EXPECT_THAT(s.message(), HasSubstr("RISTRETTO_DB"));
  EXPECT_THAT(s.message(), Not(HasSubstr("hunter2")));
}

}  // namespace
}  // namespace ristretto
