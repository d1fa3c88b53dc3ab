// Helpers of the process-level tests: summary fields read from a process's
// log ("learner: run run-0 version=3 received=… score=0.12") and the port a
// server announced.
#ifndef RISTRETTO_TESTS_INTEGRATION_LOG_FIELDS_H_
#define RISTRETTO_TESTS_INTEGRATION_LOG_FIELDS_H_

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>

#include "absl/strings/numbers.h"
#include "tests/common/log_lines.h"

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

// The port a server announced ("listening on HOST:PORT", see
// tests/common/log_lines.h) within `timeout`; 0 if it did not. Servers are
// started with --port 0 and tests read the port from here: a port picked
// free beforehand can be taken by another process (ctest -j, a client's
// ephemeral port) before the server binds it.
template <typename Process>
int ListeningPort(Process& process, std::chrono::milliseconds timeout =
                                        std::chrono::seconds(60)) {
  const std::string address =
      ::ristretto::tests::WaitForListeningAddress(process, timeout);
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return 0;
  }
  return port;
}

}  // namespace ristretto::testing

#endif  // RISTRETTO_TESTS_INTEGRATION_LOG_FIELDS_H_
