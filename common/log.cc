#include "common/log.h"

#include <glog/logging.h>

#include <mutex>
#include <string>

#include "absl/strings/str_format.h"

namespace ristretto::log {
namespace {

google::LogSeverity ToGlog(Severity severity) {
  switch (severity) {
    case Severity::kWARNING:
      return google::GLOG_WARNING;
    case Severity::kERROR:
      return google::GLOG_ERROR;
    case Severity::kINFO:
      break;
  }
  return google::GLOG_INFO;
}

// Settings that hold with or without Init: every line on stderr, none in
// files, the year in the prefix.
void ConfigureFlags() {
  FLAGS_logtostderr = true;
  FLAGS_alsologtostderr = false;
  FLAGS_stderrthreshold = google::GLOG_INFO;
  FLAGS_log_year_in_prefix = true;
  FLAGS_colorlogtostderr = false;
}

std::once_flag init_once;

// Configures the flags and initialises glog once per process; a process
// whose main() did not call Init (a test, a tool) gets `argv0` "ristretto"
// at its first line, so glog never prints its "Logging before
// InitGoogleLogging()" notice.
void InitOnce(const char* argv0) {
  std::call_once(init_once, [argv0] {
    ConfigureFlags();
    if (!google::IsGoogleLoggingInitialized()) {
      google::InitGoogleLogging(argv0);
    }
  });
}

}  // namespace

void Init(const char* argv0) {
  InitOnce(argv0 != nullptr ? argv0 : "ristretto");
}

std::string SanitizeMessage(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (out.size() >= kMaxMessageBytes) {
      absl::StrAppendFormat(&out, "...(%d bytes)", message.size());
      return out;
    }
    if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", byte);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

namespace internal {

Line::~Line() {
  InitOnce("ristretto");
  google::LogMessage(file_, line_, ToGlog(severity_)).stream()
      << SanitizeMessage(stream_.str());
}

}  // namespace internal
}  // namespace ristretto::log
