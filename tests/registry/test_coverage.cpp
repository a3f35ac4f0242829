// (b) No dead kernels: on a grid of configurations, evaluated per platform purely from
// LinearConfig (no GPU), every kernel of a priority list is chosen by default somewhere on its
// platform, a kernel whose accepted set lies inside those of the kernels above it fails, and
// every registered kernel is either chosen somewhere or marked override-only with a reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "grid.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16 {
namespace {

const Platform kPlatforms[] = {Platform::cpu, Platform::sm80, Platform::sm90};

struct PlatformStats {
  std::map<std::string, std::size_t> chosen;              // kernel -> configs chosen by default
  std::map<std::string, std::vector<std::size_t>> accepts;  // kernel -> indices of configs it accepts (forced)
  std::size_t configs = 0;
};

PlatformStats evaluate(Platform p) {
  PlatformStats s;
  std::vector<LinearConfig> grid = test::config_grid(p);
  s.configs = grid.size();
  SelectOptions o;
  o.read_environment = false;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const LinearConfig& c = grid[i];
    try {
      Decision d = choose(c, o);
      ++s.chosen[std::string(d.chosen->name())];
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    }
    for (const KernelEntry& k : all_kernels())
      if (test::forced_refusal(c, k.kernel->name()).empty()) s.accepts[std::string(k.kernel->name())].push_back(i);
  }
  return s;
}

const std::map<Platform, PlatformStats>& stats() {
  static const std::map<Platform, PlatformStats> s = [] {
    std::map<Platform, PlatformStats> m;
    for (Platform p : kPlatforms) m[p] = evaluate(p);
    return m;
  }();
  return s;
}

bool is_subset(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

TEST(Coverage, EveryListedKernelIsChosenOnItsPlatform) {
  for (Platform p : kPlatforms) {
    const PlatformStats& s = stats().at(p);
    std::vector<const Kernel*> list = priority_list(p);
    std::vector<std::size_t> above;  // union of the accepted sets of the kernels above
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string name(list[i]->name());
      auto it = s.accepts.find(name);
      std::vector<std::size_t> mine = it == s.accepts.end() ? std::vector<std::size_t>{} : it->second;
      for (std::size_t j = 0; j < i; ++j) {
        auto jt = s.accepts.find(std::string(list[j]->name()));
        if (jt != s.accepts.end() && !mine.empty() && is_subset(mine, jt->second))
          ADD_FAILURE() << platform_name(p) << ": " << name << " accepts a subset of the configurations of "
                        << list[j]->name() << ", which is above it: it can never be chosen (dead code); remove it "
                        << "from the list or mark it override-only with a reason";
      }
      EXPECT_GT(s.chosen.count(name) ? s.chosen.at(name) : 0u, 0u)
          << platform_name(p) << ": " << name << " is in the priority list but chosen on none of the " << s.configs
          << " grid configurations (it accepts " << mine.size() << ", all taken by kernels above it)";
      std::vector<std::size_t> u;
      std::set_union(above.begin(), above.end(), mine.begin(), mine.end(), std::back_inserter(u));
      above = std::move(u);
    }
  }
}

TEST(Coverage, EveryKernelIsChosenSomewhereOrOverrideOnly) {
  for (const KernelEntry& e : all_kernels()) {
    std::string name(e.kernel->name());
    std::size_t chosen = 0, accepted = 0;
    bool listed = false;
    for (Platform p : kPlatforms) {
      const PlatformStats& s = stats().at(p);
      if (s.chosen.count(name)) chosen += s.chosen.at(name);
      if (s.accepts.count(name)) accepted += s.accepts.at(name).size();
      for (const Kernel* k : priority_list(p)) listed = listed || k == e.kernel;
    }
    EXPECT_GT(accepted, 0u) << name << " accepts no configuration of the grid, not even when forced";
    if (e.override_only_reason.empty()) {
      EXPECT_TRUE(listed) << name << " is in no priority list and not marked override-only";
      EXPECT_GT(chosen, 0u) << name << " is never chosen by default and not marked override-only";
    } else {
      EXPECT_FALSE(listed) << name << " is override-only (" << e.override_only_reason << ") but in a priority list";
      EXPECT_EQ(chosen, 0u) << name << " is override-only but was chosen by default";
    }
  }
}

// Claims are consistent: nothing accepts a configuration that cannot exist, a kernel accepts
// only its device's configs and capabilities at or above its minimum.
TEST(Coverage, ClaimsOnlyValidConfigsOfTheirDevice) {
  for (Platform p : kPlatforms) {
    std::vector<LinearConfig> grid = test::config_grid(p);
    for (const KernelEntry& e : all_kernels()) {
      const std::vector<std::size_t> none;
      auto it = stats().at(p).accepts.find(std::string(e.kernel->name()));
      for (std::size_t i : it == stats().at(p).accepts.end() ? none : it->second) {
        const LinearConfig& c = grid[i];
        ASSERT_EQ(c.invalid_reason(), "") << e.kernel->name() << " accepts an impossible config " << c.describe();
        ASSERT_EQ(e.kernel->device(), c.device) << e.kernel->name() << " accepts " << c.describe();
        ASSERT_GE(c.capability, e.kernel->min_capability()) << e.kernel->name() << " accepts " << c.describe();
      }
      // can_implement itself (not only choose) refuses another device's configs.
      if (e.kernel->device() != grid.front().device) {
        for (const LinearConfig& c : grid) ASSERT_NE(e.kernel->can_implement(c), "") << e.kernel->name() << " " << c.describe();
      }
    }
  }
}

TEST(Coverage, PriorityListsNameRegisteredKernelsOfTheirDevice) {
  for (Platform p : kPlatforms)
    for (const Kernel* k : priority_list(p)) {
      ASSERT_NE(k, nullptr);
      EXPECT_EQ(k->device(), p == Platform::cpu ? Device::cpu : Device::cuda) << k->name();
      EXPECT_EQ(find_kernel(k->name()), k);
    }
  EXPECT_FALSE(priority_list(Platform::cpu).empty());
#if W4A16_HAVE_CUDA
  if (!priority_list(Platform::sm80).empty()) {
    EXPECT_EQ(priority_list(Platform::sm80).front()->name(), "cuda_hybrid");
  }
  // Each CUDA list holds the hybrid where the build runs code on its capabilities, and is empty otherwise.
  ASSERT_FALSE(priority_list(test::cuda_platform()).empty());
  if (!priority_list(Platform::sm90).empty()) {
    EXPECT_EQ(priority_list(Platform::sm90).front()->name(), "cuda_hybrid");
  }
#endif
}

}  // namespace
}  // namespace w4a16
