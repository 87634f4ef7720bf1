// Datasets: Keras' keras.datasets, read from Debian's dataset packages (nothing is downloaded).
// Sits on the layers floor's tensor types and zlib; link mixprec::datasets.
#pragma once

#include <mixprec/datasets/fashion_mnist.hpp>
