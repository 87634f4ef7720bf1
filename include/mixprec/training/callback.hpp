// Callbacks: what fit(), evaluate() and predict() call at each stage, with Keras 3's hook names
// and order, and what a callback sees of the model (either kind) through a ModelHandle.
//
//   struct Printer : callbacks::Callback {
//     void on_epoch_end(int epoch, Logs& logs) override { std::cout << epoch << ' ' << logs["loss"] << '\n'; }
//   };
//   model.fit(x, y, {.epochs = 3, .callbacks = {std::make_shared<Printer>()}});
//
// fit's order (Keras 3): on_train_begin; per epoch on_epoch_begin, per step
// on_train_batch_begin -> (the step) -> on_train_step_end (mixprec: the step's own logs) ->
// on_train_batch_end (the epoch's running means); then the validation pass (on_test_begin,
// on_test_batch_begin/end per step, on_test_end) and on_epoch_end (logs with "val_" keys);
// on_train_end. evaluate: on_test_*; predict: on_predict_*. A callback that throws ends the call
// and the exception propagates; the model stays as the last completed step left it.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <mixprec/models/logs.hpp>
#include <mixprec/models/weights_io.hpp>
#include <mixprec/training/optimizers.hpp>
#include <mixprec/training/schedules.hpp>

namespace mixprec::callbacks {

/// What a callback is told about the run (Keras' callback.params): steps is the number of
/// batches an epoch (or an evaluate / predict call) has.
struct Params {
  int verbose = 1;
  int epochs = 1;
  std::size_t steps = 0;
  friend bool operator==(const Params&, const Params&) = default;
};

/// One weight's value as get_weights() copies it: its dtype and its bytes.
struct WeightValue {
  std::string dtype;
  std::vector<std::byte> bytes;
  friend bool operator==(const WeightValue&, const WeightValue&) = default;
};

/// What a callback sees of the model (Keras' callback.model), for both model kinds: the weights,
/// saving and loading them, the optimizer's learning rate, and stop_training.
class ModelHandle {
 public:
  /// optimizer: the compiled model's (nullptr when the model is not compiled: predict).
  template <class Model>
  ModelHandle(Model& model, optimizers::Optimizer* optimizer)
      : weights_([&model] { return model.weights(); }),
        trainable_weights_([&model] { return model.trainable_weights(); }),
        optimizer_(optimizer) {}

  /// Handles on every weight (trainable or not), "<layer>/<weight>".
  std::vector<weight_handle> weights() const { return weights_(); }
  std::vector<weight_handle> trainable_weights() const { return trainable_weights_(); }
  void save_weights(const std::string& file) const { mixprec::save_weights(weights(), file); }
  void load_weights(const std::string& file) const { mixprec::load_weights(weights(), file); }
  /// Keras' get_weights / set_weights: a copy of every weight, and putting one back (bit for bit).
  std::vector<WeightValue> get_weights() const {
    std::vector<WeightValue> values;
    for (const weight_handle& w : weights()) values.push_back({std::string(w.dtype), {w.bytes.begin(), w.bytes.end()}});
    return values;
  }
  void set_weights(const std::vector<WeightValue>& values) const {
    std::vector<weight_handle> handles = weights();
    if (handles.size() != values.size())
      throw std::invalid_argument("set_weights: " + std::to_string(values.size()) + " values for a model of " +
                                  std::to_string(handles.size()) + " weights.");
    for (std::size_t i = 0; i < handles.size(); ++i)
      if (handles[i].bytes.size() != values[i].bytes.size() || handles[i].dtype != values[i].dtype)
        throw std::invalid_argument("set_weights: the value of '" + handles[i].path + "' does not fit it.");
    for (std::size_t i = 0; i < handles.size(); ++i) handles[i].load(values[i].dtype, values[i].bytes);
  }

  /// The compiled model's optimizer (std::logic_error when it is not compiled).
  optimizers::Optimizer& optimizer() const {
    if (optimizer_ == nullptr) throw std::logic_error("You must call `compile()` before using the model.");
    return *optimizer_;
  }
  /// Keras' `model.optimizer.learning_rate`: the rate the next step uses (a schedule's value at
  /// the optimizer's iterations).
  float learning_rate() const { return optimizer().current_learning_rate(); }
  /// Keras' `optimizer.learning_rate = value` (a float over a schedule is its TypeError:
  /// std::invalid_argument, nothing changed).
  void set_learning_rate(schedules::LearningRate rate) const { optimizer().set_learning_rate(std::move(rate)); }

  /// Set by a callback to end fit(): read after each batch's end (a batch it was set before
  /// still runs, as in Keras) and after each epoch's end.
  bool stop_training = false;

 private:
  std::function<std::vector<weight_handle>()> weights_;
  std::function<std::vector<weight_handle>()> trainable_weights_;
  optimizers::Optimizer* optimizer_;
};

/// The base of every callback; override the hooks you need (all do nothing by default). epoch
/// and batch count from 0, as Keras'.
class Callback {
 public:
  virtual ~Callback() = default;

  virtual void set_params(const Params& params) { params_ = params; }
  virtual void set_model(ModelHandle* model) { model_ = model; }
  const Params& params() const { return params_; }
  /// The model of the current fit / evaluate / predict call.
  ModelHandle& model() const {
    if (model_ == nullptr)
      throw std::logic_error("This callback is not attached to a model: model() is there during fit(), evaluate() "
                             "and predict().");
    return *model_;
  }

  virtual void on_train_begin(const Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*logs*/) {}
  /// on_epoch_end may add entries to the logs (LearningRateScheduler adds "learning_rate"); the
  /// callbacks after it, and History, see them.
  virtual void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_epoch_end(int /*epoch*/, Logs& /*logs*/) {}
  virtual void on_train_batch_begin(int /*batch*/, const Logs& /*logs*/) {}
  /// mixprec: the step's own logs, as train_on_batch returned them (this batch's loss, and with
  /// loss scaling its "loss_scale" and "skipped"), just before on_train_batch_end.
  virtual void on_train_step_end(int /*epoch*/, int /*batch*/, const Logs& /*step_logs*/) {}
  /// Keras 3: the running means of the epoch so far.
  virtual void on_train_batch_end(int /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_begin(const Logs& /*logs*/) {}
  virtual void on_test_end(const Logs& /*logs*/) {}
  virtual void on_test_batch_begin(int /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_batch_end(int /*batch*/, const Logs& /*logs*/) {}
  virtual void on_predict_begin(const Logs& /*logs*/) {}
  virtual void on_predict_end(const Logs& /*logs*/) {}
  virtual void on_predict_batch_begin(int /*batch*/, const Logs& /*logs*/) {}
  virtual void on_predict_batch_end(int /*batch*/, const Logs& /*logs*/) {}

 private:
  Params params_;
  ModelHandle* model_ = nullptr;
};

using CallbackList = std::vector<std::shared_ptr<Callback>>;

/// Keras' History, which fit() returns: history["loss"][i] is epoch i's loss, one list per log key
/// ("loss", each metric, "val_..."), epoch the epoch numbers (from 0), params() the run's.
class History : public Callback {
 public:
  std::map<std::string, std::vector<double>> history;
  std::vector<int> epoch;

  void on_train_begin(const Logs&) override { epoch.clear(); }
  void on_epoch_end(int e, Logs& logs) override {
    epoch.push_back(e);
    for (const auto& [key, value] : logs) history[key].push_back(value);
  }
};

}  // namespace mixprec::callbacks
