// Quark's serialised QConfig shape <-> QuantConfig (quark_config.cpp has the mapping). The
// public entry points are parse_config / config_to_json (mixprec/config.h).
#pragma once

#include <string>

#include "config/config_reading.h"
#include "mixprec/config.h"

namespace mixprec::config {

// Reads Quark's shape; check_config is left to the caller (parse_config).
QuantConfig parse_quark_config(const Json& json, const std::string& label);
Json quark_config_to_json(const QuantConfig& config);

}  // namespace mixprec::config
