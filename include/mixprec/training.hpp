// Training: losses, metrics, optimizers, learning-rate schedules, loss scaling, checkpoints;
// fit / evaluate / predict and callbacks.
#pragma once

#include <mixprec/training/checkpoint.hpp>
#include <mixprec/training/loss_scale_optimizer.hpp>
#include <mixprec/training/losses.hpp>
#include <mixprec/training/metrics.hpp>
#include <mixprec/training/optimizers.hpp>
#include <mixprec/training/model_training.hpp>
#include <mixprec/training/schedules.hpp>
#include <mixprec/training/callback.hpp>
#include <mixprec/training/callbacks.hpp>
#include <mixprec/training/progress_bar.hpp>
#include <mixprec/training/fit.hpp>
