// Logs: what a training or evaluation step reports, Keras' logs dict ("loss", "accuracy", ...).
#pragma once

#include <map>
#include <string>

namespace mixprec {

using Logs = std::map<std::string, double>;

}  // namespace mixprec
