#pragma once
/// @file callback.hpp
/// @brief Keras 3's callback protocol: the hooks fit, evaluate and predict call, a Callback value
/// that holds any class with some of them, the list the loops call (with History and the progress
/// bar added as Keras adds them), and those two. The other callbacks are nn/callbacks.hpp's.
///
/// A callback is a small class with the hooks it needs, by Keras's names:
///
///     struct PrintLearningRate {
///       nn::Model* model = nullptr;
///       void set_model(nn::Model& m) { model = &m; }
///       void on_epoch_end(int epoch, nn::Logs& logs) { std::cout << model->optimizer().learning_rate(); }
///     };
///     model.fit(x, y, {.epochs = 3, .callbacks = {PrintLearningRate{}, nn::callbacks::EarlyStopping{}}});
///
/// Hooks: set_model(Model&), set_params(const CallbackParams&), on_train_begin/end(const Logs&),
/// on_epoch_begin(int, const Logs&), on_epoch_end(int, Logs&) (it may add entries, as Keras's
/// ReduceLROnPlateau adds "learning_rate"), on_{train,test,predict}_batch_begin(int64, const Logs&),
/// on_{train,test,predict}_batch_end(int64, const Logs&) (or const BatchLogs&, read only when
/// wanted), on_test_begin/end(const Logs&), on_predict_begin/end(const Logs&). A Callback holds a
/// copy of the class (`callback`), or the object itself (`std::ref(callback)`); copies of a Callback
/// share what they hold, and the library's callbacks share their state between copies (an
/// EarlyStopping passed by value still tells its stopped_epoch).

#include <concepts>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/nn/progress.hpp"

namespace devtensor {
namespace nn {

class Model;

/// What fit returns: the loss of every epoch (Keras's history.history["loss"]) and each compiled
/// metric's (history.history["accuracy"]: `metrics.at("accuracy")`), "val_..." and what callbacks
/// add ("learning_rate").
struct History {
  std::vector<int> epoch;
  std::vector<double> loss;
  std::map<std::string, std::vector<double>> metrics = {};
};

/// Keras's callback.params: what the loop tells its callbacks before it starts.
struct CallbackParams {
  int epochs = 1;
  /// Steps per epoch (batches of evaluate); 0 when unknown.
  std::int64_t steps = 0;
  int verbose = 1;
  /// Where messages and the progress bar go (fit's `out`; nullptr: std::cout), and whether that
  /// is a terminal (unset: detected).
  std::ostream* out = nullptr;
  std::optional<bool> interactive = std::nullopt;
  [[nodiscard]] std::ostream& stream() const { return out ? *out : std::cout; }
};

/// The value named `name` in `logs`, if there is one.
[[nodiscard]] inline std::optional<double> log_value(const Logs& logs, std::string_view name) {
  for (const auto& [key, value] : logs)
    if (key == name) return value;
  return std::nullopt;
}
/// Sets `name` to `value`, added at the end when absent (a Python dict's order).
inline void set_log_value(Logs& logs, std::string_view name, double value) {
  for (auto& [key, v] : logs)
    if (key == name) {
      v = value;
      return;
    }
  logs.emplace_back(std::string(name), value);
}
/// The names of `logs`, joined by "," (what Keras's warnings list as the available metrics).
[[nodiscard]] inline std::string log_names(const Logs& logs) {
  std::string out;
  for (const auto& [key, value] : logs) out += (out.empty() ? "" : ",") + key;
  return out;
}

/// A batch's logs (the running loss and metrics), read from the step's results only when a
/// callback asks: the values may live on a GPU, and Keras reads them only to show them.
class BatchLogs {
 public:
  explicit BatchLogs(std::function<Logs()> read) : read_(std::move(read)) {}
  [[nodiscard]] const Logs& get() const {
    if (!values_) values_ = read_ ? read_() : Logs{};
    return *values_;
  }

 private:
  std::function<Logs()> read_;
  mutable std::optional<Logs> values_;
};

/// Any class with some of Keras's callback hooks (above), as a value fit takes.
class Callback {
 public:
  template <class C>
  requires(!std::same_as<std::remove_cvref_t<C>, Callback> && std::is_class_v<std::remove_cvref_t<C>>)
      Callback(C callback)  // NOLINT: implicit, so that fit({.callbacks = {EarlyStopping{}, Mine{}}}) reads as Keras's
      : self_(std::make_shared<Holder<std::remove_cvref_t<C>>>(std::move(callback))) {}

  /// The held object if it is a T (held by value or by std::ref), else nullptr.
  template <class T>
  [[nodiscard]] T* target() const noexcept {
    return static_cast<T*>(self_->target(typeid(T)));
  }

  void set_model(Model& model) const { self_->set_model(model); }
  void set_params(const CallbackParams& params) const { self_->set_params(params); }
  void on_train_begin(const Logs& logs) const { self_->on_train_begin(logs); }
  void on_train_end(const Logs& logs) const { self_->on_train_end(logs); }
  void on_epoch_begin(int epoch, const Logs& logs) const { self_->on_epoch_begin(epoch, logs); }
  void on_epoch_end(int epoch, Logs& logs) const { self_->on_epoch_end(epoch, logs); }
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) const { self_->on_train_batch_begin(batch, logs); }
  void on_train_batch_end(std::int64_t batch, const BatchLogs& logs) const { self_->on_train_batch_end(batch, logs); }
  void on_test_begin(const Logs& logs) const { self_->on_test_begin(logs); }
  void on_test_end(const Logs& logs) const { self_->on_test_end(logs); }
  void on_test_batch_begin(std::int64_t batch, const Logs& logs) const { self_->on_test_batch_begin(batch, logs); }
  void on_test_batch_end(std::int64_t batch, const BatchLogs& logs) const { self_->on_test_batch_end(batch, logs); }
  void on_predict_begin(const Logs& logs) const { self_->on_predict_begin(logs); }
  void on_predict_end(const Logs& logs) const { self_->on_predict_end(logs); }
  void on_predict_batch_begin(std::int64_t batch, const Logs& logs) const {
    self_->on_predict_batch_begin(batch, logs);
  }
  void on_predict_batch_end(std::int64_t batch, const Logs& logs) const { self_->on_predict_batch_end(batch, logs); }

 private:
  struct Interface {
    virtual ~Interface() = default;
    virtual void* target(const std::type_info& type) noexcept = 0;
    virtual void set_model(Model&) = 0;
    virtual void set_params(const CallbackParams&) = 0;
    virtual void on_train_begin(const Logs&) = 0;
    virtual void on_train_end(const Logs&) = 0;
    virtual void on_epoch_begin(int, const Logs&) = 0;
    virtual void on_epoch_end(int, Logs&) = 0;
    virtual void on_train_batch_begin(std::int64_t, const Logs&) = 0;
    virtual void on_train_batch_end(std::int64_t, const BatchLogs&) = 0;
    virtual void on_test_begin(const Logs&) = 0;
    virtual void on_test_end(const Logs&) = 0;
    virtual void on_test_batch_begin(std::int64_t, const Logs&) = 0;
    virtual void on_test_batch_end(std::int64_t, const BatchLogs&) = 0;
    virtual void on_predict_begin(const Logs&) = 0;
    virtual void on_predict_end(const Logs&) = 0;
    virtual void on_predict_batch_begin(std::int64_t, const Logs&) = 0;
    virtual void on_predict_batch_end(std::int64_t, const Logs&) = 0;
  };

  template <class T>
  struct Unwrapped {
    using type = T;
    static T& get(T& t) { return t; }
  };
  template <class T>
  struct Unwrapped<std::reference_wrapper<T>> {
    using type = T;
    static T& get(std::reference_wrapper<T>& t) { return t.get(); }
  };

  /// Calls `hook` on the object when it has it; the batch-end hooks take BatchLogs or Logs.
  template <class Stored>
  struct Holder final : Interface {
    using C = typename Unwrapped<Stored>::type;
    explicit Holder(Stored s) : stored(std::move(s)) {}
    Stored stored;
    C& self() { return Unwrapped<Stored>::get(stored); }

    void* target(const std::type_info& type) noexcept override {
      return type == typeid(C) ? static_cast<void*>(std::addressof(self())) : nullptr;
    }
    void set_model(Model& model) override {
      if constexpr (requires(C & c) { c.set_model(model); }) self().set_model(model);
    }
    void set_params(const CallbackParams& params) override {
      if constexpr (requires(C & c) { c.set_params(params); }) self().set_params(params);
    }
    void on_train_begin(const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_train_begin(logs); }) self().on_train_begin(logs);
    }
    void on_train_end(const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_train_end(logs); }) self().on_train_end(logs);
    }
    void on_epoch_begin(int epoch, const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_epoch_begin(epoch, logs); }) self().on_epoch_begin(epoch, logs);
    }
    void on_epoch_end(int epoch, Logs& logs) override {
      if constexpr (requires(C & c) { c.on_epoch_end(epoch, logs); }) self().on_epoch_end(epoch, logs);
    }
    void on_train_batch_begin(std::int64_t batch, const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_train_batch_begin(batch, logs); }) self().on_train_batch_begin(batch, logs);
    }
    void on_train_batch_end(std::int64_t batch, const BatchLogs& logs) override {
      if constexpr (requires(C & c) { c.on_train_batch_end(batch, logs); })
        self().on_train_batch_end(batch, logs);
      else if constexpr (requires(C & c, const Logs& l) { c.on_train_batch_end(batch, l); })
        self().on_train_batch_end(batch, logs.get());
    }
    void on_test_begin(const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_test_begin(logs); }) self().on_test_begin(logs);
    }
    void on_test_end(const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_test_end(logs); }) self().on_test_end(logs);
    }
    void on_test_batch_begin(std::int64_t batch, const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_test_batch_begin(batch, logs); }) self().on_test_batch_begin(batch, logs);
    }
    void on_test_batch_end(std::int64_t batch, const BatchLogs& logs) override {
      if constexpr (requires(C & c) { c.on_test_batch_end(batch, logs); })
        self().on_test_batch_end(batch, logs);
      else if constexpr (requires(C & c, const Logs& l) { c.on_test_batch_end(batch, l); })
        self().on_test_batch_end(batch, logs.get());
    }
    void on_predict_begin(const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_predict_begin(logs); }) self().on_predict_begin(logs);
    }
    void on_predict_end(const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_predict_end(logs); }) self().on_predict_end(logs);
    }
    void on_predict_batch_begin(std::int64_t batch, const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_predict_batch_begin(batch, logs); })
        self().on_predict_batch_begin(batch, logs);
    }
    void on_predict_batch_end(std::int64_t batch, const Logs& logs) override {
      if constexpr (requires(C & c) { c.on_predict_batch_end(batch, logs); }) self().on_predict_batch_end(batch, logs);
    }
  };

  std::shared_ptr<Interface> self_;
};

namespace callbacks {

/// Records every epoch's logs (Keras's History, which fit adds when the callbacks have none):
/// what fit returns. Copies share the record.
class History {
 public:
  /// The epochs and their logs so far ("loss", then each metric and "val_..." by name).
  [[nodiscard]] const nn::History& history() const noexcept { return *record_; }
  void on_train_begin(const Logs&);
  void on_epoch_end(int epoch, const Logs& logs);

 private:
  std::shared_ptr<nn::History> record_ = std::make_shared<nn::History>();
};

/// The progress bar and the "Epoch 3/10" lines (progress.hpp; Keras's ProgbarLogger, which fit and
/// evaluate add when the callbacks have none and verbose is not 0). Inside fit the validation is
/// silent; "Epoch i/n" is printed only for more than one epoch, as Keras 3 does.
class ProgbarLogger {
 public:
  ProgbarLogger();
  void set_params(const CallbackParams& params);
  void on_train_begin(const Logs&);
  void on_epoch_begin(int epoch, const Logs&);
  void on_train_batch_end(std::int64_t batch, const BatchLogs& logs);
  void on_epoch_end(int, const Logs& logs);
  void on_test_begin(const Logs&);
  void on_test_batch_end(std::int64_t batch, const BatchLogs& logs);
  void on_test_end(const Logs& logs);

 private:
  struct State;
  std::shared_ptr<State> state_;
  void start();
  void update(std::int64_t batch, const BatchLogs& logs);
  void finish(const Logs& logs);
};

/// A callback of functions (Keras's LambdaCallback): each hook that is set is called.
struct LambdaCallback {
  std::function<void(int, const Logs&)> on_epoch_begin_fn = nullptr;
  std::function<void(int, Logs&)> on_epoch_end_fn = nullptr;
  std::function<void(std::int64_t, const Logs&)> on_train_batch_begin_fn = nullptr;
  std::function<void(std::int64_t, const Logs&)> on_train_batch_end_fn = nullptr;
  std::function<void(const Logs&)> on_train_begin_fn = nullptr;
  std::function<void(const Logs&)> on_train_end_fn = nullptr;

  void on_epoch_begin(int epoch, const Logs& logs) const;
  void on_epoch_end(int epoch, Logs& logs) const;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) const;
  void on_train_batch_end(std::int64_t batch, const BatchLogs& logs) const;
  void on_train_begin(const Logs& logs) const;
  void on_train_end(const Logs& logs) const;
};

}  // namespace callbacks

namespace callback_detail {

/// The callbacks a loop calls, in order, with Keras's defaults added at the end: a History (fit)
/// and a ProgbarLogger (verbose != 0) unless the list has one.
class CallbackList {
 public:
  CallbackList(std::vector<Callback> callbacks, bool add_history, bool add_progbar, Model* model,
               const CallbackParams& params);
  /// The History the list records into (fit's).
  [[nodiscard]] const nn::History& history() const { return history_->history(); }

  template <class Hook, class... Args>
  void each(Hook hook, Args&&... args) const {
    for (const auto& c : callbacks_) (c.*hook)(args...);
  }

 private:
  std::vector<Callback> callbacks_;
  std::optional<callbacks::History> history_;
};

}  // namespace callback_detail

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.
// (Out of line even when short: each instantiates templates a user's translation unit need not.)

DEVTENSOR_DEFINITION void callbacks::History::on_train_begin(const Logs&) { record_->epoch.clear(); }

DEVTENSOR_DEFINITION void callbacks::History::on_epoch_end(int epoch, const Logs& logs) {
  record_->epoch.push_back(epoch);
  for (const auto& [name, value] : logs) {
    if (name == "loss")
      record_->loss.push_back(value);
    else
      record_->metrics[name].push_back(value);
  }
}

struct callbacks::ProgbarLogger::State {
  CallbackParams params;
  std::optional<ProgressBar> bar;
  std::int64_t seen = 0;
  bool in_fit = false;
};

DEVTENSOR_DEFINITION callbacks::ProgbarLogger::ProgbarLogger() : state_(std::make_shared<State>()) {}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::set_params(const CallbackParams& params) {
  state_->params = params;
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::on_train_begin(const Logs&) { state_->in_fit = true; }
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::on_epoch_begin(int epoch, const Logs&) {
  start();
  const auto& p = state_->params;
  if (p.verbose && p.epochs > 1) p.stream() << "Epoch " << epoch + 1 << "/" << p.epochs << "\n" << std::flush;
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::on_train_batch_end(std::int64_t batch, const BatchLogs& logs) {
  update(batch, logs);
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::on_epoch_end(int, const Logs& logs) { finish(logs); }
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::on_test_begin(const Logs&) {
  if (!state_->in_fit) start();
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::on_test_batch_end(std::int64_t batch, const BatchLogs& logs) {
  if (!state_->in_fit) update(batch, logs);
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::on_test_end(const Logs& logs) {
  if (!state_->in_fit) finish(logs);
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::start() {
  const auto& p = state_->params;
  state_->bar.emplace(p.steps, p.verbose, &p.stream(), p.interactive);
  state_->seen = 0;
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::update(std::int64_t batch, const BatchLogs& logs) {
  state_->seen = batch + 1;
  if (state_->bar && state_->bar->will_draw(state_->seen)) state_->bar->update(state_->seen, logs.get());
}
DEVTENSOR_DEFINITION void callbacks::ProgbarLogger::finish(const Logs& logs) {
  if (state_->bar) state_->bar->finish(state_->seen, logs);
  state_->bar.reset();
}

DEVTENSOR_DEFINITION void callbacks::LambdaCallback::on_epoch_begin(int epoch, const Logs& logs) const {
  if (on_epoch_begin_fn) on_epoch_begin_fn(epoch, logs);
}
DEVTENSOR_DEFINITION void callbacks::LambdaCallback::on_epoch_end(int epoch, Logs& logs) const {
  if (on_epoch_end_fn) on_epoch_end_fn(epoch, logs);
}
DEVTENSOR_DEFINITION void callbacks::LambdaCallback::on_train_batch_begin(std::int64_t batch, const Logs& logs) const {
  if (on_train_batch_begin_fn) on_train_batch_begin_fn(batch, logs);
}
DEVTENSOR_DEFINITION void callbacks::LambdaCallback::on_train_batch_end(std::int64_t batch,
                                                                        const BatchLogs& logs) const {
  if (on_train_batch_end_fn) on_train_batch_end_fn(batch, logs.get());
}
DEVTENSOR_DEFINITION void callbacks::LambdaCallback::on_train_begin(const Logs& logs) const {
  if (on_train_begin_fn) on_train_begin_fn(logs);
}
DEVTENSOR_DEFINITION void callbacks::LambdaCallback::on_train_end(const Logs& logs) const {
  if (on_train_end_fn) on_train_end_fn(logs);
}

DEVTENSOR_DEFINITION callback_detail::CallbackList::CallbackList(std::vector<Callback> callbacks, bool add_history,
                                                                 bool add_progbar, Model* model,
                                                                 const CallbackParams& params)
    : callbacks_(std::move(callbacks)) {
  for (const auto& c : callbacks_) {
    if (auto* h = c.target<callbacks::History>()) history_ = *h;
    if (c.target<callbacks::ProgbarLogger>()) add_progbar = false;
  }
  if (add_history && !history_) {
    history_ = callbacks::History{};
    callbacks_.emplace_back(*history_);
  }
  if (add_progbar) callbacks_.emplace_back(callbacks::ProgbarLogger{});
  for (const auto& c : callbacks_) {
    if (model) c.set_model(*model);
    c.set_params(params);
  }
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS
}  // namespace nn
}  // namespace devtensor
