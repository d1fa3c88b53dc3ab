// The one way tests read ristretto's log lines (common/log.h format:
// "Lyyyymmdd hh:mm:ss.uuuuuu TID FILE:LINE] MESSAGE"). Header-only so that
// unit and integration tests use it without a library.
#ifndef RISTRETTO_TESTS_COMMON_LOG_LINES_H_
#define RISTRETTO_TESTS_COMMON_LOG_LINES_H_

#include <optional>
#include <regex>
#include <sstream>
#include <string>
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

}  // namespace ristretto::tests

#endif  // RISTRETTO_TESTS_COMMON_LOG_LINES_H_
