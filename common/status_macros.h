// Status propagation macros. Debian's Abseil (20220623) ships neither
// absl/log nor RETURN_IF_ERROR, so ristretto keeps this one small header.
#ifndef RISTRETTO_COMMON_STATUS_MACROS_H_
#define RISTRETTO_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RISTRETTO_CONCAT_INNER_(a, b) a##b
#define RISTRETTO_CONCAT_(a, b) RISTRETTO_CONCAT_INNER_(a, b)

// Returns `expr` from the current function if it is not OK.
// NOLINTBEGIN(bugprone-macro-parentheses): `lhs` is a declaration.
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    ::absl::Status ristretto_status_ = (expr);             \
    if (!ristretto_status_.ok()) return ristretto_status_; \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, F())` declares x from a StatusOr or returns its
// error status.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  ASSIGN_OR_RETURN_IMPL_(RISTRETTO_CONCAT_(statusor_, __LINE__), lhs, rexpr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                           \
  if (!statusor.ok()) return statusor.status();      \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace ristretto {

// Returns `status` with `context` prepended to its message, same code.
inline absl::Status Annotate(const absl::Status& status,
                             absl::string_view context) {
  if (status.ok()) return status;
  std::string message(context);
  message.append(": ");
  message.append(status.message().data(), status.message().size());
  return absl::Status(status.code(), message);
}

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_STATUS_MACROS_H_
