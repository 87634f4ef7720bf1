// Checkpoints to resume training: a compiled model's weights and everything its training step
// carries from one step to the next, in one file, so that stopping after a step and resuming
// from the file trains to the same bits as training straight through.
//
//   save_checkpoint(model, "run.mpxw");
//   ...                                   // a new process: build and compile the same model
//   load_checkpoint(model, "run.mpxw");   // then train on
//
// The file is a weights file (models/weights_io.hpp; load_weights reads its weights alone) whose
// header also has a "training" section: the optimizer's class and config, its iterations, its
// slots (as weights "optimizer/<weight path>/<slot>", in the variable dtype), the loss scale's
// settings and state (scale, good steps, attempted and skipped counts) under a
// LossScaleOptimizer, and each layer's state beyond its weights (Dropout's generator). Loading
// checks everything first: a corrupted file, another model, another optimizer class or slot set,
// other loss-scale settings or loss scaling on one side only is a std::invalid_argument naming
// the problem, and leaves the model and its optimizer untouched. A float learning rate is
// restored (Keras 3 keeps it in a variable, which a LearningRateScheduler changes); the other
// settings (a learning rate schedule, momentum, betas) are the resuming model's compile()'s.
// The metrics are not saved (train_on_batch and fit reset them before they count).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/models/weights_io.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/training/loss_scale_optimizer.hpp>
#include <mixprec/training/model_training.hpp>
#include <mixprec/training/optimizers.hpp>

namespace mixprec {

/// Writes the model's weights and its training state to `file` (the model must be compiled).
template <class Model>
void save_checkpoint(Model& model, const std::string& file) {
  detail::compiled_model& c = detail::training_entry<Model>::compiled(model);
  optimizers::Optimizer& optimizer = detail::optimizer_of(c);
  std::vector<weight_handle> handles = model.weights();
  const std::vector<weight_handle> slots = optimizer.slot_handles(model.trainable_weights());
  handles.insert(handles.end(), slots.begin(), slots.end());
  const auto* scaled = std::get_if<optimizers::LossScaleOptimizer>(&c.optimizer);
  const nlohmann::ordered_json training = {
      {"optimizer", {{"class_name", optimizer.class_name()}, {"config", optimizer.get_config()}}},
      {"iterations", optimizer.iterations()},
      {"slots", !slots.empty()},
      {"slot_names", optimizer.slot_names()},
      {"loss_scale", scaled ? scaled->state() : nlohmann::ordered_json(nullptr)},
      {"loss_scale_settings", scaled ? scaled->loss_scale().get_config() : nlohmann::ordered_json(nullptr)},
      {"layer_states", model.layer_states()}};
  save_weights(handles, file, training);
}

/// Restores what save_checkpoint wrote into a model built and compiled the same way; all or
/// nothing (see the top of this file).
template <class Model>
void load_checkpoint(Model& model, const std::string& file) {
  detail::compiled_model& c = detail::training_entry<Model>::compiled(model);
  // The optimizer is restored into a copy, which replaces it once everything has loaded.
  detail::compiled_model::any_optimizer restored = c.optimizer;
  optimizers::Optimizer& optimizer = detail::optimizer_of(restored);
  std::vector<std::string> layer_states;
  load_weights(model.weights(), file, [&](const nlohmann::json& training) {
    detail::config_reader section(training, "the checkpoint's training state");
    const auto strings = [&](const char* key) {
      const nlohmann::json& value = section.raw(key);
      const auto is_string = [](const nlohmann::json& item) { return item.is_string(); };
      if (!value.is_array() || !std::all_of(value.begin(), value.end(), is_string))
        section.fail("`" + std::string(key) + "` must be a list of strings. Received: " + detail::shown(value));
      return value.get<std::vector<std::string>>();
    };
    const nlohmann::json& saved_optimizer = section.raw("optimizer");
    if (!saved_optimizer.is_object() || !saved_optimizer.contains("class_name") || !saved_optimizer["class_name"].is_string())
      section.fail("`optimizer` must be an object with a string `class_name`. Received: " + detail::shown(saved_optimizer));
    const std::string& saved_class = saved_optimizer["class_name"].get_ref<const std::string&>();
    if (saved_class != optimizer.class_name())
      throw std::invalid_argument("it was saved with the optimizer " + detail::quote_for_message(saved_class) +
                                  ", but the model is compiled with " + std::string(optimizer.class_name()) + ".");
    // A float learning rate is state, as in Keras 3 (a variable of the optimizer, which callbacks
    // such as LearningRateScheduler change): the saved one is restored. A schedule is a function
    // of the iterations: the resuming compile()'s stays.
    const nlohmann::json* saved_rate = nullptr;
    if (const auto config = saved_optimizer.find("config"); config != saved_optimizer.end() && config->is_object())
      if (const auto rate = config->find("learning_rate"); rate != config->end()) saved_rate = &*rate;
    if (saved_rate == nullptr)
      section.fail("`optimizer` must have a `config` with a `learning_rate`. Received: " + detail::shown(saved_optimizer));
    // Read as compile() would take it; a rate float32 cannot hold would stop the first step.
    const schedules::LearningRate saved = schedules::LearningRate::from_config(*saved_rate);
    if (saved_rate->is_number() && !(saved_rate->get<double>() <= std::numeric_limits<float>::max()))
      section.fail("`learning_rate` must be a float32 number. Received: " + detail::shown(*saved_rate));
    if (saved.is_schedule() != optimizer.learning_rate().is_schedule())
      throw std::invalid_argument(saved.is_schedule()
                                      ? "it was saved with a learning rate schedule, but the model's optimizer has a float rate."
                                      : "it was saved with a float learning rate, but the model's optimizer has a schedule.");
    if (!saved.is_schedule()) optimizer.set_learning_rate(saved);
    const auto slot_names = strings("slot_names");
    const auto expected_slots = optimizer.slot_names();
    if (!std::equal(slot_names.begin(), slot_names.end(), expected_slots.begin(), expected_slots.end()))
      throw std::invalid_argument("its " + saved_class + " keeps the slots " + detail::shown(nlohmann::json(slot_names)) +
                                  ", the model's " + detail::shown(nlohmann::json(expected_slots)) +
                                  " (another momentum or amsgrad setting?).");
    const nlohmann::json& loss_scale = section.raw("loss_scale");
    const nlohmann::json& settings = section.raw("loss_scale_settings");
    auto* scaled = std::get_if<optimizers::LossScaleOptimizer>(&restored);
    if (loss_scale.is_null() != (scaled == nullptr))
      throw std::invalid_argument(loss_scale.is_null()
                                      ? "it was saved without a LossScaleOptimizer (no dynamic loss scale), but the model's optimizer is one."
                                      : "it was saved with a LossScaleOptimizer, but the model's optimizer has none.");
    if (scaled && settings != nlohmann::json(scaled->loss_scale().get_config()))
      throw std::invalid_argument("its loss scale was " + detail::shown(settings) + ", the model's is " +
                                  detail::shown(nlohmann::json(scaled->loss_scale().get_config())) + ".");
    const std::vector<weight_handle> trained = model.trainable_weights();
    const bool built = section.boolean("slots", false);
    optimizer.prepare_restore(trained, built, section.integer("iterations"));
    if (scaled) scaled->restore_state(loss_scale);
    layer_states = strings("layer_states");
    section.finish();
    model.check_layer_states(layer_states);
    return training_state{optimizer.slot_handles(trained), [&] {
                            c.optimizer = std::move(restored);
                            model.restore_layer_states(layer_states);
                          }};
  });
}

}  // namespace mixprec
