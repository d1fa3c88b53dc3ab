// The one logging facility of ristretto's processes: glog underneath, one
// line per message in glog's stable format with the year,
//
//   Lyyyymmdd hh:mm:ss.uuuuuu TID FILE:LINE] MESSAGE
//
// L is I (info), W (warning) or E (error); TID is the thread id; FILE is
// the source file's base name. Tests read these lines through one helper
// (tests/common/log_lines.h), scripts grep MESSAGE texts.
//
// Use:  RLOG(INFO) << "listening on " << address;
//       RLOG(WARNING) << ...;   RLOG(ERROR) << ...;
// and call ristretto::log::Init(argv[0]) once, first thing in main().
//
// A message is one line: control bytes (newline, carriage return, escape,
// ...) are written as \xNN so that neither a stray newline nor a hostile
// value can forge or split a line, and a message longer than
// kMaxMessageBytes is cut and says how long it was.
//
// Why a wrapper rather than glog's LOG() in the code: this header does not
// include <glog/logging.h>. LibTorch builds without glog (the CUDA 2.x
// wheels) define their own LOG() macros in c10/util/Logging.h, which would
// clash with glog's in every file that includes both; RLOG never clashes.
// No FATAL severity: errors are absl::Status values, never aborts.
//
// Thread-safety: RLOG may be used from any thread once Init has returned
// (before Init, lines still go to stderr in the same format).
#ifndef RISTRETTO_COMMON_LOG_H_
#define RISTRETTO_COMMON_LOG_H_

#include <cstddef>
#include <sstream>
#include <string>

namespace ristretto::log {

enum class Severity { kINFO, kWARNING, kERROR };

// The longest message written whole; a longer one is cut and gets
// "...(N bytes)" appended.
inline constexpr size_t kMaxMessageBytes = 4096;

// Sends every severity to stderr only (no log files), with the year in the
// prefix. Idempotent; `argv0` names the program in glog's own messages.
void Init(const char* argv0);

// `message` as written on the line: control bytes escaped, capped. Exposed
// for tests.
std::string SanitizeMessage(const std::string& message);

namespace internal {

// One message: collects the streamed text, writes it when destroyed (at the
// end of the RLOG statement).
class Line {
 public:
  Line(Severity severity, const char* file, int line)
      : severity_(severity), file_(file), line_(line) {}
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  ~Line();

  std::ostream& stream() { return stream_; }

 private:
  Severity severity_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

}  // namespace internal
}  // namespace ristretto::log

#define RLOG(severity)                                                      \
  ::ristretto::log::internal::Line(::ristretto::log::Severity::k##severity, \
                                   __FILE__, __LINE__)                      \
      .stream()

#endif  // RISTRETTO_COMMON_LOG_H_
