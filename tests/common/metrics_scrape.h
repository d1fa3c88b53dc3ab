// Test helpers for /metrics endpoints: an HTTP GET over a plain socket (no
// curl needed) and a parser for the samples of Prometheus's text format.
#ifndef RISTRETTO_TESTS_COMMON_METRICS_SCRAPE_H_
#define RISTRETTO_TESTS_COMMON_METRICS_SCRAPE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ristretto::testing {

// GET http://127.0.0.1:`port``path` (HTTP/1.0, 5 s timeouts). Returns the
// body of a 200 response; nullopt if the connection fails or the status is
// not 200.
inline std::optional<std::string> HttpGet(
    int port, const std::string& path = "/metrics") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return std::nullopt;
  }
  const std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (send(fd, request.data(), request.size(), 0) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string response;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) {
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || body == std::string::npos ||
      response.compare(9, 3, "200") != 0) {
    return std::nullopt;
  }
  return response.substr(body + 4);
}

// One sample line: name{labels} value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Every sample of a text-format exposition (comments skipped).
inline std::vector<Sample> ParseSamples(const std::string& text) {
  std::vector<Sample> samples;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size()) break;
        const std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;  // past ="
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // past }
    }
    s.value = std::strtod(line.c_str() + i, nullptr);
    samples.push_back(std::move(s));
  }
  return samples;
}

// The value of the sample named `name` whose labels are exactly `labels`;
// nullopt if there is none.
inline std::optional<double> SampleValue(
    const std::string& text, const std::string& name,
    const std::map<std::string, std::string>& labels = {}) {
  for (const Sample& s : ParseSamples(text)) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nullopt;
}

// Whether some sample is named `name` (any labels).
inline bool HasSample(const std::string& text, const std::string& name) {
  for (const Sample& s : ParseSamples(text)) {
    if (s.name == name) return true;
  }
  return false;
}

}  // namespace ristretto::testing

#endif  // RISTRETTO_TESTS_COMMON_METRICS_SCRAPE_H_
