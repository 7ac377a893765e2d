// config_test_support.h — shared by the config tests (config_test.cc, pipeline_config_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"

namespace batchd::daemon {

// The error message parse_config gives for `toml` (as file "test.toml"); a test failure if it accepts it.
inline std::string config_error_of(const std::string& toml) {
  auto c = parse_config(toml, "test.toml");
  EXPECT_FALSE(c.ok()) << "accepted:\n" << toml;
  return c.ok() ? "" : c.error().message();
}

}  // namespace batchd::daemon
