// The one way tests read ristretto's log lines (common/log.h format:
// "Lyyyymmdd hh:mm:ss.uuuuuu TID FILE:LINE] MESSAGE"). Header-only so that
// unit and integration tests use it without a library.
#ifndef RISTRETTO_TESTS_COMMON_LOG_LINES_H_
#define RISTRETTO_TESTS_COMMON_LOG_LINES_H_

#include <chrono>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ristretto::tests {

struct LogLine {
  char severity = '?';    // 'I', 'W' or 'E'
  std::string timestamp;  // "yyyymmdd hh:mm:ss.uuuuuu"
  std::string file;       // base name, e.g. "run_host.cc"
  int line = 0;
  std::string message;
};

// Parses one line; std::nullopt when it is not a log line (e.g. a child
// process's own output on the same stream).
inline std::optional<LogLine> ParseLogLine(const std::string& text) {
  static const std::regex kLine(
      R"(^([IWE])(\d{8} \d{2}:\d{2}:\d{2}\.\d{6}) +\d+ ([^ :]+):(\d+)\] (.*)$)");
  std::smatch m;
  if (!std::regex_match(text, m, kLine)) return std::nullopt;
  LogLine line;
  line.severity = m[1].str()[0];
  line.timestamp = m[2].str();
  line.file = m[3].str();
  line.line = std::stoi(m[4].str());
  line.message = m[5].str();
  return line;
}

// Every log line of `text` (a process's captured stderr, a log file), in
// order; other lines are skipped.
inline std::vector<LogLine> ParseLogLines(const std::string& text) {
  std::vector<LogLine> lines;
  std::istringstream in(text);
  std::string row;
  while (std::getline(in, row)) {
    if (auto line = ParseLogLine(row)) lines.push_back(std::move(*line));
  }
  return lines;
}

// The first log line whose message contains `needle` (and has `severity`
// unless it is 0), or std::nullopt.
inline std::optional<LogLine> FindLogLine(const std::string& text,
                                          const std::string& needle,
                                          char severity = 0) {
  for (LogLine& line : ParseLogLines(text)) {
    if (severity != 0 && line.severity != severity) continue;
    if (line.message.find(needle) != std::string::npos) return line;
  }
  return std::nullopt;
}

// The HOST:PORT a server announced with "listening on HOST:PORT" in `text`
// (as a log line's message, or a plain line of its stdout), the first one;
// "" if none.
inline std::string ListeningAddress(const std::string& text) {
  static const std::regex kListening(R"(^listening on (\S+))");
  std::istringstream in(text);
  std::string row;
  while (std::getline(in, row)) {
    std::string message = row;
    if (auto line = ParseLogLine(row)) message = line->message;
    std::smatch m;
    if (std::regex_search(message, m, kListening)) return m[1].str();
  }
  return "";
}

// Waits up to `timeout` for a process (common/subprocess.h's Subprocess:
// Log(), running()) to announce its address; "" on timeout or exit.
template <typename Process>
std::string WaitForListeningAddress(Process& process,
                                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::string address = ListeningAddress(process.Log());
    if (!address.empty()) return address;
    if (!process.running() || std::chrono::steady_clock::now() > deadline) {
      return ListeningAddress(process.Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace ristretto::tests

#endif  // RISTRETTO_TESTS_COMMON_LOG_LINES_H_
