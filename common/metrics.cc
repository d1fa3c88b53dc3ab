#include "common/metrics.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/summary.h"
#include "prometheus/text_serializer.h"

namespace ristretto {

absl::StatusOr<std::optional<int>> ParseMetricsPort(absl::string_view flag) {
  if (flag == "auto") return std::optional<int>(0);
  int port = -1;
  if (!absl::SimpleAtoi(flag, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-port must be 0 (off), 'auto' (any free port) "
                     "or a port in [1, 65535], not '",
                     flag, "'"));
  }
  if (port == 0) return std::optional<int>();
  return std::optional<int>(port);
}

int64_t ResidentMemoryBytes() {
  std::ifstream in("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (!(in >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Gauges whose values are computed at scrape time. Callbacks with the same
// name form one family.
class MetricsServer::CallbackGauges final : public prometheus::Collectable {
 public:
  void Add(std::string name, std::string help,
           std::map<std::string, std::string> labels,
           std::function<double()> value) {
    absl::MutexLock lock(&mu_);
    entries_.push_back(Entry{std::move(name), std::move(help),
                             std::move(labels), std::move(value)});
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    absl::MutexLock lock(&mu_);
    std::vector<prometheus::MetricFamily> families;
    std::map<std::string, size_t> index;
    for (const Entry& e : entries_) {
      auto [it, added] = index.emplace(e.name, families.size());
      if (added) {
        prometheus::MetricFamily family;
        family.name = e.name;
        family.help = e.help;
        family.type = prometheus::MetricType::Gauge;
        families.push_back(std::move(family));
      }
      prometheus::ClientMetric metric;
      for (const auto& [label, value] : e.labels) {
        metric.label.push_back({label, value});
      }
      metric.gauge.value = e.value();
      families[it->second].metric.push_back(std::move(metric));
    }
    return families;
  }

 private:
  struct Entry {
    std::string name;
    std::string help;
    std::map<std::string, std::string> labels;
    std::function<double()> value;
  };
  mutable absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

MetricsServer::MetricsServer(const MetricsOptions& options)
    : options_(options),
      registry_(std::make_shared<prometheus::Registry>()),
      callbacks_(std::make_shared<CallbackGauges>()) {}

MetricsServer::~MetricsServer() {
  if (thread_.joinable()) {
    const char byte = 1;
    [[maybe_unused]] ssize_t n = write(wake_pipe_[1], &byte, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_pipe_[0], wake_pipe_[1]}) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Create(
    const MetricsOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", options.port, " is not in [0, 65535]"));
  }
  if (options.service.empty()) {
    return absl::InvalidArgumentError("the metrics service name is empty");
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer(options));
  const std::string bind_address =
      absl::StrCat(options.address, ":", options.port);

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(options.port);
  if (const int r =
          getaddrinfo(options.address.c_str(), port.c_str(), &hints, &found);
      r != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot serve metrics on ", bind_address, ": ", gai_strerror(r)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 16) != 0) {
      error = std::strerror(errno);
      close(fd);
      continue;
    }
    server->listen_fd_ = fd;
    break;
  }
  freeaddrinfo(found);
  if (server->listen_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", bind_address, ": ", error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(server->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  server->port_ = ntohs(bound.ss_family == AF_INET6
                            ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (pipe2(server->wake_pipe_, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe2() failed");
  }

  // prometheus-cpp's Exposer exports these; keep them for dashboards.
  prometheus::Registry& r = *server->registry_;
  server->scrapes_ = &prometheus::BuildCounter()
                          .Name("exposer_scrapes_total")
                          .Help("Number of times metrics were scraped")
                          .Register(r)
                          .Add({});
  server->transferred_bytes_ =
      &prometheus::BuildCounter()
           .Name("exposer_transferred_bytes_total")
           .Help("Transferred bytes to metrics services")
           .Register(r)
           .Add({});
  server->latencies_ =
      &prometheus::BuildSummary()
           .Name("exposer_request_latencies")
           .Help("Latencies of serving scrape requests, in microseconds")
           .Register(r)
           .Add({}, prometheus::Summary::Quantiles{
                        {0.5, 0.05}, {0.9, 0.01}, {0.99, 0.001}});
  server->AddGaugeCallback(
      "ristretto_process_resident_memory_bytes",
      "Resident set size of the process (from /proc/self/statm).",
      {{"service", options.service}},
      [] { return static_cast<double>(ResidentMemoryBytes()); });
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

std::string MetricsServer::address() const {
  return absl::StrCat(options_.address, ":", port_);
}

void MetricsServer::AddCollectable(
    std::shared_ptr<prometheus::Collectable> collectable) {
  absl::MutexLock lock(&mu_);
  collectables_.push_back(std::move(collectable));
}

void MetricsServer::AddGaugeCallback(const std::string& name,
                                     const std::string& help,
                                     std::map<std::string, std::string> labels,
                                     std::function<double()> value) {
  callbacks_->Add(name, help, std::move(labels), std::move(value));
}

void MetricsServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;  // the destructor asks us to stop
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int connection = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    Answer(connection);
    close(connection);
  }
}

std::string MetricsServer::Exposition() {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  {
    absl::MutexLock lock(&mu_);
    collectables = collectables_;
  }
  collectables.insert(collectables.begin(), callbacks_);
  for (const auto& c : collectables) {
    std::vector<prometheus::MetricFamily> more = c->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  return prometheus::TextSerializer().Serialize(families);
}

void MetricsServer::Answer(int connection) {
  const auto started = std::chrono::steady_clock::now();
  timeval read_timeout{2, 0}, write_timeout{5, 0};
  setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &read_timeout,
             sizeof(read_timeout));
  setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &write_timeout,
             sizeof(write_timeout));
  // The request head only; a scrape has no body.
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.find("\n\n") == std::string::npos && request.size() < 16384) {
    const ssize_t n = recv(connection, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  const size_t line_end = request.find_first_of("\r\n");
  const std::string line = request.substr(0, line_end);
  const size_t space = line.find(' ');
  const std::string method = line.substr(0, space);
  std::string target =
      space == std::string::npos
          ? ""
          : line.substr(space + 1, line.find(' ', space + 1) - space - 1);
  target = target.substr(0, target.find('?'));

  std::string status = "200 OK", body;
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    status = "405 Method Not Allowed";
    body = "only GET /metrics\n";
  } else if (target != "/metrics") {
    status = "404 Not Found";
    body = "metrics are at /metrics\n";
  } else {
    body = Exposition();
  }
  const std::string response = absl::StrCat(
      "HTTP/1.1 ", status,
      "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"
      "\r\nContent-Length: ",
      body.size(), "\r\nConnection: close\r\n\r\n", head ? "" : body);
  size_t sent = 0;
  while (sent < response.size()) {
    const ssize_t n = send(connection, response.data() + sent,
                           response.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  if (status[0] == '2') {
    scrapes_->Increment();
    transferred_bytes_->Increment(static_cast<double>(sent));
    latencies_->Observe(std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - started)
                            .count());
  }
}

absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(
    absl::string_view port_flag, const std::string& address,
    const std::string& service) {
  absl::StatusOr<std::optional<int>> port = ParseMetricsPort(port_flag);
  if (!port.ok()) return port.status();
  if (!port->has_value()) return std::unique_ptr<MetricsServer>();
  MetricsOptions options;
  options.address = address;
  options.port = **port;
  options.service = service;
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Create(options);
  if (!server.ok()) return server.status();
  std::printf("metrics on %s\n", (*server)->address().c_str());
  std::fflush(stdout);
  return server;
}

}  // namespace ristretto
