// Helpers of the process-level tests: summary fields read from a process's
// log ("learner: run run-0 version=3 received=… score=0.12") and a free TCP
// port on 127.0.0.1.
#ifndef RISTRETTO_TESTS_INTEGRATION_LOG_FIELDS_H_
#define RISTRETTO_TESTS_INTEGRATION_LOG_FIELDS_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>

#include "absl/strings/numbers.h"

namespace ristretto::testing {

// The text of `key=<value>` on the first line of `log` that contains
// `line_marker` (the key at the marker or after a space); nullopt if absent.
inline std::optional<std::string> FieldText(const std::string& log,
                                            const std::string& line_marker,
                                            const std::string& key) {
  const size_t pos = log.find(line_marker);
  if (pos == std::string::npos) return std::nullopt;
  const size_t end = log.find('\n', pos);
  const std::string line = log.substr(pos, end - pos);
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("(?:^| )" + key + "=([^ ]+)"))) {
    return std::nullopt;
  }
  return m[1].str();
}

// `key=<integer>` as FieldText; -1 if absent or not an integer.
inline int64_t Field(const std::string& log, const std::string& line_marker,
                     const std::string& key) {
  const std::optional<std::string> text = FieldText(log, line_marker, key);
  int64_t v = 0;
  return text.has_value() && absl::SimpleAtoi(*text, &v) ? v : -1;
}

// `key=<number>` as FieldText; NaN if absent or not a number.
inline double DoubleField(const std::string& log,
                          const std::string& line_marker,
                          const std::string& key) {
  const std::optional<std::string> text = FieldText(log, line_marker, key);
  double v = 0;
  return text.has_value() && absl::SimpleAtod(*text, &v) ? v : std::nan("");
}

// A TCP port on 127.0.0.1 that was free a moment ago (0 on failure).
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return 0;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace ristretto::testing

#endif  // RISTRETTO_TESTS_INTEGRATION_LOG_FIELDS_H_
