// Models: the compile-time Sequential and the runtime model built from configs.
#pragma once

#include <mixprec/models/any_tensor.hpp>
#include <mixprec/models/runtime_layers.hpp>
#include <mixprec/models/runtime_model.hpp>
#include <mixprec/models/sequential.hpp>
#include <mixprec/models/weights_io.hpp>
