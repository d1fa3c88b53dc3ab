// Test helper: a real child process (common/subprocess.h) under the name the
// integration tests use.
#ifndef RISTRETTO_TESTS_INTEGRATION_PROCESS_H_
#define RISTRETTO_TESTS_INTEGRATION_PROCESS_H_

#include "common/subprocess.h"

namespace ristretto::testing {

using Process = ::ristretto::Subprocess;

}  // namespace ristretto::testing

#endif  // RISTRETTO_TESTS_INTEGRATION_PROCESS_H_
