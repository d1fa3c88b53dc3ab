#include "common/runtime_policy.h"

#include <malloc.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace ristretto {
namespace {

TEST(RuntimePolicyTest, RolesShareTheAllocatorAndTheActorGetsOneThread) {
  for (ProcessRole role : {ProcessRole::kTrainer, ProcessRole::kLearner,
                           ProcessRole::kActor, ProcessRole::kBench}) {
    const RuntimePolicy p = RuntimePolicyFor(role);
    EXPECT_EQ(p.role, role);
    EXPECT_EQ(p.mmap_threshold_bytes, kMmapThresholdBytes)
        << ProcessRoleName(role);
    EXPECT_EQ(p.trim_threshold_bytes, kTrimThresholdBytes)
        << ProcessRoleName(role);
    EXPECT_EQ(p.torch_inter_op_threads, 1) << ProcessRoleName(role);
    const bool actor = role == ProcessRole::kActor;
    EXPECT_EQ(p.blas_threads, actor ? 1 : 0) << ProcessRoleName(role);
    EXPECT_EQ(p.torch_intra_op_threads, actor ? 1 : 0) << ProcessRoleName(role);
  }
  EXPECT_STREQ(ProcessRoleName(ProcessRole::kActor), "actor");
}

// Blocks below the mmap threshold come from the heap once the policy is
// applied (glibc's default would mmap a 4 MiB block); larger ones are
// still mmapped. mallinfo2().hblks counts the mmapped blocks in use.
TEST(RuntimePolicyTest, ApplyKeepsMultiMegabyteBlocksOffMmap) {
  const AppliedRuntimePolicy applied =
      ApplyRuntimePolicy(RuntimePolicyFor(ProcessRole::kLearner));
  EXPECT_TRUE(applied.allocator_set);
  const size_t before = mallinfo2().hblks;
  void* small = std::malloc(4 << 20);
  void* medium = std::malloc(16 << 20);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(medium, nullptr);
  EXPECT_EQ(mallinfo2().hblks, before);
  void* large = std::malloc(48 << 20);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(mallinfo2().hblks, before + 1);
  std::free(large);
  std::free(medium);
  std::free(small);
}

// This test binary has no OpenBLAS: asking for BLAS threads is a no-op
// that says so, and nothing fails.
TEST(RuntimePolicyTest, NoOpenBlasIsReportedNotFatal) {
  const RuntimePolicy policy = RuntimePolicyFor(ProcessRole::kActor);
  const AppliedRuntimePolicy applied = ApplyRuntimePolicy(policy);
  EXPECT_EQ(applied.blas_threads, -1);
  EXPECT_EQ(OpenBlasThreads(), -1);
  EXPECT_NE(applied.note.find("no OpenBLAS"), std::string::npos);
  const std::string text = DescribeRuntimePolicy(policy, applied);
  EXPECT_NE(text.find("runtime policy actor"), std::string::npos) << text;
  EXPECT_NE(text.find("32/64 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("OpenBLAS threads n/a"), std::string::npos) << text;
}

TEST(RuntimePolicyTest, EnvironmentSwitchTurnsItOff) {
  ASSERT_EQ(setenv(kRuntimePolicyEnv, "off", 1), 0);
  EXPECT_TRUE(RuntimePolicyDisabled());
  const RuntimePolicy policy = RuntimePolicyFor(ProcessRole::kTrainer);
  const AppliedRuntimePolicy applied = ApplyRuntimePolicy(policy);
  EXPECT_TRUE(applied.disabled);
  EXPECT_FALSE(applied.allocator_set);
  const std::string text = DescribeRuntimePolicy(policy, applied);
  EXPECT_NE(text.find("trainer: off (RISTRETTO_RUNTIME_POLICY=off)"),
            std::string::npos)
      << text;
  ASSERT_EQ(setenv(kRuntimePolicyEnv, "on", 1), 0);
  EXPECT_FALSE(RuntimePolicyDisabled());
  EXPECT_FALSE(ApplyRuntimePolicy(policy).disabled);
  ASSERT_EQ(unsetenv(kRuntimePolicyEnv), 0);
  EXPECT_FALSE(RuntimePolicyDisabled());
}

TEST(RuntimePolicyTest, ZeroThresholdsLeaveTheAllocatorAlone) {
  RuntimePolicy policy;
  EXPECT_TRUE(ApplyRuntimePolicy(policy).allocator_set);
  EXPECT_TRUE(SetAllocatorThresholds(0, 0));
}

}  // namespace
}  // namespace ristretto
