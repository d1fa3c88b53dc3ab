// Secrets (the coordinator's registration token, database passwords) kept
// out of argv, where every local user can read them with `ps` or
// /proc/PID/cmdline. Binaries take a token from a file (--token-file) or
// the environment ($RISTRETTO_TOKEN), and a database password through
// libpq's own mechanisms ($PGPASSFILE, ~/.pgpass, $PGPASSWORD, or the whole
// DSN in $RISTRETTO_DB); a secret written on the command line is refused.
// Thread-safe: no shared state (ResolveToken's caller passes the
// environment value in).
#ifndef RISTRETTO_COMMON_SECRET_FILE_H_
#define RISTRETTO_COMMON_SECRET_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ristretto {

// The environment variable a token may come from.
inline constexpr char kTokenEnv[] = "RISTRETTO_TOKEN";

// Largest secret file read, in bytes: a token is tens of bytes; anything
// bigger is the wrong file (and /dev/zero must not be read forever).
inline constexpr size_t kMaxSecretFileBytes = 4096;

// Returns the secret stored in `path`, without its trailing newline ("\n"
// or "\r\n"). Errors (each one line naming the file):
//   kNotFound           the file cannot be opened;
//   kFailedPrecondition not a regular file (symlinks are followed, as
//                       Kubernetes secret volumes use them), or readable or
//                       writable by group or others (mode & 077; the message
//                       gives the mode and the chmod 600 that fixes it);
//   kInvalidArgument    empty (after the newline is stripped), larger than
//                       kMaxSecretFileBytes, or containing a control byte
//                       (a second line, NUL) or whitespace.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

// Writes `secret` and a newline to `path` with mode 0600, atomically (a
// hidden temporary in the same directory, then rename): readers never see
// a partial or world-readable file. kInvalidArgument if `secret` is empty;
// kInternal (naming the file) on an I/O error, leaving no temporary behind.
absl::Status WriteSecretFile(const std::string& path, absl::string_view secret);

// 32 bytes from the kernel's CSPRNG (getrandom), as 64 lower-case hex
// digits. kInternal if the kernel gives no randomness.
absl::StatusOr<std::string> GenerateToken();

// Shortest token ResolveToken accepts, in bytes (128 bits as hex).
inline constexpr size_t kMinTokenBytes = 32;

// The token a binary uses, from its flags and environment:
//   `token_flag_given` (--FLAG VALUE was on the command line) ->
//       kInvalidArgument, saying to use --FLAG-file or $ENV (`flag` and
//       `env` name them: "token" and "RISTRETTO_TOKEN" unless given);
//   `token_file` non-empty -> ReadSecretFile(token_file) (wins over the
//       environment: the explicit flag is what the operator meant);
//   `env_value` non-null and non-empty -> it;
//   otherwise "" (no token configured).
// A token read is kInvalidArgument (naming the file or variable, never the
// value) when shorter than kMinTokenBytes or holding a space, a control
// byte or a byte >= 0x7f: it would be guessable, or could not be presented
// as a bearer credential.
absl::StatusOr<std::string> ResolveToken(
    bool token_flag_given, const std::string& token_file, const char* env_value,
    absl::string_view flag = "token",
    absl::string_view env = "RISTRETTO_TOKEN");

// True when the libpq connection string `dsn` carries a password: a
// `password` keyword in the key = value form, or in a postgresql:// or
// postgres:// URI either "user:password@" in the authority or a
// "password=" query parameter. Conservative: a "password=" inside another
// keyword's quoted value also counts.
bool DsnHasPassword(absl::string_view dsn);

// kInvalidArgument when `dsn`, given on the command line as `--<flag>`,
// carries a password (DsnHasPassword). The one-line message never contains
// the password; it says to put the password in ~/.pgpass or $PGPASSFILE
// (or $PGPASSWORD), or the whole DSN in $RISTRETTO_DB.
absl::Status RefuseDsnPasswordOnCommandLine(absl::string_view dsn,
                                            absl::string_view flag);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_SECRET_FILE_H_
