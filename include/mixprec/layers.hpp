// Layers: the base class, autocast, weights, and Keras' layers with policies as types.
#pragma once

#include <mixprec/layers/activation.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/autocast.hpp>
#include <mixprec/layers/batch_normalization.hpp>
#include <mixprec/layers/conv2d.hpp>
#include <mixprec/layers/dense.hpp>
#include <mixprec/layers/dropout.hpp>
#include <mixprec/layers/flatten.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/input.hpp>
#include <mixprec/layers/layer.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/pooling.hpp>
#include <mixprec/layers/regularizers.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/layers/variable.hpp>
