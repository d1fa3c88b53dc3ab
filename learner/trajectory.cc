#include "learner/trajectory.h"

#include <cmath>
#include <cstddef>

#include "absl/strings/str_cat.h"

namespace ristretto::learner {
namespace {

// Chunks beyond 2^40 elements per array are refused before any product can
// overflow int64 (each factor is an int, so a·b fits, then we bound it).
constexpr int64_t kMaxElements = int64_t{1} << 40;

absl::Status CheckSize(const char* field, size_t actual, int64_t expected,
                       const std::string& shape) {
  if (static_cast<int64_t>(actual) == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("chunk ", field, " has ",
                                                 actual, " elements but ",
                                                 shape, " = ", expected));
}

// Returns a·b·c or -1 if it exceeds kMaxElements; all factors are >= 1.
int64_t Product(int64_t a, int64_t b, int64_t c) {
  const int64_t ab = a * b;  // both < 2^32: fits
  if (ab > kMaxElements || c > kMaxElements / ab) return -1;
  return ab * c;
}

// First non-finite value of a [rows * copies * width] array, described by
// `where(i)`; OK if all are finite.
template <typename Where>
absl::Status CheckFinite(const char* field, const std::vector<float>& v,
                         Where where) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk ", field, "[", i, "] (",
                       where(static_cast<int64_t>(i)), ") is ", v[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t TrajectoryChunk::num_dones() const {
  int64_t n = 0;
  for (uint8_t d : dones) n += d != 0 ? 1 : 0;
  return n;
}

absl::Status TrajectoryChunk::Validate() const {
  struct Dim {
    const char* name;
    int v;
  };
  for (const Dim& d :
       {Dim{"steps", steps}, Dim{"copies", copies}, Dim{"obs_size", obs_size},
        Dim{"action_size", action_size}}) {
    if (d.v < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk ", d.name, " = ", d.v, " must be >= 1"));
    }
  }
  if (policy_version < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk policy_version = ", policy_version, " must be >= 0"));
  }
  const int64_t t = steps;
  const int64_t b = copies;
  const int64_t d = obs_size;
  const int64_t a = action_size;
  const int64_t obs_elements = Product(t + 1, b, d);
  const int64_t action_elements = Product(t, b, a);
  if (obs_elements < 0 || action_elements < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk of ", t, " steps * ", b, " copies * (", d, " obs, ",
                     a, " actions) is too large"));
  }
  absl::Status s = CheckSize("obs", obs.size(), obs_elements,
                             "(steps + 1) * copies * obs_size");
  if (!s.ok()) return s;
  s = CheckSize("actions", actions.size(), action_elements,
                "steps * copies * action_size");
  if (!s.ok()) return s;
  s = CheckSize("log_probs", log_probs.size(), t * b, "steps * copies");
  if (!s.ok()) return s;
  s = CheckSize("rewards", rewards.size(), t * b, "steps * copies");
  if (!s.ok()) return s;
  s = CheckSize("dones", dones.size(), t * b, "steps * copies");
  if (!s.ok()) return s;
  for (size_t i = 0; i < dones.size(); ++i) {
    if (dones[i] > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk dones[", i, "] (step ", static_cast<int64_t>(i) / b, ", copy ",
          static_cast<int64_t>(i) % b, ") is ", int{dones[i]}, ", not 0 or 1"));
    }
  }
  const int64_t n_dones = num_dones();
  // n_dones <= steps·copies < 2^32 and d < 2^31: the product fits.
  s = CheckSize("final_obs", final_obs.size(), n_dones * d,
                absl::StrCat("num_dones (", n_dones, ") * obs_size"));
  if (!s.ok()) return s;

  auto step_copy = [b](int64_t i) {
    return absl::StrCat("step ", i / b, ", copy ", i % b);
  };
  auto step_copy_element = [b](int64_t width) {
    return [b, width](int64_t i) {
      const int64_t row = i / width;
      return absl::StrCat("step ", row / b, ", copy ", row % b, ", element ",
                          i % width);
    };
  };
  s = CheckFinite("obs", obs, step_copy_element(d));
  if (!s.ok()) return s;
  s = CheckFinite("actions", actions, step_copy_element(a));
  if (!s.ok()) return s;
  s = CheckFinite("log_probs", log_probs, step_copy);
  if (!s.ok()) return s;
  s = CheckFinite("rewards", rewards, step_copy);
  if (!s.ok()) return s;
  return CheckFinite("final_obs", final_obs, [d](int64_t i) {
    return absl::StrCat("done ", i / d, ", element ", i % d);
  });
}

}  // namespace ristretto::learner
