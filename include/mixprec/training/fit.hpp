// Keras' training loop for both model kinds: fit(), evaluate() and predict().
//
//   History history = model.fit(x, y, {.batch_size = 64, .epochs = 5, .validation_split = 0.1});
//   history.history["val_loss"];                         // one value per epoch
//   Logs logs = model.evaluate(x_test, y_test, {.verbose = 0});
//   auto probabilities = model.predict(x_test);          // the outputs of every batch, concatenated
//
// fit: per epoch, the training rows (in a new random order when shuffle) in batches of
// batch_size (the last one smaller), one train_on_batch each; the epoch's logs are Keras 3's:
// the loss and every metric averaged over the epoch's batches, weighted by their rows, and with
// loss scaling (a step's logs holding "loss_scale" and "skipped") the last step's "loss_scale"
// and the number of skipped steps; then evaluate() on the validation data ("val_" + key).
// validation_split takes the LAST fraction of the rows, before any shuffling, as Keras does.
// For a Sequential, x and y are typed tensors with a dynamic batch; for a RuntimeModel, AnyTensors.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/models/any_tensor.hpp>
#include <mixprec/models/detail/training_entry.hpp>
#include <mixprec/models/logs.hpp>
#include <mixprec/training/callback.hpp>
#include <mixprec/training/model_training.hpp>
#include <mixprec/training/progress_bar.hpp>

namespace mixprec {

using callbacks::History;

/// fit()'s options, named and defaulted as Keras' (designated initializers, in this order).
template <class X, class Y>
struct FitOptions {
  std::size_t batch_size = 32;
  int epochs = 1;
  /// 0 silent, 1 a progress bar, 2 one line per epoch (training/progress_bar.hpp).
  int verbose = 1;
  callbacks::CallbackList callbacks = {};
  /// The last fraction of the rows, set aside before shuffling, in [0, 1).
  double validation_split = 0.0;
  /// (x, y) to evaluate at each epoch's end; takes precedence over validation_split.
  std::optional<std::pair<X, Y>> validation_data = std::nullopt;
  bool shuffle = true;
  int initial_epoch = 0;
  /// mixprec: the shuffling's seed (the same order every run); a random one when not set.
  std::optional<std::uint64_t> seed = std::nullopt;
};

struct EvaluateOptions {
  std::size_t batch_size = 32;
  int verbose = 1;
  callbacks::CallbackList callbacks = {};
};

struct PredictOptions {
  std::size_t batch_size = 32;
  int verbose = 1;
  callbacks::CallbackList callbacks = {};
};

namespace detail {

// ---- Rows of the data ----

inline std::size_t row_count(const AnyTensor& t) {
  if (t.extents().empty()) throw std::invalid_argument("The data has no batch axis: a scalar AnyTensor.");
  return t.extents()[0];
}
template <class T, std::size_t... E>
std::size_t row_count(const Tensor<T, E...>& t) {
  static_assert(Tensor<T, E...>::batched,
                "fit / evaluate / predict take tensors with a dynamic batch: Tensor<float, dynamic, 784>.");
  return t.batch();
}

template <class T>
value_buffer<T> gather_rows(std::span<const T> values, std::size_t row_size, std::span<const std::size_t> rows) {
  value_buffer<T> out(rows.size() * row_size);
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(rows[i] * row_size), row_size,
                out.begin() + static_cast<std::ptrdiff_t>(i * row_size));
  return out;
}
/// The given rows of x, in that order.
template <class T, std::size_t... E>
Tensor<T, E...> take_rows(const Tensor<T, E...>& x, std::span<const std::size_t> rows) {
  return Tensor<T, E...>(gather_rows(x.values(), Tensor<T, E...>::row_size, rows));
}
inline AnyTensor take_rows(const AnyTensor& x, std::span<const std::size_t> rows) {
  std::vector<std::size_t> extents = x.extents();
  std::size_t row_size = 1;
  for (std::size_t i = 1; i < extents.size(); ++i) row_size *= extents[i];
  extents[0] = rows.size();
  return x.visit([&](auto values) { return AnyTensor(extents, gather_rows(values, row_size, rows)); });
}

/// One tensor of every part's rows, in order (predict's result).
template <class X>
X concat_rows(const std::vector<X>& parts) {
  std::size_t total = 0;
  for (const X& part : parts) total += row_count(part);
  if constexpr (std::is_same_v<X, AnyTensor>) {
    std::vector<std::size_t> extents = parts.front().extents();
    extents[0] = total;
    return parts.front().visit([&](auto first) {
      using T = typename decltype(first)::value_type;
      value_buffer<T> out;
      out.reserve(total * (first.size() / std::max<std::size_t>(row_count(parts.front()), 1)));
      for (const X& part : parts) {
        const auto values = part.template values<T>();
        out.insert(out.end(), values.begin(), values.end());
      }
      return AnyTensor(extents, std::move(out));
    });
  } else {
    value_buffer<typename X::dtype> out;
    out.reserve(total * X::row_size);
    for (const X& part : parts) out.insert(out.end(), part.values().begin(), part.values().end());
    return X(std::move(out));
  }
}

/// Rows [first, last) in order.
inline std::vector<std::size_t> row_range(std::size_t first, std::size_t last) {
  std::vector<std::size_t> rows(last - first);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = first + i;
  return rows;
}

/// Fisher-Yates with the generator's raw 64-bit output (the same order on every platform).
inline void shuffle_rows(std::vector<std::size_t>& rows, std::mt19937_64& rng) {
  for (std::size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[static_cast<std::size_t>(rng() % i)]);
}

/// f(step, rows of that batch) for each batch of batch_size rows (the last one smaller).
template <class F>
void for_each_batch(const std::vector<std::size_t>& rows, std::size_t batch_size, F&& f) {
  for (std::size_t first = 0, step = 0; first < rows.size(); first += batch_size, ++step)
    f(static_cast<int>(step), std::span<const std::size_t>(rows).subspan(first, std::min(batch_size, rows.size() - first)));
}

inline std::size_t steps_for(std::size_t rows, std::size_t batch_size) {
  return rows / batch_size + (rows % batch_size != 0);  // no rows + batch_size - 1: it wraps for a huge batch_size
}

// ---- Logs over many batches ----

/// Keras 3's running logs over an epoch (or an evaluate call): every key's mean over the batches
/// so far, weighted by their rows (a single batch reports its own values), except "loss_scale"
/// (the last step's) and "skipped" (the number of skipped steps).
class running_logs {
 public:
  void add(const Logs& step, std::size_t rows) {
    for (const auto& [key, value] : step) {
      entry& e = entries_[key];
      e.last = value;
      e.sum += key == skipped_key ? value : value * static_cast<double>(rows);
      e.rows += static_cast<double>(rows);
      ++e.batches;
    }
  }
  Logs result() const {
    Logs logs;
    for (const auto& [key, e] : entries_) {
      if (key == loss_scale_key) logs[key] = e.last;
      else if (key == skipped_key) logs[key] = e.sum;
      else logs[key] = e.batches == 1 ? e.last : e.sum / e.rows;
    }
    return logs;
  }

 private:
  struct entry {
    double last = 0.0, sum = 0.0, rows = 0.0;
    std::size_t batches = 0;
  };
  std::map<std::string, entry> entries_;
};

// ---- Checks ----

inline void check_batch_size(std::size_t batch_size) {
  if (batch_size == 0)
    throw std::invalid_argument("`batch_size` must be a positive integer. Received: batch_size=0");
}
inline void check_verbose(int verbose) {
  if (verbose < 0 || verbose > 2)
    throw std::invalid_argument("`verbose` must be 0 (silent), 1 (progress bar) or 2 (one line per epoch). Received: verbose=" +
                                std::to_string(verbose));
}
/// x's and y's rows (at least one, the same number): the number of rows.
template <class X, class Y>
std::size_t check_rows(const X& x, const Y& y, const char* what) {
  const std::size_t n = row_count(x), m = row_count(y);
  if (n != m)
    throw std::invalid_argument(std::string("Data cardinality is ambiguous. Make sure all arrays contain the same number "
                                            "of samples. '") + what + "x' sizes: " + std::to_string(n) + ", '" + what +
                                "y' sizes: " + std::to_string(m) + ".");
  if (n == 0) throw std::invalid_argument(std::string("The ") + what + "data is empty: x and y need at least one row.");
  return n;
}

// ---- The callbacks of one call ----

/// The user's callbacks, then History (fit) and a ProgbarLogger (verbose != 0) unless the user gave
/// one (Keras' order), all attached to the model for the call and detached after it.
class callback_run {
 public:
  template <class Model>
  callback_run(Model& model, optimizers::Optimizer* optimizer, const callbacks::CallbackList& user, bool add_history,
               const callbacks::Params& params)
      : handle_(model, optimizer), list_(user) {
    bool has_progbar = false;
    for (const auto& callback : list_) {
      if (!callback) throw std::invalid_argument("callbacks: an entry is empty (a null shared_ptr).");
      if (auto h = std::dynamic_pointer_cast<callbacks::History>(callback)) history_ = h;
      has_progbar = has_progbar || std::dynamic_pointer_cast<callbacks::ProgbarLogger>(callback) != nullptr;
    }
    if (add_history && !history_) list_.push_back(history_ = std::make_shared<callbacks::History>());
    if (params.verbose != 0 && !has_progbar) list_.push_back(std::make_shared<callbacks::ProgbarLogger>());
    for (const auto& callback : list_) {
      callback->set_model(&handle_);
      callback->set_params(params);
    }
  }
  callback_run(const callback_run&) = delete;
  callback_run& operator=(const callback_run&) = delete;
  ~callback_run() {
    for (const auto& callback : list_) callback->set_model(nullptr);
  }

  /// f(callback) for each, in order.
  template <class F>
  void each(F&& f) {
    for (const auto& callback : list_) f(*callback);
  }
  callbacks::ModelHandle& model() { return handle_; }
  callbacks::History history() const {
    callbacks::History copy = *history_;
    copy.set_model(nullptr);
    return copy;
  }

 private:
  callbacks::ModelHandle handle_;
  callbacks::CallbackList list_;
  std::shared_ptr<callbacks::History> history_;
};

// ---- The loops ----

/// evaluate() over all rows of x, y with the run's callbacks (on_test_*).
template <class Model, class X, class Y>
Logs evaluate_rows(Model& model, const X& x, const Y& y, std::size_t batch_size, callback_run& run) {
  const std::vector<std::size_t> rows = row_range(0, row_count(x));
  running_logs logs;
  run.each([&](callbacks::Callback& c) { c.on_test_begin({}); });
  for_each_batch(rows, batch_size, [&](int step, std::span<const std::size_t> batch) {
    run.each([&](callbacks::Callback& c) { c.on_test_batch_begin(step, {}); });
    logs.add(model.test_on_batch(take_rows(x, batch), take_rows(y, batch)), batch.size());
    const Logs so_far = logs.result();
    run.each([&](callbacks::Callback& c) { c.on_test_batch_end(step, so_far); });
  });
  const Logs result = logs.result();
  run.each([&](callbacks::Callback& c) { c.on_test_end(result); });
  return result;
}

/// check_data(x, y, finite_rows) throws for data a step would reject (training_entry::check_data).
template <class Model, class X, class Y, class CheckData>
callbacks::History fit(Model& model, compiled_model& compiled, const X& x, const Y& y, const FitOptions<X, Y>& o,
                       CheckData&& check_data) {
  check_batch_size(o.batch_size);
  check_verbose(o.verbose);
  if (o.epochs < 0 || o.initial_epoch < 0)
    throw std::invalid_argument("`epochs` and `initial_epoch` must be integers >= 0. Received: epochs=" +
                                std::to_string(o.epochs) + ", initial_epoch=" + std::to_string(o.initial_epoch));
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0))
    throw std::invalid_argument("`validation_split` must be in [0, 1). Received: validation_split=" +
                                number_text(o.validation_split));
  const std::size_t n = check_rows(x, y, "");

  // The training rows, and the validation data (given, or the last rows, before shuffling).
  std::size_t train_rows = n;
  std::optional<std::pair<X, Y>> split;
  const std::pair<X, Y>* validation = nullptr;
  if (o.validation_data) {
    check_rows(o.validation_data->first, o.validation_data->second, "validation_data ");
    validation = &*o.validation_data;
  } else if (o.validation_split > 0.0) {
    train_rows = static_cast<std::size_t>(std::floor(static_cast<double>(n) * (1.0 - o.validation_split)));
    if (train_rows == 0 || train_rows == n)
      throw std::invalid_argument("Training data contains " + std::to_string(n) +
                                  " samples, which is not sufficient to split it into a validation and training set "
                                  "as specified by `validation_split=" + number_text(o.validation_split) +
                                  "`. Either provide more data, or a different value for the `validation_split` argument.");
    const std::vector<std::size_t> last = row_range(train_rows, n);
    split.emplace(take_rows(x, last), take_rows(y, last));
    validation = &*split;
  }

  // Every check a step makes of its data, made on all of it before the first step (Keras
  // checks batch by batch, and a bad label in the last batch would leave the model trained on
  // the batches before it).
  if (o.initial_epoch < o.epochs) check_data(x, y, train_rows);
  if (o.validation_data && o.initial_epoch < o.epochs) {
    try {
      check_data(validation->first, validation->second, 0);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("validation_data: ") + e.what());
    }
  }

  const std::size_t steps = steps_for(train_rows, o.batch_size);
  callback_run run(model, &optimizer_of(compiled), o.callbacks, /*add_history=*/true,
                   {.verbose = o.verbose, .epochs = o.epochs, .steps = steps});
  // Each epoch's order comes from (seed, epoch) alone, so that a run resumed at initial_epoch
  // (load_checkpoint) shuffles as the run it continues did.
  const std::uint64_t seed = o.seed ? *o.seed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  run.model().stop_training = false;
  run.each([&](callbacks::Callback& c) { c.on_train_begin({}); });
  Logs training_logs;
  for (int epoch = o.initial_epoch; epoch < o.epochs; ++epoch) {
    run.each([&](callbacks::Callback& c) { c.on_epoch_begin(epoch, {}); });
    std::vector<std::size_t> rows = row_range(0, train_rows);
    if (o.shuffle) {
      std::seed_seq epoch_seed{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                               static_cast<std::uint32_t>(epoch)};
      std::mt19937_64 rng(epoch_seed);
      shuffle_rows(rows, rng);
    }
    running_logs logs;
    // As in Keras, stop_training is read after each batch's end: set earlier (on_train_begin,
    // on_epoch_begin, on_train_batch_begin), it still lets that batch run.
    bool stopped = false;
    for_each_batch(rows, o.batch_size, [&](int step, std::span<const std::size_t> batch) {
      if (stopped) return;
      run.each([&](callbacks::Callback& c) { c.on_train_batch_begin(step, {}); });
      const Logs step_logs = model.train_on_batch(take_rows(x, batch), take_rows(y, batch));
      logs.add(step_logs, batch.size());
      run.each([&](callbacks::Callback& c) { c.on_train_step_end(epoch, step, step_logs); });
      const Logs so_far = logs.result();
      run.each([&](callbacks::Callback& c) { c.on_train_batch_end(step, so_far); });
      stopped = run.model().stop_training;
    });
    Logs epoch_logs = logs.result();
    if (validation)
      for (const auto& [key, value] : evaluate_rows(model, validation->first, validation->second, o.batch_size, run))
        epoch_logs["val_" + key] = value;
    run.each([&](callbacks::Callback& c) { c.on_epoch_end(epoch, epoch_logs); });
    training_logs = epoch_logs;
    if (run.model().stop_training) break;
  }
  run.each([&](callbacks::Callback& c) { c.on_train_end(training_logs); });
  return run.history();
}

template <class Model, class X, class Y>
Logs evaluate(Model& model, compiled_model& compiled, const X& x, const Y& y, const EvaluateOptions& o) {
  check_batch_size(o.batch_size);
  check_verbose(o.verbose);
  const std::size_t n = check_rows(x, y, "");
  callback_run run(model, &optimizer_of(compiled), o.callbacks, /*add_history=*/false,
                   {.verbose = o.verbose, .epochs = 1, .steps = steps_for(n, o.batch_size)});
  return evaluate_rows(model, x, y, o.batch_size, run);
}

template <class Model, class X>
auto predict(Model& model, optimizers::Optimizer* optimizer, const X& x, const PredictOptions& o) {
  check_batch_size(o.batch_size);
  check_verbose(o.verbose);
  const std::size_t n = row_count(x);
  if (n == 0) throw std::invalid_argument("The data is empty: x needs at least one row.");
  callback_run run(model, optimizer, o.callbacks, /*add_history=*/false,
                   {.verbose = o.verbose, .epochs = 1, .steps = steps_for(n, o.batch_size)});
  using Output = decltype(model(x));
  std::vector<Output> parts;
  run.each([&](callbacks::Callback& c) { c.on_predict_begin({}); });
  for_each_batch(row_range(0, n), o.batch_size, [&](int step, std::span<const std::size_t> batch) {
    run.each([&](callbacks::Callback& c) { c.on_predict_batch_begin(step, {}); });
    parts.push_back(model(take_rows(x, batch)));
    run.each([&](callbacks::Callback& c) { c.on_predict_batch_end(step, {}); });
  });
  run.each([&](callbacks::Callback& c) { c.on_predict_end({}); });
  return concat_rows(parts);
}

/// What the models' fit() / evaluate() / predict() call (models/detail/training_entry.hpp).
template <class Model, class Options>
struct training_entry<Model, loop_entry<Options>> {
  template <class X, class Y>
  static callbacks::History fit(Model& model, const X& x, const Y& y, const Options& options) {
    static_assert(std::is_same_v<Options, FitOptions<X, Y>>,
                  "fit(x, y, options): the options are FitOptions<X, Y> with X, Y the types of x and y.");
    // However fit ends, the last step's buffers are freed: nothing of training outlives it but
    // the weights, the optimizer's state and the layers' state.
    struct release_at_exit {
      Model& model;
      ~release_at_exit() { model.release_step_buffers(); }
    } const release{model};
    return detail::fit(model, compiled_of(model.compiled_), x, y, options, [&](const X& data, const Y& labels, std::size_t finite_rows) {
      training_entry<Model, void>::check_data(model, data, labels, finite_rows);
    });
  }
  template <class X, class Y>
  static Logs evaluate(Model& model, const X& x, const Y& y, const Options& options) {
    static_assert(std::is_same_v<Options, EvaluateOptions>, "evaluate(x, y, options): the options are EvaluateOptions.");
    return detail::evaluate(model, compiled_of(model.compiled_), x, y, options);
  }
  template <class X>
  static auto predict(Model& model, const X& x, const Options& options) {
    static_assert(std::is_same_v<Options, PredictOptions>, "predict(x, options): the options are PredictOptions.");
    optimizers::Optimizer* optimizer = model.compiled_.state ? &optimizer_of(compiled_of(model.compiled_)) : nullptr;
    return detail::predict(model, optimizer, x, options);
  }
};

}  // namespace detail
}  // namespace mixprec
