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
MIXPREC_KERNELS_EXPORT(PackB);
MIXPREC_KERNELS_EXPORT(GemmKernel);

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

inline std::string gemm_kernel_name(gemm_kernel_choice kernel) {
  constexpr const char* kinds[] = {"Highway", "Highway one-vector", "vdpbf16ps", "AMX-BF16"};
  return std::string(hwy::TargetName(kernel.target)) + " " + kinds[static_cast<int>(kernel.kind)];
}

[[noreturn]] MIXPREC_KERNEL_API void throw_packed_b_error(const packed_b_data* packed, gemm_kernel_choice now) {
  if (!packed)
    throw std::invalid_argument("gemm: the packed B is empty (default-constructed or moved from); pack one with "
                                "kernels::pack_b.");
  throw std::invalid_argument("gemm: B was packed for the " + gemm_kernel_name(packed->kernel) +
                              " kernel, but this GEMM would run the " + gemm_kernel_name(now) +
                              " kernel (the target was forced or a kernel switched since it was packed); pack B "
                              "again with kernels::pack_b.");
}

template <class TA, class TB>
packed_b_data pack_b(const pack_b_problem<TB>& problem) {
  return MIXPREC_KERNELS_DISPATCH_FOR(PackB, TA, TB)(problem);
}
template <class TA>
gemm_kernel_choice gemm_kernel(std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH_FOR(GemmKernel, TA)(n);
}
#ifdef MIXPREC_SEPARATE_KERNELS
// Single-TU mode: packing for every (A, B) dtype pair gemm takes.
template packed_b_data pack_b<float, float>(const pack_b_problem<float>&);
template packed_b_data pack_b<bfloat16, bfloat16>(const pack_b_problem<bfloat16>&);
template packed_b_data pack_b<bfloat16, float>(const pack_b_problem<float>&);
template packed_b_data pack_b<float16, float16>(const pack_b_problem<float16>&);
template packed_b_data pack_b<float16, float>(const pack_b_problem<float>&);
template gemm_kernel_choice gemm_kernel<float>(std::size_t);
template gemm_kernel_choice gemm_kernel<bfloat16>(std::size_t);
template gemm_kernel_choice gemm_kernel<float16>(std::size_t);
#endif

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
