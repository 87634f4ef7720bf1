// Keras 3's progress bar (keras.utils.Progbar and the ProgbarLogger callback fit() adds when
// verbose != 0), written to any std::ostream.
//
//   verbose = 1:  Epoch 2/5                                        (only when epochs > 1)
//                 1875/1875 ━━━━━━━━━━━━━━━━━━━━ 11s 6ms/step - accuracy: 0.9823 - loss: 0.0578
//   verbose = 2:  Epoch 2/5
//                 1875/1875 - 11s - 6ms/step - accuracy: 0.9823 - loss: 0.0578
//
// The count is right-aligned to the target's digits; the bar is 20 '━', green for the steps done
// and grey for the rest; then the elapsed seconds (the remaining time, "ETA", while the epoch
// runs: "42s", "3:05" or "1:02:03"), the time per step ("6ms/step", "2s/step", "850us/step": the
// first step, which warms up, left out once there are more), and " - key: value" for every log
// key, in the order they first appeared (the training keys sorted, then "val_..."), with 4
// decimals, or in scientific notation ("1.2345e-04") when |value| <= 1e-3 (verbose 2 tests
// value <= 1e-3, as Keras does). "skipped" (loss scaling's count of skipped steps) is shown as an
// integer. On a terminal (std::cout or std::cerr attached to one) verbose 1 redraws the line in
// place ('\r', at most every 0.05 s) with Keras' colors; on any other stream it writes only the
// epoch's final line, without escape codes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>
#endif

#include <mixprec/models/logs.hpp>
#include <mixprec/training/callback.hpp>

namespace mixprec {

/// Seconds from any fixed origin; injectable so that tests see fixed times.
using ProgressClock = std::function<double()>;

namespace detail {

inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Whether `out` is std::cout or std::cerr / std::clog writing to a terminal.
inline bool is_terminal(const std::ostream& out) {
#if __has_include(<unistd.h>)
  if (&out == &std::cout) return ::isatty(STDOUT_FILENO) != 0;
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) != 0;
#endif
  (void)out;
  return false;
}

template <class... A>
std::string printed(const char* format, A... values) {
  char text[64];
  const int n = std::snprintf(text, sizeof(text), format, values...);
  return std::string(text, n < 0 ? 0 : static_cast<std::size_t>(std::min<int>(n, sizeof(text) - 1)));
}

/// Python's "{:.4f}" / "{:.4e}" (nan and inf as Python spells them).
inline std::string progbar_number(double value, bool scientific) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return printed(scientific ? "%.4e" : "%.4f", value);
}

}  // namespace detail

/// keras.utils.Progbar: update(current, logs, finalize) after each step.
class Progbar {
 public:
  /// verbose 1 (a bar) or 2 (a line when finalized); redraw: in place, with colors (a terminal).
  Progbar(std::size_t target, int verbose, std::ostream& out, bool redraw, ProgressClock clock = {},
          double interval = 0.05)
      : target_(target), verbose_(verbose), out_(&out), dynamic_(redraw),
        clock_(clock ? std::move(clock) : ProgressClock(detail::steady_seconds)), interval_(interval) {
    start_ = clock_();
  }

  void update(std::size_t current, const Logs& logs, bool finalize) {
    // Keys in the order they first come, and of those new at once (the epoch's end), the val_
    // ones before the rest (what callbacks add: learning_rate), as Keras' logs dict has them.
    for (const bool validation : {true, false})
      for (const auto& [key, value] : logs) {
        if (key.starts_with("val_") != validation) continue;
        bool seen = false;
        for (const auto& k : order_) seen = seen || k == key;
        if (!seen) order_.push_back(key);
      }
    values_ = logs;
    const double now = clock_();
    const double per_step = step_duration(current, now);
    if (verbose_ == 1) {
      if (!finalize && (!dynamic_ || now - last_update_ < interval_)) return;
      std::string message;
      if (dynamic_) message = std::string(previous_width_, '\b') + "\r";
      std::size_t width = 0;
      message += line(current, finalize, now, per_step, width);
      if (previous_width_ > width) message += std::string(previous_width_ - width, ' ');
      if (finalize) message += "\n";
      *out_ << message << std::flush;
      previous_width_ = width;
    } else if (verbose_ == 2 && finalize) {
      std::string message = count(current) + " - " + detail::printed("%.0f", now - start_) + "s -" + step_time(per_step);
      message += metrics(/*absolute=*/false) + "\n";
      *out_ << message << std::flush;
    }
    last_update_ = now;
  }

 private:
  std::string count(std::size_t current) const {
    const int digits = static_cast<int>(std::to_string(target_).size());
    return detail::printed("%*zu/%zu", digits, current, target_);
  }
  std::string bold(const std::string& text) const { return dynamic_ ? "\x1b[1m" + text + "\x1b[0m" : text; }

  /// The verbose 1 line; width: its length on screen (escape codes left out, '━' one column).
  std::string line(std::size_t current, bool finalize, double now, double per_step, std::size_t& width) const {
    const std::string counted = count(current);
    const std::size_t done = target_ == 0 ? 0 : bar_width * std::min(current, target_) / target_;
    std::string bar = bold(counted) + " ";
    const auto dashes = [](std::size_t n) {
      std::string s;
      for (std::size_t i = 0; i < n; ++i) s += "\u2501";
      return s;
    };
    if (dynamic_) {
      if (done > 0) bar += "\x1b[32m" + dashes(done) + "\x1b[0m";
      bar += "\x1b[37m" + dashes(bar_width - done) + "\x1b[0m";
    } else {
      bar += dashes(bar_width);
    }
    std::string time;
    if (!finalize) {
      const double eta = per_step * static_cast<double>(target_ - std::min(current, target_));
      const long long s = static_cast<long long>(eta);
      if (eta > 3600) time = detail::printed("%lld:%02lld:%02lld", s / 3600, (s % 3600) / 60, s % 60);
      else if (eta > 60) time = detail::printed("%lld:%02lld", s / 60, s % 60);
      else time = std::to_string(s) + "s";
    } else {
      time = detail::printed("%.0f", now - start_) + "s";
    }
    const std::string rest = step_time(per_step) + metrics(/*absolute=*/true);
    width = counted.size() + 1 + bar_width + 1 + time.size() + rest.size();
    return bar + " " + bold(time) + rest;
  }

  std::string metrics(bool absolute) const {
    std::string text;
    for (const auto& key : order_) {
      const auto it = values_.find(key);
      if (it == values_.end()) continue;
      const double v = it->second;
      text += " - " + key + ": ";
      if (key == "skipped") text += std::to_string(static_cast<long long>(v));
      else text += detail::progbar_number(v, !((absolute ? std::abs(v) : v) > 1e-3));
    }
    return text;
  }

  static std::string step_time(double seconds) {
    if (seconds >= 1 || seconds == 0) return detail::printed(" %.0fs/step", seconds);
    if (seconds >= 1e-3) return detail::printed(" %.0fms/step", seconds * 1e3);
    return detail::printed(" %.0fus/step", seconds * 1e6);
  }

  /// Keras' estimate: the first step (warm-up) left out once there are more.
  double step_duration(std::size_t current, double now) {
    if (current == 0) return 0.0;
    double per_step = 0.0;
    if (after_first_step_ && current > 1) per_step = (now - *after_first_step_) / static_cast<double>(current - 1);
    else per_step = (now - start_) / static_cast<double>(current);
    if (current == 1) after_first_step_ = now;
    return per_step;
  }

  static constexpr std::size_t bar_width = 20;
  std::size_t target_;
  int verbose_;
  std::ostream* out_;
  bool dynamic_;
  ProgressClock clock_;
  double interval_;
  double start_ = 0.0;
  double last_update_ = -1e300;
  std::optional<double> after_first_step_;
  std::size_t previous_width_ = 0;
  std::vector<std::string> order_;
  Logs values_;
};

namespace callbacks {

/// The callback that draws the bar (fit, evaluate and predict add one when verbose != 0; pass
/// your own to choose the stream, the clock, or whether to redraw in place).
class ProgbarLogger : public Callback {
 public:
  /// redraw: in place, with colors; by default when `out` is a terminal.
  explicit ProgbarLogger(std::ostream& out = std::cout, std::optional<bool> redraw = std::nullopt,
                         ProgressClock clock = {})
      : out_(&out), dynamic_(redraw.value_or(mixprec::detail::is_terminal(out))), clock_(std::move(clock)) {}

  void set_params(const Params& params) override {
    Callback::set_params(params);
    verbose_ = params.verbose;
    epochs_ = params.epochs;
    target_ = params.steps;
  }
  /// Detached when a call ends, however it ends: a fit that threw leaves no fit in progress.
  void set_model(ModelHandle* model) override {
    Callback::set_model(model);
    if (model == nullptr) in_fit_ = false;
  }
  void on_train_begin(const Logs&) override { in_fit_ = true; }
  void on_train_end(const Logs&) override { in_fit_ = false; }
  void on_epoch_begin(int epoch, const Logs&) override {
    restart();
    if (verbose_ != 0 && epochs_ > 1) *out_ << "Epoch " << epoch + 1 << '/' << epochs_ << '\n' << std::flush;
  }
  void on_train_batch_end(int batch, const Logs& logs) override { step(batch, logs); }
  void on_epoch_end(int, Logs& logs) override { finish(logs); }
  void on_test_begin(const Logs&) override {
    if (!in_fit_) restart();
  }
  void on_test_batch_end(int batch, const Logs& logs) override {
    if (!in_fit_) step(batch, logs);
  }
  void on_test_end(const Logs& logs) override {
    if (!in_fit_) finish(logs);
  }
  void on_predict_begin(const Logs&) override { restart(); }
  void on_predict_batch_end(int batch, const Logs&) override { step(batch, {}); }
  void on_predict_end(const Logs&) override { finish({}); }

 private:
  void restart() {
    seen_ = 0;
    bar_.reset();
    if (verbose_ != 0) bar_.emplace(target_, verbose_, *out_, dynamic_, clock_);
  }
  void step(int batch, const Logs& logs) {
    seen_ = static_cast<std::size_t>(batch) + 1;
    if (bar_) bar_->update(seen_, logs, false);  // verbose 2 prints at the end only, but learns the keys' order
  }
  void finish(const Logs& logs) {
    if (bar_) bar_->update(target_, logs, true);
  }

  std::ostream* out_;
  bool dynamic_;
  ProgressClock clock_;
  int verbose_ = 1;
  int epochs_ = 1;
  std::size_t target_ = 0;
  std::size_t seen_ = 0;
  bool in_fit_ = false;
  std::optional<Progbar> bar_;
};

}  // namespace callbacks
}  // namespace mixprec
