// Keras' built-in callbacks, for fit() on either model kind:
//
//   callbacks::CSVLogger("log.csv", ",", /*append=*/false, /*steps_filename=*/"steps.csv")
//   callbacks::EarlyStopping({.monitor = "val_loss", .patience = 2, .restore_best_weights = true})
//   callbacks::ModelCheckpoint("ckpt-{epoch:02d}.weights", "val_loss", /*verbose=*/0, /*save_best_only=*/true)
//   callbacks::LearningRateScheduler([](int epoch, double lr) { return epoch < 2 ? lr : lr * 0.5; })
//
// A monitored key that an epoch's logs lack is a warning on std::cerr (once), never an error.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <mixprec/models/logs.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/training/callback.hpp>

namespace mixprec::callbacks {

namespace detail {

/// Python's repr of a float, which Keras' CSV files hold: the shortest text that reads back,
/// positional for exponents in [-4, 16) ("0.25", "3.0", "0.0001"), else "1e-05", "1.5e+16".
inline std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[64];
  const auto end = std::to_chars(text, text + sizeof(text), value, std::chars_format::scientific).ptr;
  const std::string s(text, end);
  const std::size_t e = s.find('e');
  const bool negative = s[0] == '-';
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  const int exponent = std::stoi(s.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    const auto whole = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= whole) return out + digits + std::string(whole - digits.size(), '0') + ".0";
    return out + digits.substr(0, whole) + "." + digits.substr(whole);
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int magnitude = std::abs(exponent);
  return out + (exponent < 0 ? "e-" : "e+") + (magnitude < 10 ? "0" : "") + std::to_string(magnitude);
}

/// Whether a larger value of `monitor` is better. mode "min" / "max" say so; "auto" infers it
/// from the name as EarlyStopping does (losses and errors down, accuracies up).
inline bool maximized(const std::string& monitor, const std::string& mode, const char* owner) {
  if (mode == "min") return false;
  if (mode == "max") return true;
  if (mode != "auto")
    throw std::invalid_argument(std::string(owner) + " mode " + mixprec::detail::quote_for_message(mode) + " is unknown; accepted: \"auto\", \"min\", \"max\".");
  const std::string name = monitor.starts_with("val_") ? monitor.substr(4) : monitor;
  if (name == "loss" || name == "mse" || name == "mae" || name == "mean_squared_error" || name == "mean_absolute_error")
    return false;
  if (name.find("accuracy") != std::string::npos || name == "acc") return true;
  throw std::invalid_argument(std::string(owner) + " callback received monitor=" + mixprec::detail::quote_for_message(monitor) +
                              " but mixprec isn't able to automatically determine whether that metric should be "
                              "maximized or minimized. Pass `mode='max'` in order to do early stopping based on the "
                              "highest metric value, or pass `mode='min'` in order to use the lowest value.");
}

/// A file for a CSV log: truncated, or appended to (then with a header only if it is empty).
inline std::ofstream open_log(const std::string& filename, bool append, bool& write_header) {
  write_header = true;
  if (append) {
    std::ifstream existing(filename);
    std::string first;
    if (existing && std::getline(existing, first) && !first.empty()) write_header = false;
  }
  std::ofstream file(filename, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  if (!file) throw std::invalid_argument("CSVLogger: cannot open '" + mixprec::detail::quote_for_message(filename) + "' for writing.");
  return file;
}

}  // namespace detail

/// Keras' CSVLogger: one row per epoch, `epoch<sep><sorted log keys>` in the header (epochs from
/// 0, numbers as Python prints them, "NA" for a missing key, fields quoted and lines ending
/// "\r\n" as Python's csv module writes them). mixprec's steps_filename (if not empty): one row
/// per training step, `epoch,step,loss,loss_scale,skipped` (step: the batch within the epoch,
/// from 0; the step's own values, not running means; loss_scale and skipped empty when the step
/// did not log them).
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, std::string separator = ",", bool append = false,
                     std::string steps_filename = "")
      : filename_(std::move(filename)), separator_(std::move(separator)), append_(append),
        steps_filename_(std::move(steps_filename)) {
    // Python's csv module (Keras' writer) takes one character: here one well-formed UTF-8
    // sequence (a lone lead byte would match inside every multi-byte character that starts so).
    if (separator_.empty() || mixprec::detail::utf8_sequence_length(separator_, 0) != separator_.size())
      throw std::invalid_argument("CSVLogger: the separator must be a 1-character string. Received: separator='" +
                                  mixprec::detail::quote_for_message(separator_) + "'");
    // Python 3.13's csv module rejects them too: a field is quoted with '"' and a line ends "\r\n".
    if (separator_ == "\"" || separator_ == "\r" || separator_ == "\n")
      throw std::invalid_argument("CSVLogger: the separator cannot be '\"', '\\r' or '\\n'. Received: separator='" +
                                  mixprec::detail::quote_for_message(separator_) + "'");
  }

  void on_train_begin(const Logs&) override {
    file_ = detail::open_log(filename_, append_, header_);
    keys_.clear();
    if (!steps_filename_.empty()) {
      bool header = true;
      steps_ = detail::open_log(steps_filename_, append_, header);
      if (header) write_row(steps_, {"epoch", "step", "loss", std::string(loss_scale_key), std::string(skipped_key)});
    }
  }
  void on_train_step_end(int epoch, int step, const Logs& logs) override {
    if (!steps_.is_open()) return;
    std::vector<std::string> row{std::to_string(epoch), std::to_string(step)};
    for (const std::string_view key : {std::string_view("loss"), loss_scale_key, skipped_key}) {
      const auto it = logs.find(std::string(key));
      row.push_back(it == logs.end() ? "" : detail::python_float(it->second));
    }
    write_row(steps_, row);
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    if (keys_.empty()) {
      for (const auto& entry : logs) keys_.push_back(entry.first);
      if (header_) {
        std::vector<std::string> header{"epoch"};
        header.insert(header.end(), keys_.begin(), keys_.end());
        write_row(file_, header);
      }
    }
    std::vector<std::string> row{std::to_string(epoch)};
    for (const auto& key : keys_) {
      const auto it = logs.find(key);
      row.push_back(it == logs.end() ? "NA" : detail::python_float(it->second));
    }
    write_row(file_, row);
  }
  void on_train_end(const Logs&) override {
    file_.close();
    if (steps_.is_open()) steps_.close();
  }

 private:
  void write_row(std::ofstream& file, const std::vector<std::string>& fields) const {
    for (std::size_t i = 0; i < fields.size(); ++i) file << (i ? separator_ : "") << csv_field(fields[i]);
    file << "\r\n" << std::flush;
  }
  /// A field as Python's csv module writes it (QUOTE_MINIMAL): in double quotes, with its quotes
  /// doubled, when it holds the separator, a quote or a line break (a metric named "a,b", or
  /// every number under separator ".").
  std::string csv_field(const std::string& field) const {
    if (field.find(separator_) == std::string::npos && field.find_first_of("\"\r\n") == std::string::npos) return field;
    std::string quoted = "\"";
    for (const char c : field) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + '"';
  }

  std::string filename_, separator_;
  bool append_;
  std::string steps_filename_;
  std::ofstream file_, steps_;
  bool header_ = true;
  std::vector<std::string> keys_;
};

/// EarlyStopping's settings, Keras' names and defaults.
struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  /// Changes smaller than |min_delta| are no improvement.
  double min_delta = 0.0;
  /// Epochs without improvement after which training stops.
  int patience = 0;
  /// 1: say on std::cout when it stops and when it restores weights.
  int verbose = 0;
  /// "auto" (from the name: losses and errors down, accuracies up), "min" or "max".
  std::string mode = "auto";
  /// Training stops unless the monitored value beats it within `patience` epochs.
  std::optional<double> baseline = std::nullopt;
  /// At the end of training, put back the weights of the best epoch (every weight, bit for bit).
  bool restore_best_weights = false;
  /// Epochs to wait before monitoring.
  int start_from_epoch = 0;
};

/// Keras 3's EarlyStopping: stops fit() when the monitored value has stopped improving.
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {})
      : o_(std::move(options)), maximize_(detail::maximized(o_.monitor, o_.mode, "EarlyStopping")) {
    o_.min_delta = std::abs(o_.min_delta);
  }

  void on_train_begin(const Logs&) override {
    wait_ = 0;
    stopped_epoch_ = 0;
    best_epoch_ = 0;
    best_weights_.reset();
    best_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    warned_ = false;
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    const auto it = logs.find(o_.monitor);
    if (it == logs.end()) {
      warn_missing(logs);
      return;
    }
    if (epoch < o_.start_from_epoch) return;
    const double current = it->second;
    if (o_.restore_best_weights && !best_weights_) {
      best_weights_ = model().get_weights();
      best_epoch_ = epoch;
    }
    ++wait_;
    if (improves(current, best_)) {
      best_ = current;
      best_epoch_ = epoch;
      if (o_.restore_best_weights) best_weights_ = model().get_weights();
      if (!o_.baseline || improves(current, *o_.baseline)) wait_ = 0;
      return;
    }
    if (wait_ >= o_.patience && epoch > 0) {
      stopped_epoch_ = epoch;
      model().stop_training = true;
    }
  }
  void on_train_end(const Logs&) override {
    if (stopped_epoch_ > 0 && o_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping\n";
    if (o_.restore_best_weights && best_weights_) {
      if (o_.verbose > 0) std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << ".\n";
      model().set_weights(*best_weights_);
    }
  }

  /// The epoch (from 0) at which it stopped training, 0 if it did not.
  int stopped_epoch() const { return stopped_epoch_; }
  int best_epoch() const { return best_epoch_; }
  double best() const { return best_; }

 private:
  bool improves(double value, double reference) const {
    return maximize_ ? value - o_.min_delta > reference : value + o_.min_delta < reference;
  }
  void warn_missing(const Logs& logs) {
    if (warned_) return;
    warned_ = true;
    std::string available;
    for (const auto& entry : logs) available += (available.empty() ? "" : ",") + entry.first;
    std::cerr << "Warning: Early stopping conditioned on metric `" << o_.monitor
              << "` which is not available. Available metrics are: " << available << '\n';
  }

  EarlyStoppingOptions o_;
  bool maximize_;
  int wait_ = 0;
  int stopped_epoch_ = 0;
  int best_epoch_ = 0;
  double best_ = 0.0;
  std::optional<std::vector<WeightValue>> best_weights_;
  bool warned_ = false;
};

namespace detail {

/// printf's text of one value, however long (a diverging loss under {loss:.4f} has 70 digits).
template <class T>
std::string printf_text(const std::string& format, T value) {
  const int length = std::snprintf(nullptr, 0, format.c_str(), value);
  if (length < 0) throw std::invalid_argument("ModelCheckpoint: cannot format with '" + format + "'.");
  std::string text(static_cast<std::size_t>(length) + 1, '\0');
  std::snprintf(text.data(), text.size(), format.c_str(), value);
  text.pop_back();
  return text;
}

/// Whether spec is `prefix`, then 1 to 4 digits or none (a width or precision; Python takes more,
/// a path has no use for them), then `type`.
inline bool simple_spec(std::string_view spec, std::string_view prefix, char type, bool digits_required) {
  if (!spec.starts_with(prefix) || spec.size() < prefix.size() + 1 || spec.back() != type) return false;
  const std::string_view digits = spec.substr(prefix.size(), spec.size() - prefix.size() - 1);
  return digits.size() <= 4 && (!digits_required || !digits.empty()) &&
         digits.find_first_not_of("0123456789") == std::string_view::npos;
}

/// Keras' filepath.format(epoch=epoch + 1, **logs) for the fields a checkpoint path uses:
/// {epoch}, {epoch:02d} (any 0Nd / Nd), {key}, {key:.4f} (any .Nf / .Ne) for a log key, and {{
/// and }} for braces; anything else is an error naming the field.
inline std::string checkpoint_path(const std::string& pattern, int epoch, const Logs& logs) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const bool brace = pattern[i] == '{' || pattern[i] == '}';
    const bool doubled = brace && i + 1 < pattern.size() && pattern[i + 1] == pattern[i];
    if (pattern[i] == '}') {
      if (!doubled)
        throw std::invalid_argument("ModelCheckpoint: a single '}' in '" + mixprec::detail::quote_for_message(pattern) +
                                    "' (write '}}' for a brace).");
      out += '}';
      ++i;
      continue;
    }
    if (pattern[i] != '{' || doubled) {
      out += pattern[i];
      i += doubled ? 1 : 0;
      continue;
    }
    const std::size_t close = pattern.find('}', i);
    if (close == std::string::npos)
      throw std::invalid_argument("ModelCheckpoint: an unclosed '{' in '" + mixprec::detail::quote_for_message(pattern) + "'.");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const std::size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    if (name == "epoch") {
      const bool valid = spec.empty() || simple_spec(spec, spec.starts_with('0') ? "0" : "", 'd', false);
      if (!valid)
        throw std::invalid_argument("ModelCheckpoint: '{" + mixprec::detail::quote_for_message(field) +
                                    "}': the epoch takes {epoch} or {epoch:02d} (a width of at most 4 digits).");
      out += printf_text("%" + (spec.empty() ? std::string("d") : spec), epoch + 1);
    } else {
      const auto it = logs.find(name);
      if (it == logs.end())
        throw std::invalid_argument("ModelCheckpoint: the path '" + mixprec::detail::quote_for_message(pattern) + "' names '" + mixprec::detail::quote_for_message(name) +
                                    "', which the epoch's logs do not hold.");
      const bool valid = spec.empty() || simple_spec(spec, ".", 'f', true) || simple_spec(spec, ".", 'e', true);
      if (!valid)
        throw std::invalid_argument("ModelCheckpoint: '{" + mixprec::detail::quote_for_message(field) +
                                    "}': a log value takes {key}, {key:.4f} or {key:.3e} (a precision of at most 4 digits).");
      // Python writes nan, inf and -inf whatever the spec (printf: "-nan" for x86's default NaN).
      const bool plain = spec.empty() || !std::isfinite(it->second);
      out += plain ? python_float(it->second) : printf_text("%" + spec, it->second);
    }
    i = close;
  }
  return out;
}

}  // namespace detail

/// Keras' ModelCheckpoint, saving the model's weights (mixprec's weight file, save_weights) at
/// each epoch's end to filepath, in which {epoch} / {epoch:02d} is the epoch from 1 and {key} a
/// log value. save_best_only: only when the monitored value improves on the best so far (mode
/// "auto": larger is better when the name contains "acc", else smaller, as Keras).
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string filepath, std::string monitor = "val_loss", int verbose = 0,
                           bool save_best_only = false, std::string mode = "auto")
      : filepath_(std::move(filepath)), monitor_(std::move(monitor)), verbose_(verbose), save_best_only_(save_best_only) {
    if (mode != "auto" && mode != "min" && mode != "max")
      throw std::invalid_argument("ModelCheckpoint mode " + mixprec::detail::quote_for_message(mode) + " is unknown; accepted: \"auto\", \"min\", \"max\".");
    maximize_ = mode == "max" || (mode == "auto" && monitor_.find("acc") != std::string::npos);
    best_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }

  /// The best value so far; it carries over to the next fit() (Keras: a resumed run does not
  /// overwrite a better checkpoint).
  double best() const { return best_; }
  void on_epoch_end(int epoch, Logs& logs) override {
    const std::string path = detail::checkpoint_path(filepath_, epoch, logs);
    if (!save_best_only_) {
      save(epoch, path);
      return;
    }
    const auto it = logs.find(monitor_);
    if (it == logs.end()) {
      if (!warned_) std::cerr << "Warning: Can save best model only with " << monitor_ << " available, skipping.\n";
      warned_ = true;
      return;
    }
    const double current = it->second;
    if (maximize_ ? current > best_ : current < best_) {
      if (verbose_ > 0)
        std::cout << "\nEpoch " << epoch + 1 << ": " << monitor_ << " improved from " << fixed5(best_) << " to "
                  << fixed5(current) << ", saving model to " << path << '\n';
      best_ = current;
      save(epoch, path);
    } else if (verbose_ > 0) {
      std::cout << "\nEpoch " << epoch + 1 << ": " << monitor_ << " did not improve from " << fixed5(best_) << '\n';
    }
  }

  /// The paths written, in order.
  const std::vector<std::string>& saved() const { return saved_; }

 private:
  static std::string fixed5(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.5f", v);
    return buffer;
  }
  void save(int epoch, const std::string& path) {
    if (verbose_ > 0 && !save_best_only_) std::cout << "\nEpoch " << epoch + 1 << ": saving model to " << path << '\n';
    model().save_weights(path);
    saved_.push_back(path);
  }

  std::string filepath_, monitor_;
  int verbose_;
  bool save_best_only_;
  bool maximize_ = false;
  double best_ = 0.0;
  bool warned_ = false;
  std::vector<std::string> saved_;
};

/// Keras' LearningRateScheduler: at each epoch's start, sets the optimizer's learning rate to
/// schedule(epoch, current rate) (an optimizer built with a schedule refuses it, as in Keras:
/// fit stops with that error); each epoch's logs get "learning_rate".
class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(std::function<double(int epoch, double learning_rate)> schedule, int verbose = 0)
      : schedule_(std::move(schedule)), verbose_(verbose) {
    if (!schedule_) throw std::invalid_argument("LearningRateScheduler: the schedule is empty.");
  }

  void on_epoch_begin(int epoch, const Logs&) override {
    const double rate = schedule_(epoch, static_cast<double>(model().learning_rate()));
    model().set_learning_rate(rate);
    if (verbose_ > 0)
      std::cout << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to "
                << detail::python_float(rate) << ".\n";
  }
  void on_epoch_end(int, Logs& logs) override { logs["learning_rate"] = static_cast<double>(model().learning_rate()); }

 private:
  std::function<double(int, double)> schedule_;
  int verbose_;
};

}  // namespace mixprec::callbacks
