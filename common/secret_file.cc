#include "common/secret_file.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/text_util.h"
#include "common/unique_fd.h"

namespace ristretto {
namespace {

std::string Quoted(const std::string& path) { return EscapeForMessage(path); }

// The password keyword in libpq's key = value form: "password" at the start
// or after whitespace, then optional whitespace and '='.
bool KeyValueHasPassword(absl::string_view dsn) {
  constexpr absl::string_view kKey = "password";
  size_t pos = 0;
  while ((pos = dsn.find(kKey, pos)) != absl::string_view::npos) {
    const bool starts =
        pos == 0 ||
        absl::ascii_isspace(static_cast<unsigned char>(dsn[pos - 1])) ||
        dsn[pos - 1] == '\'';
    size_t i = pos + kKey.size();
    while (i < dsn.size() &&
           absl::ascii_isspace(static_cast<unsigned char>(dsn[i]))) {
      ++i;
    }
    if (starts && i < dsn.size() && dsn[i] == '=') return true;
    pos += kKey.size();
  }
  return false;
}

bool UriHasPassword(absl::string_view dsn, size_t authority) {
  const size_t end = dsn.find_first_of("/?#", authority);
  const absl::string_view host_part = dsn.substr(
      authority, end == absl::string_view::npos ? absl::string_view::npos
                                                : end - authority);
  const size_t at = host_part.rfind('@');
  if (at != absl::string_view::npos &&
      host_part.substr(0, at).find(':') != absl::string_view::npos) {
    return true;
  }
  const size_t query = dsn.find('?', authority);
  if (query == absl::string_view::npos) return false;
  size_t param = query + 1;
  while (param < dsn.size()) {
    if (absl::StartsWith(dsn.substr(param), "password=")) return true;
    const size_t next = dsn.find('&', param);
    if (next == absl::string_view::npos) break;
    param = next + 1;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not hang; fstat then refuses it.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    return absl::NotFoundError(absl::StrCat(
        "cannot open secret file ", Quoted(path), ": ", std::strerror(errno)));
  }
  struct stat st = {};
  if (fstat(fd.get(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "cannot stat secret file ", Quoted(path), ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("secret file ", Quoted(path), " is not a regular file"));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "secret file %s has mode %04o: group or others may read it; "
        "chmod 600 it",
        Quoted(path), st.st_mode & 07777));
  }
  if (st.st_size > static_cast<off_t>(kMaxSecretFileBytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret file ", Quoted(path), " has ", st.st_size,
                     " bytes; a secret is at most ", kMaxSecretFileBytes));
  }
  std::string text;
  std::array<char, 1024> buffer{};
  while (text.size() <= kMaxSecretFileBytes) {
    const ssize_t n = read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::NotFoundError(absl::StrCat("cannot read secret file ",
                                              Quoted(path), ": ",
                                              std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buffer.data(), static_cast<size_t>(n));
  }
  if (text.size() > kMaxSecretFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret file ", Quoted(path), " has more than ",
                     kMaxSecretFileBytes, " bytes"));
  }
  if (absl::EndsWith(text, "\n")) text.pop_back();
  if (absl::EndsWith(text, "\r")) text.pop_back();
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret file ", Quoted(path), " is empty"));
  }
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte == 0x7f) {
      // The secret itself is never echoed, only where the bad byte is.
      return absl::InvalidArgumentError(absl::StrFormat(
          "secret file %s holds whitespace or a control byte (0x%02x) "
          "inside the secret; it must be one line without spaces",
          Quoted(path), byte));
    }
  }
  return text;
}

absl::Status WriteSecretFile(const std::string& path,
                             absl::string_view secret) {
  if (secret.empty()) {
    return absl::InvalidArgumentError("refusing to write an empty secret");
  }
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base =
      slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string temp = absl::StrCat(dir, ".", base, ".tmp.", getpid());
  const std::string content = absl::StrCat(secret, "\n");
  {
    // 0600 from creation (O_EXCL: never reuse a file someone else made):
    // the secret is never readable by others, not even briefly.
    UniqueFd fd(
        open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (fd.get() < 0) {
      return absl::InternalError(absl::StrCat("cannot create ", Quoted(temp),
                                              ": ", std::strerror(errno)));
    }
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n =
          write(fd.get(), content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string error = std::strerror(errno);
        unlink(temp.c_str());
        return absl::InternalError(
            absl::StrCat("cannot write ", Quoted(temp), ": ", error));
      }
      done += static_cast<size_t>(n);
    }
    // The umask cannot widen 0600, but fchmod makes the mode explicit.
    if (fchmod(fd.get(), 0600) != 0 || fsync(fd.get()) != 0) {
      const std::string error = std::strerror(errno);
      unlink(temp.c_str());
      return absl::InternalError(
          absl::StrCat("cannot finish ", Quoted(temp), ": ", error));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string error = std::strerror(errno);
    unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("cannot rename ", Quoted(temp),
                                            " to ", Quoted(path), ": ", error));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GenerateToken() {
  std::array<unsigned char, 32> bytes{};
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = getrandom(bytes.data() + done, bytes.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(
          absl::StrCat("getrandom failed: ", std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (const unsigned char b : bytes) absl::StrAppendFormat(&hex, "%02x", b);
  return hex;
}

absl::StatusOr<std::string> ResolveToken(bool token_flag_given,
                                         const std::string& token_file,
                                         const char* env_value,
                                         absl::string_view flag,
                                         absl::string_view env) {
  if (token_flag_given) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag,
                     " VALUE is refused: every local user can read it with ps; "
                     "use --",
                     flag, "-file FILE (mode 600) or $", env));
  }
  std::string token;
  std::string from;
  if (!token_file.empty()) {
    absl::StatusOr<std::string> read = ReadSecretFile(token_file);
    if (!read.ok()) return read.status();
    token = *std::move(read);
    from = token_file;
  } else if (env_value != nullptr) {
    token = env_value;
    from = absl::StrCat("$", env);
  }
  if (token.empty()) return token;
  // A guessable token opens every call it guards; one with spaces or
  // control bytes cannot be sent as a bearer credential at all.
  if (token.size() < kMinTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token in ", from, " is ", token.size(), " bytes; use at least ",
        kMinTokenBytes,
        " random ones (e.g. `openssl rand -hex 32`, as ristretto up and "
        "scripts/compose_up.sh make them)"));
  }
  for (const char c : token) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the token in ", from,
          " holds a space, control or non-ASCII byte; a token is printable "
          "ASCII (e.g. `openssl rand -hex 32`)"));
    }
  }
  return token;
}

bool DsnHasPassword(absl::string_view dsn) {
  // libpq's own parser first: it decides what the connection will use, so
  // every spelling it accepts counts (a percent-encoded key such as
  // ?%70assword=PW, a service-free alias, …). Only options written in the
  // string are returned, never defaults from the environment.
  const std::string text(dsn);
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(text.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options != nullptr) {
    bool has = false;
    for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
      if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr &&
          o->val[0] != '\0') {
        has = true;
      }
    }
    PQconninfoFree(options);
    if (has) return true;
  }
  // What libpq cannot parse is read as written (the connection will fail,
  // but the password must not reach ps either).
  for (const absl::string_view scheme : {"postgresql://", "postgres://"}) {
    if (absl::StartsWithIgnoreCase(dsn, scheme)) {
      return UriHasPassword(dsn, scheme.size());
    }
  }
  return KeyValueHasPassword(dsn);
}

absl::Status RefuseDsnPasswordOnCommandLine(absl::string_view dsn,
                                            absl::string_view flag) {
  if (!DsnHasPassword(dsn)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag,
      " carries a database password, which every local user can read with "
      "ps; drop it from the DSN and put it in ~/.pgpass or $PGPASSFILE (or "
      "$PGPASSWORD), or pass the whole DSN in $RISTRETTO_DB"));
}

}  // namespace ristretto
