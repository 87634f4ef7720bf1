// GEMM dispatch tables and entry point definitions, the GEMM thread pool and the native bfloat16
// switch (included once, by implementation.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/detail/gemm_native_bf16.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/thread_pool.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(GemmF32);
MIXPREC_KERNELS_EXPORT(GemmBF16ToF32);
MIXPREC_KERNELS_EXPORT(GemmBF16ToBF16);
MIXPREC_KERNELS_EXPORT(GemmBF16F32ToF32);
MIXPREC_KERNELS_EXPORT(GemmF16ToF32);
MIXPREC_KERNELS_EXPORT(GemmF16ToF16);
MIXPREC_KERNELS_EXPORT(GemmF16F32ToF32);
MIXPREC_KERNELS_EXPORT(GemmUsesNativeBF16);

namespace detail {

[[noreturn]] MIXPREC_KERNEL_API void throw_leading_dimension_error(const gemm_operand& operand) {
  const std::string minimum = std::to_string(operand.row_length);
  throw std::invalid_argument("gemm: " + std::string(operand.ld_name) + " = " + std::to_string(operand.ld) +
                              " is too small: " + operand.matrix + " is " + operand.shape + " = " +
                              std::to_string(operand.rows) + " x " + minimum + ", row-major, so " + operand.ld_name +
                              " must be at least " + operand.row_name + " = " + minimum + ".");
}

[[noreturn]] MIXPREC_KERNEL_API void throw_extent_error(const gemm_operand& operand, std::size_t size,
                                                        std::optional<std::size_t> extent) {
  const std::string layout = std::to_string(operand.rows) + " rows " + std::to_string(operand.ld) + " apart, of " +
                             std::to_string(operand.row_length);
  if (!extent)
    throw std::invalid_argument("gemm: " + std::string(operand.ld_name) + " = " + std::to_string(operand.ld) +
                                " is too large: " + operand.matrix + " (" + layout +
                                ") would span more elements than std::size_t counts; " + operand.matrix + " has " +
                                std::to_string(size) + " elements.");
  throw std::invalid_argument("gemm: " + std::string(operand.matrix) + " has " + std::to_string(size) +
                              " elements but needs " + std::to_string(*extent) + " (" + layout + ").");
}

MIXPREC_KERNEL_ENTRY_DEFINITION void gemm(const gemm_problem<float, float, float>& problem) {
  MIXPREC_KERNELS_DISPATCH(GemmF32)(problem);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void gemm(const gemm_problem<bfloat16, bfloat16, float>& problem) {
  MIXPREC_KERNELS_DISPATCH(GemmBF16ToF32)(problem);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void gemm(const gemm_problem<bfloat16, bfloat16, bfloat16>& problem) {
  MIXPREC_KERNELS_DISPATCH(GemmBF16ToBF16)(problem);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void gemm(const gemm_problem<bfloat16, float, float>& problem) {
  MIXPREC_KERNELS_DISPATCH(GemmBF16F32ToF32)(problem);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void gemm(const gemm_problem<float16, float16, float>& problem) {
  MIXPREC_KERNELS_DISPATCH(GemmF16ToF32)(problem);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void gemm(const gemm_problem<float16, float16, float16>& problem) {
  MIXPREC_KERNELS_DISPATCH(GemmF16ToF16)(problem);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void gemm(const gemm_problem<float16, float, float>& problem) {
  MIXPREC_KERNELS_DISPATCH(GemmF16F32ToF32)(problem);
}

struct gemm_pool_setting {
  std::mutex mutex;
  std::shared_ptr<thread_pool> pool;  // null until the first GEMM or set_num_threads
};

inline gemm_pool_setting& gemm_pool() {
  static gemm_pool_setting setting;
  return setting;
}

MIXPREC_KERNEL_API std::shared_ptr<thread_pool> gemm_thread_pool() {
  gemm_pool_setting& setting = gemm_pool();
  std::lock_guard lock(setting.mutex);
  if (!setting.pool) setting.pool = std::make_shared<thread_pool>(0);
  return setting.pool;
}

inline std::atomic<bool>& native_bf16_switch() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

MIXPREC_KERNEL_API bool native_bf16_supported() {
#ifdef MIXPREC_KERNELS_HAVE_NATIVE_BF16
  static const bool supported = native_bf16::cpu_supports();
  return supported;
#else
  return false;
#endif
}

MIXPREC_KERNEL_API void set_native_bf16_enabled(bool enabled) { native_bf16_switch().store(enabled); }
MIXPREC_KERNEL_API bool native_bf16_enabled() { return native_bf16_switch().load(); }
MIXPREC_KERNEL_ENTRY_DEFINITION bool gemm_uses_native_bf16() { return MIXPREC_KERNELS_DISPATCH(GemmUsesNativeBF16)(); }

inline std::atomic<bool>& amx_bf16_switch() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

MIXPREC_KERNEL_API bool amx_bf16_supported() {
#ifdef MIXPREC_KERNELS_HAVE_AMX
  static const bool supported = native_bf16::cpu_supports_amx();
  return supported;
#else
  return false;
#endif
}

MIXPREC_KERNEL_API void set_amx_bf16_enabled(bool enabled) { amx_bf16_switch().store(enabled); }
MIXPREC_KERNEL_API bool amx_bf16_enabled() { return amx_bf16_switch().load(); }
MIXPREC_KERNEL_API bool gemm_uses_amx_bf16() {
  return gemm_uses_native_bf16() && amx_bf16_enabled() && amx_bf16_supported();
}

}  // namespace detail

MIXPREC_KERNEL_API void set_num_threads(std::size_t threads) {
  auto pool = std::make_shared<thread_pool>(threads);
  std::shared_ptr<thread_pool> replaced;
  detail::gemm_pool_setting& setting = detail::gemm_pool();
  {
    std::lock_guard lock(setting.mutex);
    replaced = std::exchange(setting.pool, std::move(pool));
  }
  // `replaced` joins its threads here, unless a running GEMM still holds it.
}

MIXPREC_KERNEL_API std::size_t num_threads() { return detail::gemm_thread_pool()->size(); }

}  // namespace mixprec::kernels
