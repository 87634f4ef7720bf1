// Training: losses, metrics, optimizers and learning-rate schedules.
#pragma once

#include <mixprec/training/losses.hpp>
#include <mixprec/training/metrics.hpp>
#include <mixprec/training/optimizers.hpp>
#include <mixprec/training/model_training.hpp>
#include <mixprec/training/schedules.hpp>
