// MetricsServer: one process's Prometheus endpoint. It serves GET /metrics
// (text format 0.0.4) on --metrics-address and --metrics-port from the
// process's prometheus-cpp Registry (components add their families to it and
// keep the Counter/Gauge/Histogram references they update) and from
// collectors evaluated on every scrape: the process's resident memory
// (ristretto_process_resident_memory_bytes{service}), gauges computed by
// callbacks, and any Collectable added (e.g. GPU telemetry). It also exports
// prometheus-cpp's usual exposer_scrapes_total,
// exposer_transferred_bytes_total and exposer_request_latencies.
// Names and labels: docs/metrics.md.
//
// The HTTP side is a small server of our own, not prometheus-cpp's Exposer:
// Debian's civetweb starts its threads with 100 KiB stacks, which cannot hold
// the static TLS of a process that links LibTorch (pthread_create fails with
// EINVAL in the learner and the actor).
//
// Threads: one server thread, owned (started and joined) by the server; it
// answers one connection at a time (2 s read and 5 s write timeouts), closing
// each after its response. Thread-safe: the registry, the metrics it holds
// and AddCollectable / AddGaugeCallback may be used from any thread;
// callbacks run on the server thread. Destroying the server stops serving
// first.
#ifndef RISTRETTO_COMMON_METRICS_H_
#define RISTRETTO_COMMON_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace prometheus {
class Collectable;
class Counter;
class Registry;
class Summary;
}  // namespace prometheus

namespace ristretto {

struct MetricsOptions {
  // Address the endpoint binds: all interfaces by default, so Prometheus
  // can reach it from another container, pod or machine.
  std::string address = "0.0.0.0";
  // TCP port; 0 = any free port (read it back with port()).
  int port = 0;
  // Value of the `service` label of the process metrics: "learner",
  // "actor" or "coordinator".
  std::string service;
};

// Parses a --metrics-port value. Returns nullopt for "0" (metrics off), 0
// for "auto" (any free port), the port for 1..65535. Errors:
// kInvalidArgument for anything else.
absl::StatusOr<std::optional<int>> ParseMetricsPort(absl::string_view flag);

// Resident set size of this process in bytes (/proc/self/statm); 0 if it
// cannot be read.
int64_t ResidentMemoryBytes();

class MetricsServer {
 public:
  // Binds and starts serving. Errors: kInvalidArgument for a port outside
  // [0, 65535], an empty service or an address that is not an IPv4/IPv6
  // literal or a resolvable name; kUnavailable when it cannot be bound
  // (port taken, no such interface).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Create(
      const MetricsOptions& options);
  ~MetricsServer();

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The registry served on /metrics; lives as long as the server.
  prometheus::Registry& registry() { return *registry_; }
  // The port actually bound, and "HOST:PORT" with the configured host.
  int port() const { return port_; }
  std::string address() const;
  const std::string& service() const { return options_.service; }

  // Serves `collectable` too (collected on every scrape); kept alive by
  // the server.
  void AddCollectable(std::shared_ptr<prometheus::Collectable> collectable);
  // A gauge `name`{labels} whose value is `value()` at scrape time.
  // `value` runs on an exposer thread and must be thread-safe and cheap.
  // Several callbacks may share a name (one series each).
  void AddGaugeCallback(const std::string& name, const std::string& help,
                        std::map<std::string, std::string> labels,
                        std::function<double()> value);

 private:
  class CallbackGauges;
  explicit MetricsServer(const MetricsOptions& options);
  void Serve();                 // the server thread
  void Answer(int connection);  // one request, then close
  std::string Exposition();     // every family, text format

  const MetricsOptions options_;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};  // written once by the destructor
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<CallbackGauges> callbacks_;
  prometheus::Counter* scrapes_ = nullptr;
  prometheus::Counter* transferred_bytes_ = nullptr;
  prometheus::Summary* latencies_ = nullptr;
  absl::Mutex mu_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_
      ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Main-file helper: parses `port_flag` (ParseMetricsPort) and starts a
// server on `address` for `service`, printing "metrics on HOST:PORT" to
// stdout once serving. Returns nullptr when the flag turns metrics off.
// Errors: as ParseMetricsPort and MetricsServer::Create.
absl::StatusOr<std::unique_ptr<MetricsServer>> StartMetricsServer(
    absl::string_view port_flag, const std::string& address,
    const std::string& service);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_METRICS_H_
