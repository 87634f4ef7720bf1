// How a model's compile() / train_on_batch() / test_on_batch() reach the training floor, which
// sits above the models: the models call training_entry<Model>, which training/model_training.hpp
// defines; without that header a call is a compile error that says which header to include. What
// compile() keeps lives in the model behind compiled_state, a type the models floor never looks into.
// fit() / evaluate() / predict() reach training_entry<Model, loop_entry<...>> (training/fit.hpp)
// the same way; their option types are declared here and defined there.
#pragma once

#include <memory>

namespace mixprec {

class AnyTensor;
/// fit()'s options; X and Y are the types of x and y. These types are defined on the training
/// floor (training/fit.hpp): #include <mixprec/training.hpp> to call fit / evaluate / predict.
template <class X = AnyTensor, class Y = AnyTensor>
struct FitOptions;
struct EvaluateOptions;
struct PredictOptions;

}  // namespace mixprec

namespace mixprec::detail {

/// The second argument of training_entry for fit(), evaluate() and predict(): dependent on the
/// call, so that without the training floor the primary template's message is what one sees.
template <class>
struct loop_entry {};

struct compiled_state {
  virtual ~compiled_state() = default;
};

/// The compiled state a model owns. A copy of a model is not compiled (as Keras' clone_model).
class compiled_slot {
 public:
  compiled_slot() = default;
  compiled_slot(const compiled_slot&) {}
  compiled_slot& operator=(const compiled_slot&) {
    state.reset();
    return *this;
  }
  compiled_slot(compiled_slot&&) noexcept = default;
  compiled_slot& operator=(compiled_slot&&) noexcept = default;
  ~compiled_slot() = default;

  std::unique_ptr<compiled_state> state;
};

/// void, spelled so that it depends on T: the models' member templates name
/// training_entry<Model, dependent_void<T>>, which is then looked up only when they are called.
/// (std::void_t<T> is an alias of void itself, which clang resolves when it reads the header:
/// the primary template's static_assert would fire for every program without the training floor.)
template <class T>
struct void_of {
  using type = void;
};
template <class T>
using dependent_void = typename void_of<T>::type;

template <class Model, class = void>
struct training_entry {
  static_assert(sizeof(Model) == 0,
                "compile(), train_on_batch() and test_on_batch() live on the training floor: "
                "#include <mixprec/training.hpp>.");
};

}  // namespace mixprec::detail
